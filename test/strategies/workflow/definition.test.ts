/**
 * The workflow Definition on its own: the Definition conformance suite over workflow fixtures
 * (every phase, fresh and restored), the child-outcome rules (unresolved effects, not completed,
 * output missing), a window the Engine never delivers (a rejected Step), restore refusing every
 * lossy or invalid state, and the builders refusing bad configurations eagerly.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Definition } from '../../../src/kernel/definition.js';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import { Failure } from '../../../src/kernel/failure.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Signal } from '../../../src/kernel/signal.js';
import { Termination } from '../../../src/kernel/termination.js';
import type { Transition } from '../../../src/kernel/transition.js';
import { runDefinitionConformance } from '../../../src/testing/definition-conformance.js';
import { workflow, workflowStateKind } from '../../../strategies/workflow/index.js';
import { double, echo, failingOn, leaf } from './fixtures.js';
import { answer, childOf, opened, startFailed, started, waitOf } from './signals.js';

const state = (value: unknown): ExecutionState => ExecutionState.encode(workflowStateKind, value);
const base = { completed_fanout_outputs: [], active_fanout_window: [], loop_iteration: 0 };

// A workflow with every stage kind: transform → call → switch → fork → map (window 2) → loop.
const definition: Definition = workflow.define({
  name: 'test.workflow.all',
  description: 'Every stage kind in one workflow.',
  inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  outputSchema: { type: 'number' },
  stages: [
    workflow.transform({ id: 'take', inputSchema: { type: 'object' }, outputSchema: { type: 'number' }, run: (value) => (value as { n: number }).n }),
    workflow.call({ id: 'first', deployment: double }),
    workflow.switch({ id: 'route', select: (value) => ((value as number) > 10 ? 'big' : 'small'), cases: [{ id: 'big', deployment: double }, { id: 'small', deployment: leaf('test.inc', (input) => (input as number) + 1) }] }),
    workflow.fork({ id: 'both', branches: [{ id: 'a', deployment: double }, { id: 'b', deployment: double }], output: (_value, results) => [results.a, results.b] }),
    workflow.map({ id: 'each', deployment: double, maxItems: 4, windowSize: 2, output: (_value, results) => (results as number[]).reduce((sum, item) => sum + item, 0) }),
    workflow.loop({ id: 'again', deployment: double, maxIterations: 2 }),
  ],
});

// The fresh run: step 1 runs the transform and starts `first`; each child then takes three Steps
// (start result → wait opening → answer), and an answer starts the next stage in the same Step.
runDefinitionConformance('workflow', {
  definition,
  input: Payload.encode({ n: 3 }),
  initialSignals: [],
  followingSignals: [
    [started(1n)],
    [opened(2n)],
    [answer(2n, [{ child: childOf(1n), output: 6 }])],
    [started(4n)],
    [opened(5n)],
    [answer(5n, [{ child: childOf(4n), output: 7 }])],
    [started(7n, 0), started(7n, 1)],
    [opened(8n)],
    [answer(8n, [{ child: childOf(7n, 0), output: 14 }, { child: childOf(7n, 1), output: 14 }])],
    [started(10n, 0), started(10n, 1)],
    [opened(11n)],
    [answer(11n, [{ child: childOf(10n, 0), output: 28 }, { child: childOf(10n, 1), output: 28 }])],
  ],
  restoredCases: [
    {
      name: 'a map window waiting for its drain',
      state: state({ ...base, stage_index: 4, current_value: [1, 2, 3], active_fanout_window: [{ child_process_id: childOf(3n, 0).toString() }, { child_process_id: childOf(3n, 1).toString() }], fanout_wait_id: waitOf(4n).toString() }),
      signals: [answer(4n, [{ child: childOf(3n, 0), output: 2 }, { child: childOf(3n, 1), output: 4 }])],
      followingSignals: [[started(5n, 0)], [opened(6n)], [answer(6n, [{ child: childOf(5n, 0), output: 6 }])]],
    },
    {
      name: 'a window with a start failure drains the started child first',
      state: state({ ...base, stage_index: 4, current_value: [1, 2], active_fanout_window: [{}, {}] }),
      signals: [started(3n, 0), startFailed(3n, 1, Failure.create('contract', 'engine.child.input.invalid', 'bad input'))],
      followingSignals: [[opened(4n)], [answer(4n, [{ child: childOf(3n, 0), output: 2 }])]],
    },
    {
      name: 'a loop in its second iteration',
      state: state({ ...base, stage_index: 5, current_value: 40, loop_iteration: 1, child: { process_id: childOf(9n).toString(), wait_id: waitOf(10n).toString() } }),
      signals: [answer(10n, [{ child: childOf(9n), output: 80 }])],
    },
    {
      name: 'a switch child that failed',
      state: state({ ...base, stage_index: 2, current_value: 6, selected_case_id: 'small', child: { process_id: childOf(4n).toString(), wait_id: waitOf(5n).toString() } }),
      signals: [answer(5n, [{ child: childOf(4n), termination: Termination.failed(Failure.create('execution', 'test.leaf.failed', 'no')) }])],
    },
  ],
  rejectedCases: [
    {
      name: 'a window without its start results',
      state: state({ ...base, stage_index: 4, current_value: [1, 2], active_fanout_window: [{}, {}] }),
      signals: [started(3n, 0)],
      failureKind: 'contract',
      failureCode: 'workflow.signal.unexpected',
    },
    {
      name: 'an answer that does not report the child',
      state: state({ ...base, stage_index: 1, current_value: 3, child: { process_id: childOf(1n).toString(), wait_id: waitOf(2n).toString() } }),
      signals: [answer(2n, [{ child: childOf(7n), output: 1 }])],
      failureKind: 'contract',
      failureCode: 'workflow.signal.unexpected',
    },
  ],
});

/** Restores `value` and steps it once over `signals`. */
async function stepFrom(target: Definition, value: unknown, signals: readonly Signal[]): Promise<Transition> {
  const execution = await target.restore(state(value), new AbortController().signal);
  return execution.step(new AbortController().signal, signals);
}

