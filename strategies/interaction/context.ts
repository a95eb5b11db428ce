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

/**
 * At least {@link contextBytes}, without writing the JSON: each UTF-16 unit of a string takes at most
 * 6 bytes of it (a `\uXXXX` escape; an unescaped unit is at most 3), a number fewer than 32 characters.
 * A context far below its bound (the usual case) is then not serialised at each model call.
 */
export function contextBytesBound(system: string, messages: readonly ChatMessage[]): number {
  return jsonBytesBound(messages) + (system === '' ? 0 : jsonBytesBound({ role: 'system', content: system }) + 1);
}

/** True when the messages a model call sends fit in `maxBytes`: the bound first, the exact size only when the bound does not fit. */
export function contextFits(system: string, messages: readonly ChatMessage[], maxBytes: number): boolean {
  return contextBytesBound(system, messages) <= maxBytes || contextBytes(system, messages) <= maxBytes;
}

function jsonBytesBound(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return 2 + 6 * value.length;
    case 'number':
      return 32;
    case 'boolean':
      return 5;
    case 'object': {
      if (value === null) return 4;
      let bytes = 2;
      if (Array.isArray(value)) {
        for (const item of value) bytes += jsonBytesBound(item) + 1;
      } else {
        for (const [name, member] of Object.entries(value)) bytes += jsonBytesBound(name) + jsonBytesBound(member) + 2;
      }
      return bytes;
    }
    default:
      // undefined (an omitted member, or null in an array) and anything JSON leaves out.
      return 4;
  }
}

export type Reduced = { readonly ok: true; readonly messages: readonly ChatMessage[]; readonly dropped: number } | { readonly ok: false; readonly bytes: number };

export function reduceContext(system: string, messages: readonly ChatMessage[], maxBytes: number): Reduced {
  if (contextBytesBound(system, messages) <= maxBytes) return { ok: true, messages, dropped: 0 };
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
