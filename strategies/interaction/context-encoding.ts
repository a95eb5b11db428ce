import { Payload } from '../../src/kernel/payload.js';
import type { ChatMessage } from './model-wire.js';

/**
 * The context's canonical text, re-encoded only where a Step changed it.
 *
 * Every Step snapshots the whole state, and the context (every message so far) is nearly all of it.
 * Encoding it afresh each time made a turn's cost grow with the conversation. Instead, a context array
 * the loop builds by appending to another ({@link extended}) is encoded as its base's text joined with
 * its new messages' text (`Payload.concatArrays`), and a context restored from a payload this module
 * encoded takes that payload's text back. The bytes are exactly `Payload.encode(messages)`: canonical
 * text is compositional, and a restored context is the lossless decoding of the text it reuses
 * (`chatMessages` keeps every member of a valid message).
 *
 * Context arrays are never mutated once built (their type is readonly), which is what makes a text
 * remembered for an array stay true. Entries are weak: a context no Execution holds is forgotten.
 */
const texts = new WeakMap<readonly ChatMessage[], Payload>();
const extensions = new WeakMap<readonly ChatMessage[], { readonly base: readonly ChatMessage[]; readonly added: readonly ChatMessage[] }>();
/** The context payload each state payload embeds, for states this module encoded. */
const embedded = new WeakMap<Payload, Payload>();

/** `base` followed by `added`, as a new array whose text reuses `base`'s (`base` itself when nothing is added). */
export function extended(base: readonly ChatMessage[], added: readonly ChatMessage[]): readonly ChatMessage[] {
  if (added.length === 0) return base;
  const messages = [...base, ...added];
  extensions.set(messages, { base, added });
  return messages;
}

/** The canonical payload of a context: `Payload.encode(messages)`, reusing the texts of what it extends. */
export function contextPayload(messages: readonly ChatMessage[]): Payload {
  let payload = texts.get(messages);
  if (payload !== undefined) return payload;
  const extension = extensions.get(messages);
  payload = extension === undefined ? Payload.encode(messages) : Payload.concatArrays([contextPayload(extension.base), Payload.encode(extension.added)]);
  texts.set(messages, payload);
  return payload;
}

/** Encodes a state whose `messages` member is a context: the context's text is spliced in, not re-encoded. */
export function encodeWithContext<S extends { readonly messages: readonly ChatMessage[] }>(state: S): Payload {
  const context = contextPayload(state.messages);
  const payload = Payload.encode({ ...state, messages: context });
  embedded.set(payload, context);
  return payload;
}

/**
 * Tells this module that `restored` is the context decoded (and checked) from `payload`: when `payload`
 * is a state {@link encodeWithContext} made, the context's text is known without encoding it.
 */
export function restoredContext(payload: Payload, restored: readonly ChatMessage[]): void {
  const context = embedded.get(payload);
  if (context !== undefined) texts.set(restored, context);
}
