import { ClassifiedError } from '../../src/kernel/classified-error.js';
import { WaitId } from '../../src/kernel/identity.js';
import type { Signal } from '../../src/kernel/signal.js';
import { invalidState, isWaitOpening } from '../internal/machine.js';

/**
 * What the coordination Definitions share: the protocol sentinel and the small state readers their
 * `check`s use. A Step that meets a window its own phase cannot have produced (a missing opening, a
 * settlement where an answer belongs, a second answer) throws an error wrapping
 * {@link protocolInvalid}; the Engine records it as the contract failure
 * `coordination.protocol.invalid`. Errors of user code (a FirstSuccess predicate) are never wrapped,
 * so they keep their own classification (an execution failure by default).
 */
export const protocolInvalid = new ClassifiedError('contract', 'coordination.protocol.invalid', 'invalid coordination protocol');

/** Throws the protocol error for `problem` (never returns). */
export function protocolError(problem: string): never {
  throw protocolInvalid.wrap(problem);
}

/** The JSON object a payload decodes to, or undefined. */
export function recordOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** A WaitId member of a decoded state, as text (checked). */
export function stateWaitId(kind: string, record: Record<string, unknown>, member: string): string {
  const value = record[member];
  if (typeof value !== 'string') throw invalidState(kind, `${member} must be a wait id`);
  try {
    WaitId.parse(value);
  } catch {
    throw invalidState(kind, `${member} is not a wait id`);
  }
  return value;
}

/** The WaitId a `wait` / `wait_children` opening delivers, or undefined when `signal` is not one. */
export function openedWait(signal: Signal | undefined): WaitId | undefined {
  return signal !== undefined && isWaitOpening(signal) ? signal.waitId : undefined;
}
