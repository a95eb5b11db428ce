import { Failure, isFailureKind } from '../../src/kernel/failure.js';
import { isQualifiedName, ProcessId, WaitId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import type { Schema } from '../../src/kernel/schema.js';
import { invalidState, stateInteger, stateRecord } from '../internal/machine.js';
import type { FanoutStage, Json, Stage } from './stages.js';

/**
 * The workflow's recoverable state (kernel-contract §6.1), on the wire in the contract's snake_case:
 *
 * `{"stage_index","current_value","selected_case_id"?,"child"?,"fanout_wait_id"?,
 *   "active_fanout_window":[{"child_process_id"?,"failure"?}],"completed_fanout_outputs":[…],"loop_iteration"}`
 *
 * - `current_value` is the value the current stage began with (the workflow's output once every
 *   stage ran); a loop replaces it after each iteration.
 * - `child` is the one child of a call, switch or loop stage: `{}` once its start is declared,
 *   `{"process_id"}` once it started, `{"process_id","wait_id"}` once its wait opened.
 * - `active_fanout_window` has one entry per child of the fork or map window in flight: all empty
 *   while the window's starts are declared, then each holds the started child's id or its start
 *   failure. `completed_fanout_outputs` holds the outputs of the windows already drained.
 *
 * The phase is derived from these members ({@link phaseOf}), never stored, so a state cannot say
 * one phase and hold the members of another.
 */
export const workflowStateKind = 'workflow.state';

export interface WindowEntry {
  readonly child_process_id?: string;
  readonly failure?: { readonly kind: string; readonly code: string; readonly message: string };
}

export interface ChildRecord {
  readonly process_id?: string;
  readonly wait_id?: string;
}

export interface WorkflowState {
  readonly stage_index: number;
  readonly current_value: Json;
  readonly selected_case_id?: string;
  readonly child?: ChildRecord;
  readonly fanout_wait_id?: string;
  readonly active_fanout_window: readonly WindowEntry[];
  readonly completed_fanout_outputs: readonly Json[];
  readonly loop_iteration: number;
}

export type Phase =
  | 'completed'
  | 'ready'
  | 'child_starting'
  | 'child_opening'
  | 'child_waiting'
  | 'fanout_starting'
  | 'fanout_opening'
  | 'fanout_waiting';

/** The state a stage begins in. */
export function readyState(index: number, value: Json, loopIteration = 0): WorkflowState {
  return { stage_index: index, current_value: value, active_fanout_window: [], completed_fanout_outputs: [], loop_iteration: loopIteration };
}

/** The phase a (checked) state is in. */
export function phaseOf(state: WorkflowState, stageCount: number): Phase {
  if (state.stage_index === stageCount) return 'completed';
  if (state.child !== undefined) {
    if (state.child.process_id === undefined) return 'child_starting';
    return state.child.wait_id === undefined ? 'child_opening' : 'child_waiting';
  }
  if (state.active_fanout_window.length > 0) {
    if (state.fanout_wait_id !== undefined) return 'fanout_waiting';
    return state.active_fanout_window.every(isSettled) ? 'fanout_opening' : 'fanout_starting';
  }
  return 'ready';
}

export function isSettled(entry: WindowEntry): boolean {
  return entry.child_process_id !== undefined || entry.failure !== undefined;
}

export function failureOf(entry: WindowEntry): Failure | undefined {
  return entry.failure === undefined ? undefined : Failure.create(entry.failure.kind as Failure['kind'], entry.failure.code, entry.failure.message);
}

/** The items a map stage runs over, or a reason they cannot be run. */
export function mapItems(stage: FanoutStage, value: Json): { readonly items: readonly Json[] } | { readonly problem: string; readonly tooMany: boolean } {
  if (stage.kind === 'fork') return { items: stage.branches.map((branch) => branch.id) };
  let items: Json;
  try {
    items = stage.items(value);
  } catch (error) {
    return { problem: `the items of map ${stage.id} could not be computed: ${error instanceof Error ? error.message : String(error)}`, tooMany: false };
  }
  if (!Array.isArray(items)) return { problem: `the items of map ${stage.id} are not a list`, tooMany: false };
  if (items.length > stage.maxItems) return { problem: `map ${stage.id} has ${items.length} items, more than its maxItems ${stage.maxItems}`, tooMany: true };
  return { items };
}

/** The size of the window that starts after `completed` outputs of `total` items. */
export function windowLength(stage: FanoutStage, total: number, completed: number): number {
  return Math.min(stage.windowSize, total - completed);
}

/**
 * Decodes and validates a state against the workflow's stages: its shape, then the current value
 * against the current stage's input schema (or the output schema once every stage ran), then the
 * phase invariants — a child only on a child stage, window alignment, all-or-none settled starts,
 * no failure recorded before the window's starts settled, a fan-out wait only over started
 * children. Anything else is `invalid_execution_state`: a lossy or foreign state is refused, never
 * repaired.
 */
export function checkState(value: unknown, stages: readonly Stage[], outputSchema: Schema): WorkflowState {
  const kind = workflowStateKind;
  const record = stateRecord(
    kind,
    value,
    ['stage_index', 'current_value', 'active_fanout_window', 'completed_fanout_outputs', 'loop_iteration'],
    ['selected_case_id', 'child', 'fanout_wait_id'],
  );
  const index = stateInteger(kind, record, 'stage_index', 0);
  if (index > stages.length) throw invalidState(kind, `stage_index ${index} is beyond the ${stages.length} stages`);
  const loopIteration = stateInteger(kind, record, 'loop_iteration', 0);
  const window = checkWindow(record.active_fanout_window);
  const outputs = record.completed_fanout_outputs;
  if (!Array.isArray(outputs)) throw invalidState(kind, 'completed_fanout_outputs must be an array');
  const child = record.child === undefined ? undefined : checkChild(record.child);
  const selected = record.selected_case_id;
  if (selected !== undefined && typeof selected !== 'string') throw invalidState(kind, 'selected_case_id must be a string');
  const waitId = record.fanout_wait_id;
  if (waitId !== undefined) checkWaitId(waitId, 'fanout_wait_id');
  const state = record as unknown as WorkflowState;

  const current = Payload.encode(state.current_value);
  const stage = stages[index];
  if (stage === undefined) {
    if (!outputSchema.accepts(current)) throw invalidState(kind, 'the current value of a completed workflow does not satisfy its output schema');
    if (child !== undefined || selected !== undefined || waitId !== undefined || window.length > 0 || outputs.length > 0 || loopIteration > 0) {
      throw invalidState(kind, 'a completed workflow holds no child, window, outputs or loop iteration');
    }
    return state;
  }
  if (!stage.inputSchema.accepts(current)) throw invalidState(kind, `the current value does not satisfy the input schema of stage ${stage.id}`);

  const singleChild = stage.kind === 'call' || stage.kind === 'switch' || stage.kind === 'loop';
  if (child !== undefined && !singleChild) throw invalidState(kind, `stage ${stage.id} (${stage.kind}) runs no single child`);
  if (stage.kind === 'switch') {
    if ((child === undefined) !== (selected === undefined)) throw invalidState(kind, 'a switch holds selected_case_id exactly while its child runs');
    if (selected !== undefined && !stage.cases.some((entry) => entry.id === selected)) throw invalidState(kind, `switch ${stage.id} has no case ${selected}`);
  } else if (selected !== undefined) {
    throw invalidState(kind, `selected_case_id belongs to a switch stage, not ${stage.kind}`);
  }
  if (stage.kind === 'loop') {
    if (loopIteration >= stage.maxIterations) throw invalidState(kind, `loop ${stage.id} is at iteration ${loopIteration} of at most ${stage.maxIterations}`);
  } else if (loopIteration > 0) {
    throw invalidState(kind, `loop_iteration belongs to a loop stage, not ${stage.kind}`);
  }

  if (stage.kind !== 'fork' && stage.kind !== 'map') {
    if (window.length > 0 || outputs.length > 0 || waitId !== undefined) throw invalidState(kind, `stage ${stage.id} (${stage.kind}) has no fan-out window`);
    if (stage.kind === 'transform' && child !== undefined) throw invalidState(kind, 'a transform runs no child');
    return state;
  }
  checkFanout(stage, state, window);
  return state;
}

function checkFanout(stage: FanoutStage, state: WorkflowState, window: readonly WindowEntry[]): void {
  const kind = workflowStateKind;
  const outputs = state.completed_fanout_outputs;
  if (window.length === 0) {
    // Ready: the previous window (if any) started the next one in the same Step, so nothing is half done.
    if (outputs.length > 0 || state.fanout_wait_id !== undefined) throw invalidState(kind, `fan-out ${stage.id} holds outputs or a wait without an active window`);
    return;
  }
  const listed = mapItems(stage, state.current_value);
  if ('problem' in listed) throw invalidState(kind, listed.problem);
  const total = listed.items.length;
  if (outputs.length % stage.windowSize !== 0 || outputs.length >= total) {
    throw invalidState(kind, `fan-out ${stage.id} windows are not aligned: ${outputs.length} outputs of ${total} items in windows of ${stage.windowSize}`);
  }
  const expected = windowLength(stage, total, outputs.length);
  if (window.length !== expected) throw invalidState(kind, `fan-out ${stage.id} window holds ${window.length} entries, its window is ${expected}`);
  const settled = window.filter(isSettled).length;
  if (settled !== 0 && settled !== window.length) throw invalidState(kind, `fan-out ${stage.id} has ${settled} of ${window.length} starts settled: starts settle as one batch`);
  const started = window.filter((entry) => entry.child_process_id !== undefined);
  if (settled > 0 && started.length === 0) throw invalidState(kind, `fan-out ${stage.id} has no started child but did not fail`);
  if (new Set(started.map((entry) => entry.child_process_id)).size !== started.length) throw invalidState(kind, `fan-out ${stage.id} lists a child twice`);
  if (state.fanout_wait_id !== undefined && settled === 0) throw invalidState(kind, `fan-out ${stage.id} opened a wait before its starts settled`);
}

function checkWindow(value: unknown): WindowEntry[] {
  const kind = workflowStateKind;
  if (!Array.isArray(value)) throw invalidState(kind, 'active_fanout_window must be an array');
  return value.map((entry: unknown, index) => {
    const record = stateRecord(kind, entry, [], ['child_process_id', 'failure']);
    if (record.child_process_id !== undefined && record.failure !== undefined) {
      throw invalidState(kind, `active_fanout_window[${index}] holds both a child and a start failure`);
    }
    if (record.child_process_id !== undefined) checkProcessId(record.child_process_id, `active_fanout_window[${index}].child_process_id`);
    if (record.failure !== undefined) checkFailure(record.failure, `active_fanout_window[${index}].failure`);
    return record as WindowEntry;
  });
}

function checkChild(value: unknown): ChildRecord {
  const kind = workflowStateKind;
  const record = stateRecord(kind, value, [], ['process_id', 'wait_id']);
  if (record.process_id !== undefined) checkProcessId(record.process_id, 'child.process_id');
  if (record.wait_id !== undefined) {
    if (record.process_id === undefined) throw invalidState(kind, 'child.wait_id needs the started child.process_id');
    checkWaitId(record.wait_id, 'child.wait_id');
  }
  return record as ChildRecord;
}

function checkProcessId(value: unknown, what: string): void {
  try {
    ProcessId.parse(value as string);
  } catch {
    throw invalidState(workflowStateKind, `${what} is not a process id`);
  }
}

function checkWaitId(value: unknown, what: string): void {
  try {
    WaitId.parse(value as string);
  } catch {
    throw invalidState(workflowStateKind, `${what} is not a wait id`);
  }
}

function checkFailure(value: unknown, what: string): void {
  const record = stateRecord(workflowStateKind, value, ['kind', 'code', 'message']);
  if (!isFailureKind(record.kind) || !isQualifiedName(record.code) || typeof record.message !== 'string') {
    throw invalidState(workflowStateKind, `${what} is not a failure`);
  }
  try {
    Failure.create(record.kind, record.code, record.message);
  } catch {
    throw invalidState(workflowStateKind, `${what} is not a failure`);
  }
}