const callWorkflow = workflow.define({ name: 'test.workflow.call', description: 'One call.', inputSchema: true, outputSchema: true, stages: [workflow.call({ id: 'echo', deployment: echo })] });
const waitingCall = { ...base, stage_index: 0, current_value: { value: 'v' }, child: { process_id: childOf(1n).toString(), wait_id: waitOf(2n).toString() } };

test('a drained child with unresolved effects in its subtree fails external workflow.call.unresolved_effects', async () => {
  const transition = await stepFrom(callWorkflow, waitingCall, [answer(2n, [{ child: childOf(1n), output: { value: 'v' }, unresolved: 2 }])]);
  assert.equal(transition.kind, 'fail');
  assert.equal(transition.failure?.kind, 'external');
  assert.equal(transition.failure?.code, 'workflow.call.unresolved_effects');
});

test('a child that ended without completing fails external workflow.call.not_completed', async () => {
  const canceled = Termination.interrupted('parent_cancellation', 'canceled by its parent');
  const transition = await stepFrom(callWorkflow, waitingCall, [answer(2n, [{ child: childOf(1n), termination: canceled }])]);
  assert.equal(transition.failure?.kind, 'external');
  assert.equal(transition.failure?.code, 'workflow.call.not_completed');
});

test('a completed child without output fails contract workflow.call.output_missing', async () => {
  // A Result cannot be built so; the rule guards a malformed answer, so the answer is edited by hand.
  const real = answer(2n, [{ child: childOf(1n), output: { value: 'v' } }]);
  const body = real.payload.decode<{ outcomes: Array<{ result: Record<string, unknown> }> }>();
  delete body.outcomes[0]?.result.output;
  const edited = Signal.create({ id: real.id, waitId: real.waitId, payload: Payload.encode(body) });
  const transition = await stepFrom(callWorkflow, waitingCall, [edited]);
  assert.equal(transition.failure?.kind, 'contract');
  assert.equal(transition.failure?.code, 'workflow.call.output_missing');
});

test('a fan-out member with unresolved effects fails with the item_ prefix on the workflow code', async () => {
  const mapWorkflow = workflow.define({ name: 'test.workflow.map', description: 'One map.', inputSchema: true, outputSchema: true, stages: [workflow.map({ id: 'm', deployment: double, maxItems: 4 })] });
  const transition = await stepFrom(mapWorkflow, { ...base, stage_index: 0, current_value: [1, 2], active_fanout_window: [{ child_process_id: childOf(1n, 0).toString() }, { child_process_id: childOf(1n, 1).toString() }], fanout_wait_id: waitOf(2n).toString() }, [
    answer(2n, [{ child: childOf(1n, 0), output: 2 }, { child: childOf(1n, 1), output: 4, unresolved: 1 }]),
  ]);
  assert.equal(transition.failure?.code, 'item_workflow.map.unresolved_effects');
  assert.match(transition.failure?.message ?? '', /^item 1: /);
});

