import type { ChatMessage } from './model-wire.js';

/**
 * The context reducer: keeps what the model is sent within `maxContextBytes` by replacing the
 * OLDEST tool results with a short placeholder, one at a time, until the context fits. User and
 * assistant text (and the task) are never touched: they are what the conversation is about, while
 * an old tool result is usually spent evidence the model already reasoned over. When even every
 * tool result dropped does not make it fit, the caller fails the Process (`context_too_large`).
 *
 * The size is the UTF-8 length of the JSON of the messages as sent (system prompt first), so it is
 * a pure function of the state.
 */
export const droppedToolResult = '[tool result dropped to fit the context]';

/** The bytes of the messages a model call sends (the system prompt first, when there is one). */
export function contextBytes(system: string, messages: readonly ChatMessage[]): number {
  const sent = system === '' ? messages : [{ role: 'system', content: system }, ...messages];
  // JSON.stringify escapes lone surrogates, so its text is well-formed and byteLength is exact.
  return Buffer.byteLength(JSON.stringify(sent), 'utf8');
}

export type Reduced = { readonly ok: true; readonly messages: readonly ChatMessage[]; readonly dropped: number } | { readonly ok: false; readonly bytes: number };

export function reduceContext(system: string, messages: readonly ChatMessage[], maxBytes: number): Reduced {
  const reduced = [...messages];
  let dropped = 0;
  let bytes = contextBytes(system, reduced);
  for (let index = 0; index < reduced.length && bytes > maxBytes; index += 1) {
    const message = reduced[index] as ChatMessage;
    if (message.role !== 'tool' || message.content === droppedToolResult) continue;
    reduced[index] = { ...message, content: droppedToolResult };
    dropped += 1;
    bytes = contextBytes(system, reduced);
  }
  return bytes <= maxBytes ? { ok: true, messages: reduced, dropped } : { ok: false, bytes };
}
