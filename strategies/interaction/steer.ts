import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import { type Signal, SignalRequest } from '../../src/kernel/signal.js';
import { isUnaddressedInput } from '../internal/machine.js';

/**
 * Steering: a person (or a parent, via `signal_child`) adds a user message to a running
 * interaction. The signal is unaddressed input, `{"steer":"<text>"}`, admitted through the
 * mailbox against the interaction's signal schema (anything else is refused before it is
 * recorded). The interaction keeps it in its state and adds it, as a user message, at the next
 * safe model boundary: right before its next model call, never in the middle of a tool batch
 * (the model would otherwise see results of calls it no longer remembers making).
 */
export const maxSteerBytes = 4096;
/** Steers received and not yet applied; beyond it the Process fails (`interaction.steer.too_many`). */
export const maxPendingSteers = 64;

export const steerSignalSchema = Schema.of({
  type: 'object',
  properties: { steer: { type: 'string', minLength: 1, maxLength: maxSteerBytes, pattern: '\\S' } },
  required: ['steer'],
  additionalProperties: false,
});

/** The steer text of an admitted steer signal, or undefined for any other signal. */
export function steerOf(signal: Signal): string | undefined {
  if (!isUnaddressedInput(signal)) return undefined;
  const body = signal.payload.decode<unknown>();
  const steer = typeof body === 'object' && body !== null ? (body as { steer?: unknown }).steer : undefined;
  return typeof steer === 'string' ? steer : undefined;
}

/** A steer for `Process.deliverSignals` or a parent's `Effect.signalChild` (the id makes it idempotent). */
export function steerRequest(id: string, message: string): SignalRequest {
  return SignalRequest.create({ id, payload: Payload.encode({ steer: message }) });
}