test('a single child start failure propagates unchanged', async () => {
  const failure = Failure.create('external', 'engine.child.deployment_unavailable', 'gone');
  const transition = await stepFrom(callWorkflow, { ...base, stage_index: 0, current_value: { value: 'v' }, child: {} }, [startFailed(1n, 0, failure)]);
  assert.deepEqual(transition.failure?.toWire(), failure.toWire());
});

// Restore refuses every state that breaks an invariant; each value below is one broken rule.
const mapAt = { ...base, stage_index: 4, current_value: [1, 2, 3] };
const id = (step: bigint, index = 0) => childOf(step, index).toString();
const refusals: Array<[string, unknown]> = [
  ['an unknown member', { ...base, stage_index: 0, current_value: { n: 1 }, phase: 'ready' }],
  ['a missing member', { stage_index: 0, current_value: { n: 1 }, active_fanout_window: [], loop_iteration: 0 }],
  ['a stage index beyond the stages', { ...base, stage_index: 7, current_value: 1 }],
  ['a current value the current stage does not accept', { ...base, stage_index: 1, current_value: 'text' }],
  ['a completed workflow whose value fails the output schema', { ...base, stage_index: 6, current_value: 'text' }],
  ['a completed workflow with a child', { ...base, stage_index: 6, current_value: 1, child: {} }],
  ['a child on a fan-out stage', { ...mapAt, child: {} }],
  ['a child on a transform stage', { ...base, stage_index: 0, current_value: { n: 1 }, child: {} }],
  ['a wait id without a started child', { ...base, stage_index: 1, current_value: 1, child: { wait_id: waitOf(2n).toString() } }],
  ['a switch child without its selected case', { ...base, stage_index: 2, current_value: 1, child: {} }],
  ['a selected case the switch does not have', { ...base, stage_index: 2, current_value: 1, child: {}, selected_case_id: 'huge' }],
  ['a selected case outside a switch', { ...base, stage_index: 1, current_value: 1, child: {}, selected_case_id: 'big' }],
  ['a loop iteration at the bound', { ...base, stage_index: 5, current_value: 1, loop_iteration: 2, child: {} }],
  ['a loop iteration outside a loop', { ...base, stage_index: 1, current_value: 1, loop_iteration: 1 }],
  ['a window on a call stage', { ...base, stage_index: 1, current_value: 1, active_fanout_window: [{}] }],
  ['a window not aligned to the window size', { ...mapAt, completed_fanout_outputs: [2], active_fanout_window: [{}, {}] }],
  ['a window longer than what is left', { ...mapAt, completed_fanout_outputs: [2, 4], active_fanout_window: [{}, {}] }],
  ['outputs covering every item with a window still active', { ...base, stage_index: 4, current_value: [1, 2], completed_fanout_outputs: [2, 4], active_fanout_window: [{}] }],
  ['outputs without an active window', { ...mapAt, completed_fanout_outputs: [2, 4] }],
  ['a window of a map whose items exceed maxItems', { ...base, stage_index: 4, current_value: [1, 2, 3, 4, 5], active_fanout_window: [{}, {}] }],
  ['starts settled for part of the window', { ...mapAt, active_fanout_window: [{ child_process_id: id(3n) }, {}] }],
  ['a failure recorded before the window’s starts settled', { ...mapAt, active_fanout_window: [{}, { failure: { kind: 'execution', code: 'x.y', message: 'm' } }] }],
  ['a wait over a window whose every start failed', { ...mapAt, active_fanout_window: [{ failure: { kind: 'execution', code: 'x.y', message: 'm' } }, { failure: { kind: 'execution', code: 'x.y', message: 'm' } }], fanout_wait_id: waitOf(4n).toString() }],
  ['a window entry with a child and a failure', { ...mapAt, active_fanout_window: [{ child_process_id: id(3n), failure: { kind: 'execution', code: 'x.y', message: 'm' } }, { child_process_id: id(3n, 1) }] }],
  ['a settled window with no started child', { ...mapAt, active_fanout_window: [{ failure: { kind: 'execution', code: 'x.y', message: 'm' } }, { failure: { kind: 'execution', code: 'x.y', message: 'm' } }] }],
  ['a wait opened before the starts settled', { ...mapAt, active_fanout_window: [{}, {}], fanout_wait_id: waitOf(4n).toString() }],
  ['a fan-out wait without a window', { ...mapAt, fanout_wait_id: waitOf(4n).toString() }],
  ['the same child twice in a window', { ...mapAt, active_fanout_window: [{ child_process_id: id(3n) }, { child_process_id: id(3n) }] }],
  ['a window entry that is not a child id', { ...mapAt, active_fanout_window: [{ child_process_id: 'not a process id' }, { child_process_id: id(3n, 1) }] }],
  ['a recorded failure that is not a failure', { ...mapAt, active_fanout_window: [{ failure: { kind: 'bad', code: 'x.y', message: 'm' } }, { child_process_id: id(3n, 1) }] }],
];

