import { invalidState, statePhase, stateRecord } from '../internal/machine.js';
import type { ControlReceipt, DecisionMode, Task } from './schemas.js';

/**
 * The collaboration's ExecutionState: everything a Step reads, so Snapshot → Restore is exact.
 *
 * - `phase`: which Engine frames the next window holds — `init` (none), `turn_starting` (the turn's
 *   start receipt), `watch_opening` (the watch's opening, perhaps followed by its answer),
 *   `watching` (the watch's answer), `acting` (the Decision's receipts, in `pending` order),
 *   `completing` (the cancel receipts of a `complete` Decision).
 * - `turn`: the number of the latest turn started (0 before the first).
 * - `state`: the working state (the input, then each Decision's).
 * - `tasks`: every task requested so far, with its start and drained outcome once known.
 * - `controls`: the receipts the next Turn reports (the latest Decision's controls).
 * - `attempts`: start attempts so far (what `maxTasks` bounds; an Engine-rejected start counts).
 * - `watches`: how many watches were opened (each gets its own wait key).
 * - `turnChild`: the running turn's Process; `watch`: the open watch's WaitId.
 * - `pending`: what each receipt of the batch in flight settles, in declaration order.
 * - `unseen`: facts recorded since the latest Turn was built (outcomes observed, failed starts):
 *   with nothing outstanding, a `wait` turns into the next turn only when there are any.
 * - `mode`: while `acting`, the Decision's mode.
 * - `output`: while `completing`, the output to complete with.
 */
export const collaborationStateKind = 'collaboration.state';

export type Phase = 'init' | 'turn_starting' | 'watch_opening' | 'watching' | 'acting' | 'completing';
const phases: readonly Phase[] = ['init', 'turn_starting', 'watch_opening', 'watching', 'acting', 'completing'];

/** What one receipt of the batch in flight settles: a task start, a control, or a completion cancel. */
export type Pending = { readonly task: number } | { readonly control: number } | { readonly cancel: string };

export interface CollaborationState {
  readonly phase: Phase;
  readonly turn: number;
  readonly state: unknown;
  readonly tasks: readonly Task[];
  readonly controls: readonly ControlReceipt[];
  readonly attempts: number;
  readonly watches: number;
  readonly unseen: number;
  readonly pending: readonly Pending[];
  readonly turnChild?: string;
  readonly watch?: string;
  readonly mode?: Exclude<DecisionMode, 'complete'>;
  readonly output?: unknown;
}

const kind = collaborationStateKind;

function count(record: Record<string, unknown>, member: string): number {
  const value = record[member];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalidState(kind, `${member} must be a non-negative integer`);
  return value;
}

function list(record: Record<string, unknown>, member: string): unknown[] {
  const value = record[member];
  if (!Array.isArray(value)) throw invalidState(kind, `${member} must be an array`);
  return value;
}

function objectItems(member: string, items: unknown[], required: string): void {
  for (const item of items) {
    if (typeof item !== 'object' || item === null || Array.isArray(item) || !Object.hasOwn(item, required)) {
      throw invalidState(kind, `every ${member} entry is an object with ${required}`);
    }
  }
}

/** Validates a decoded state: members, types, and the invariants each phase relies on. */
export function checkState(value: unknown): CollaborationState {
  const record = stateRecord(
    kind,
    value,
    ['phase', 'turn', 'state', 'tasks', 'controls', 'attempts', 'watches', 'unseen', 'pending'],
    ['turnChild', 'watch', 'mode', 'output'],
  );
  const phase = statePhase(kind, record, phases);
  const turn = count(record, 'turn');
  const tasks = list(record, 'tasks');
  objectItems('tasks', tasks, 'request');
  const controls = list(record, 'controls');
  objectItems('controls', controls, 'control');
  const attempts = count(record, 'attempts');
  if (attempts > tasks.length) throw invalidState(kind, 'attempts cannot exceed the tasks');
  count(record, 'watches');
  const pending = list(record, 'pending');
  for (const entry of pending) {
    const item = entry as Record<string, unknown>;
    const ok =
      typeof entry === 'object' && entry !== null && Object.keys(item).length === 1 &&
      ((typeof item.task === 'number' && Number.isSafeInteger(item.task) && item.task >= 0 && item.task < tasks.length) ||
        (typeof item.control === 'number' && Number.isSafeInteger(item.control) && item.control >= 0 && item.control < controls.length) ||
        typeof item.cancel === 'string');
    if (!ok) throw invalidState(kind, 'every pending entry names one task, control or cancel');
  }
  for (const member of ['turnChild', 'watch'] as const) {
    if (record[member] !== undefined && typeof record[member] !== 'string') throw invalidState(kind, `${member} must be a string`);
  }
  if (record.mode !== undefined && record.mode !== 'continue' && record.mode !== 'wait') throw invalidState(kind, 'mode must be continue or wait');
  count(record, 'unseen');
  // What each phase needs to read its window.
  if (phase === 'init' && turn !== 0) throw invalidState(kind, 'init precedes the first turn');
  if (phase !== 'init' && turn === 0) throw invalidState(kind, `${phase} follows a started turn`);
  if (phase === 'watching' && record.watch === undefined) throw invalidState(kind, 'watching needs the watch');
  if ((phase === 'acting' || phase === 'completing') !== (pending.length > 0)) throw invalidState(kind, 'only acting and completing have receipts pending');
  if (phase === 'acting' && record.mode === undefined) throw invalidState(kind, 'acting needs the decision mode');
  if (phase === 'completing' && !Object.hasOwn(record, 'output')) throw invalidState(kind, 'completing needs the output');
  if (phase === 'completing' && pending.some((entry) => typeof (entry as { cancel?: unknown }).cancel !== 'string')) {
    throw invalidState(kind, 'completing waits for cancel receipts only');
  }
  if (phase === 'acting' && pending.some((entry) => typeof (entry as { cancel?: unknown }).cancel === 'string')) {
    throw invalidState(kind, 'acting waits for task and control receipts only');
  }
  return record as unknown as CollaborationState;
}
