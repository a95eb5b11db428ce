import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';

/**
 * The complete common lifecycle state of a Process. Strategy-specific conditions (such as a
 * planning strategy finding no plan) never add statuses.
 *
 * - `running`: schedulable.
 * - `waiting`: awaiting a Signal addressed to its current WaitID, without an explicit pause.
 * - `paused`: explicitly paused; it may still retain an unanswered wait.
 * - `completed`, `failed`, `canceled`, `timed_out`, `killed`: terminal, see `isTerminalStatus`.
 */
export type Status = 'running' | 'waiting' | 'paused' | 'completed' | 'failed' | 'canceled' | 'timed_out' | 'killed';

export const statusValues: readonly Status[] = Object.freeze([
  'running',
  'waiting',
  'paused',
  'completed',
  'failed',
  'canceled',
  'timed_out',
  'killed',
]);

export type TerminalStatus = Extract<Status, 'completed' | 'failed' | 'canceled' | 'timed_out' | 'killed'>;

export const terminalStatusValues: readonly TerminalStatus[] = Object.freeze([
  'completed',
  'failed',
  'canceled',
  'timed_out',
  'killed',
]);

export function isStatus(value: unknown): value is Status {
  return typeof value === 'string' && (statusValues as readonly string[]).includes(value);
}

export function parseStatus(value: unknown): Status {
  if (!isStatus(value)) throw new KernelError(ErrorCode.invalidStatus, `invalid status: ${describe(value)}`);
  return value;
}

/** True for the five statuses a Process never leaves once committed. */
export function isTerminalStatus(status: Status): status is TerminalStatus {
  return (terminalStatusValues as readonly string[]).includes(status);
}