for (const [name, value] of refusals) {
  test(`restore refuses ${name}`, async () => {
    await assert.rejects(async () => definition.restore(state(value), new AbortController().signal), { code: 'invalid_execution_state' });
  });
}

test('restore accepts each phase the refusals are variations of', async () => {
  const accepted = [
    { ...base, stage_index: 0, current_value: { n: 1 } },
    { ...base, stage_index: 2, current_value: 1, child: {}, selected_case_id: 'big' },
    { ...mapAt, active_fanout_window: [{}, {}] },
    { ...mapAt, completed_fanout_outputs: [2, 4], active_fanout_window: [{}] },
    { ...mapAt, active_fanout_window: [{ failure: { kind: 'execution', code: 'x.y', message: 'm' } }, { child_process_id: id(3n, 1) }] },
    { ...base, stage_index: 5, current_value: 1, loop_iteration: 1, child: { process_id: id(3n) } },
    { ...base, stage_index: 6, current_value: 1 },
  ];
  for (const value of accepted) await definition.restore(state(value), new AbortController().signal);
});

test('the builders refuse bad configurations eagerly, naming the problem', () => {
  const refuse = (build: () => unknown, pattern: RegExp) => assert.throws(build, (error: Error & { code?: string }) => error.code === 'invalid_workflow' && pattern.test(error.message));
  refuse(() => workflow.map({ id: 'm', deployment: double, maxItems: 0 }), /maxItems must be an integer from 1/);
  refuse(() => workflow.map({ id: 'm', deployment: double, maxItems: 5, windowSize: 17 }), /windowSize must be an integer from 1 to 16/);
  refuse(() => workflow.loop({ id: 'l', deployment: double, maxIterations: 0 }), /maxIterations/);
  refuse(() => workflow.fork({ id: 'f', branches: [] }), /at least one branch/);
  refuse(() => workflow.fork({ id: 'f', branches: [{ id: 'a', deployment: double }, { id: 'a', deployment: double }] }), /two branches a/);
  refuse(() => workflow.switch({ id: 's', select: () => 'a', cases: [] }), /at least one case/);
  refuse(() => workflow.call({ id: 'has space', deployment: double }), /call id must be identity text/);
  refuse(() => workflow.call({ id: 'c', deployment: {} as never }), /deployment must be a Deployment/);
  refuse(() => workflow.transform({ id: 't', outputSchema: { type: 'nope' }, run: (value) => value }), /not a valid JSON Schema/);
  refuse(() => workflow.define({ name: 'test.x', description: 'x', inputSchema: true, outputSchema: true, stages: [] }), /at least one stage/);
  refuse(() => workflow.define({ name: 'test.x', description: 'x', inputSchema: true, outputSchema: true, stages: [workflow.call({ id: 'c', deployment: double }), workflow.call({ id: 'c', deployment: double })] }), /two stages are called c/);
  refuse(() => workflow.define({ name: 'test.x', description: 'x', inputSchema: true, outputSchema: true, stages: [{ kind: 'call', id: 'c' } as never] }), /not a stage/);
  refuse(() => workflow.define({ name: 'Bad Name', description: 'x', inputSchema: true, outputSchema: true, stages: [workflow.call({ id: 'c', deployment: double })] }), /qualified name/);
});

test('childDeployments lists every static binding once', () => {
  const refs = definition.childDeployments().map((child) => child.ref.toString());
  assert.equal(refs.length, 2, 'double (bound by five stages) and the inc leaf');
  assert.equal(new Set(refs).size, refs.length);
  const failing = failingOn('test.f', []);
  const other = workflow.define({ name: 'test.y', description: 'y', inputSchema: true, outputSchema: true, stages: [workflow.call({ id: 'c', deployment: failing })] });
  assert.deepEqual(other.childDeployments().map((child) => child.ref.toString()), [failing.ref.toString()]);
});
