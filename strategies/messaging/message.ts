import { CapabilitySet } from '../../src/kernel/capability.js';
import { sha256Hex } from '../../src/kernel/digest.js';
import { Effect } from '../../src/kernel/effect.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { type EffectId, ProcessId, SignalId, WaitId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { SignalRequest } from '../../src/kernel/signal.js';

/**
 * Cross-tree messaging (contract §7): a Message is intermediate input for one Process of another
 * tree, delivered by an ordinary dispatcher Effect. The Step only declares it; the messaging
 * dispatcher (src/server/dispatchers/messaging.ts) hands it to a Host-authorised delivery port.
 *
 * Wire (the Effect's payload): `{"recipient": "<process id>", "wait_id"?: "<wait id>", "payload": <json>}`,
 * exactly these members. One recipient per Effect: a fan-out is one Effect per recipient, each
 * settled (and acknowledged) on its own.
 *
 * Determinism: everything here is a pure function of its arguments.
 */

/** The capability a sending Process must hold (declared by {@link messageEffect}, checked again by the port). */
export const sendCapability = 'scope.messaging.send';

/** The SignalId namespace of delivered messages. */
export const messageSignalPrefix = 'signal:message:sha256:';

export interface Message {
  readonly recipient: ProcessId;
  /** Addresses the recipient's current wait; absent: unaddressed input (its signal schema applies). */
  readonly waitId?: WaitId;
  readonly payload: Payload;
}

/** Builds a Message from loosely typed members; rejections are `invalid_effect`. */
export function message(config: { recipient: ProcessId | string; waitId?: WaitId | string; payload: Payload | unknown }): Message {
  const recipient = config.recipient instanceof ProcessId ? config.recipient : parseMember(() => ProcessId.parse(config.recipient), 'recipient');
  const waitId =
    config.waitId === undefined ? undefined : config.waitId instanceof WaitId ? config.waitId : parseMember(() => WaitId.parse(config.waitId), 'wait_id');
  const payload = config.payload instanceof Payload ? config.payload : parseMember(() => Payload.encode(config.payload), 'payload');
  return Object.freeze(waitId === undefined ? { recipient, payload } : { recipient, waitId, payload });
}

/** The wire JSON of a Message (what the Effect carries). */
export function messageWire(value: Message): Record<string, unknown> {
  const wire: Record<string, unknown> = { recipient: value.recipient.toString(), payload: value.payload.decode<unknown>() };
  if (value.waitId !== undefined) wire.wait_id = value.waitId.toString();
  return wire;
}

/**
 * The dispatcher Effect that delivers `value`. It requires {@link sendCapability}, so a Process
 * without it fails at preparation (`engine.capability.denied`) before anything is dispatched.
 */
export function messageEffect(value: Message): Effect {
  return Effect.dispatcher(Payload.encode(messageWire(value)), CapabilitySet.of([sendCapability]));
}

/** A decoded Message, or why the Effect's payload is not one. */
export type DecodedMessage = { readonly ok: true; readonly message: Message } | { readonly ok: false; readonly problem: string };

/** Strictly decodes an Effect payload into a Message (no member repaired, none unknown). */
export function decodeMessage(payload: Payload): DecodedMessage {
  const value = payload.decode<unknown>();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return refused('a message is a JSON object {recipient, wait_id?, payload}');
  const record = value as Record<string, unknown>;
  for (const name of Object.keys(record)) {
    if (name !== 'recipient' && name !== 'wait_id' && name !== 'payload') return refused(`unknown member ${JSON.stringify(name)}`);
  }
  if (!Object.hasOwn(record, 'payload')) return refused('missing member "payload"');
  if (typeof record.recipient !== 'string') return refused('recipient must be a process id');
  if (Object.hasOwn(record, 'wait_id') && typeof record.wait_id !== 'string') return refused('wait_id must be a wait id');
  try {
    return { ok: true, message: message({ recipient: record.recipient, waitId: record.wait_id as string | undefined, payload: record.payload }) };
  } catch (error) {
    return refused(error instanceof Error ? error.message : String(error));
  }
}

/**
 * The delivery identity of the message an Effect sends: `signal:message:sha256:<hex(sha256(effect id))>`.
 * A replay of the Effect (same EffectId, after a restore or an explicit replay) delivers under the
 * same SignalId, so the recipient's mailbox deduplicates it.
 */
export function messageSignalId(effect: EffectId): SignalId {
  return SignalId.parseExternal(messageSignalPrefix + sha256Hex(effect.toString()));
}

/** The recipient's signal request for `value` sent by the Effect `effect`. */
export function messageSignalRequest(effect: EffectId, value: Message): SignalRequest {
  return SignalRequest.create({ id: messageSignalId(effect), waitId: value.waitId, payload: value.payload });
}

function refused(problem: string): DecodedMessage {
  return { ok: false, problem };
}

function parseMember<T>(parse: () => T, member: string): T {
  try {
    return parse();
  } catch (error) {
    throw new KernelError(ErrorCode.invalidEffect, `invalid message: ${member}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}
