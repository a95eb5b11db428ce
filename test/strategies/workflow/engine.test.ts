/**
 * The workflow strategy end to end through a real Engine (memory committer): every stage kind runs
 * real child Processes, fan-out windows are one batch of starts each and the next window starts only
 * after the previous drained, the first failure in declaration order propagates with its prefix,
 * `maxItems` and `maxIterations` bound what they bound.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Budget } from '../../../src/kernel/budget.js';
import type { Event } from '../../../src/kernel/event.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Engine } from '../../../src/kernel/engine.js';
import { Payload } from '../../../src/kernel/payload.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { workflow } from '../../../strategies/workflow/index.js';
import { deployment, double, echo, engine, failingOn, leaf, operations, recorded } from './fixtures.js';

const run = async (definitionName: string, stages: Parameters<typeof workflow.define>[0]['stages'], input: unknown, outputSchema: unknown = true) => {
  const definition = workflow.define({ name: definitionName, description: 'A test workflow.', inputSchema: true, outputSchema: outputSchema as boolean, stages });
  const trace = recorded(definition);
  const events: Event[] = [];
  const host = new Engine({ committer: new MemoryTreeCommitter(), eventListeners: [(event: Event) => void events.push(event)] });
  const result = await host.run(deployment(trace.definition, definitionName), Payload.encode(input));
  await host.close();
  return { result, transitions: trace.transitions, events };
};

const finishedChildren = (events: readonly Event[]) => events.filter((event) => event.name === 'agent.process.finished' && event.relation.parentId !== undefined);

test('call then transform: the child output becomes the value, the transform shapes the result', async () => {
  const { result } = await run('test.wf.call', [
    workflow.call({ id: 'echo', deployment: echo, input: (value) => ({ value: (value as { text: string }).text }) }),
    workflow.transform({ id: 'shout', outputSchema: { type: 'object' }, run: (value) => ({ shouted: (value as { value: string }).value.toUpperCase() }) }),
  ], { text: 'hi' });
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  assert.deepEqual(result.output?.decode(), { shouted: 'HI' });
});

test('fork: fixed branches, outputs keyed by branch id, merged by the output function', async () => {
  const { result, transitions } = await run('test.wf.fork', [
    workflow.fork({
      id: 'review',
      branches: [
        { id: 'left', deployment: leaf('test.left', (input) => ({ side: 'left', of: input })) },
        { id: 'right', deployment: leaf('test.right', (input) => ({ side: 'right', of: input })) },
      ],
      output: (value, results) => ({ subject: value, results }),
    }),
  ], 'doc');
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { subject: 'doc', results: { left: { side: 'left', of: 'doc' }, right: { side: 'right', of: 'doc' } } });
  assert.deepEqual(operations(transitions[0]!), ['start_child', 'start_child'], 'both branches start in one batch');
});

test('map windows: each window of N starts is one batch, and the next window starts only after the previous drained', async () => {
  const items = Array.from({ length: 25 }, (_, index) => index);
  const { result, transitions, events } = await run('test.wf.map', [workflow.map({ id: 'double', deployment: double, maxItems: 100, windowSize: 10 })], items);
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), items.map((item) => item * 2));
  const batches = transitions.filter((transition) => operations(transition).includes('start_child')).map((transition) => operations(transition));
  assert.deepEqual(batches.map((batch) => batch.length), [10, 10, 5], 'three windows, each one batch of starts');
  assert.ok(batches.every((batch) => batch.every((operation) => operation === 'start_child')));
  // Order of the tree's events: every child of window k finished before the first child of window k+1 starts.
  const starts = events.filter((event) => event.name === 'agent.process.started' && event.relation.parentId !== undefined).map((event) => events.indexOf(event));
  const finishes = finishedChildren(events).map((event) => events.indexOf(event));
  assert.equal(starts.length, 25);
  for (let window = 1; window < 3; window += 1) {
    const lastFinishedBefore = Math.max(...finishes.slice(0, window * 10));
    const firstStartedAfter = Math.min(...starts.slice(window * 10));
    assert.ok(lastFinishedBefore < firstStartedAfter, `window ${window} started after window ${window - 1} drained`);
  }
});

test('map over more items than maxItems is refused before any child starts', async () => {
  const { result, events } = await run('test.wf.maxitems', [workflow.map({ id: 'double', deployment: double, maxItems: 3 })], [1, 2, 3, 4]);
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.kind, 'contract');
  assert.equal(result.termination.failure?.code, 'workflow.map.too_many_items');
  assert.match(result.termination.failure?.message ?? '', /4 items, more than its maxItems 3/);
  assert.equal(finishedChildren(events).length, 0, 'no child was started');
  const exact = await run('test.wf.maxitems-ok', [workflow.map({ id: 'double', deployment: double, maxItems: 3 })], [1, 2, 3]);
  assert.deepEqual(exact.result.output?.decode(), [2, 4, 6], 'exactly maxItems items run');
});

test('loop: repeats its body child and stops at maxIterations; until stops it earlier', async () => {
  const bounded = await run('test.wf.loop', [workflow.loop({ id: 'twice', deployment: double, maxIterations: 3 })], 1);
  assert.equal(bounded.result.status, 'completed');
  assert.equal(bounded.result.output?.decode(), 8, 'three iterations: 1 → 2 → 4 → 8');
  assert.equal(finishedChildren(bounded.events).length, 3, 'the body ran exactly maxIterations times');
  const early = await run('test.wf.until', [workflow.loop({ id: 'twice', deployment: double, maxIterations: 10, until: (value) => (value as number) >= 5 })], 1);
  assert.equal(early.result.output?.decode(), 8);
  assert.equal(finishedChildren(early.events).length, 3, 'until ended the loop after the third iteration');
});

test('switch: the case chosen from the current value runs, and only it', async () => {
  const stages = [
    workflow.switch({
      id: 'route',
      select: (value) => ((value as number) < 0 ? 'negative' : 'positive'),
      cases: [
        { id: 'negative', deployment: leaf('test.negate', (input) => -(input as number)) },
        { id: 'positive', deployment: double },
      ],
      output: (_value, result, caseId) => ({ caseId, result }),
    }),
  ];
  const negative = await run('test.wf.switch', stages, -3);
  assert.deepEqual(negative.result.output?.decode(), { caseId: 'negative', result: 3 });
  const positive = await run('test.wf.switch', stages, 4);
  assert.deepEqual(positive.result.output?.decode(), { caseId: 'positive', result: 8 });
  assert.equal(finishedChildren(positive.events).length, 1);
  const unknown = await run('test.wf.switch-unknown', [workflow.switch({ id: 'route', select: () => 'nowhere', cases: [{ id: 'only', deployment: double }] })], 1);
  assert.equal(unknown.result.termination.failure?.code, 'workflow.switch.case_unknown');
});

test('fan-out: the first failure in declaration order propagates, code prefixed item_ (map), after the window drained', async () => {
  const failing = failingOn('test.picky', [2, 4]);
  const { result, events } = await run('test.wf.mapfail', [workflow.map({ id: 'pick', deployment: failing, maxItems: 10, windowSize: 4 })], [1, 4, 2, 3]);
  assert.equal(result.status, 'failed');
  const failure = result.termination.failure;
  assert.equal(failure?.kind, 'execution', 'the kind is the child’s');
  assert.equal(failure?.code, 'item_test.leaf.failed');
  assert.equal(failure?.message, 'item 1: no 4', 'item 1 (value 4) comes before item 2 (value 2) in declaration order');
  assert.equal(finishedChildren(events).length, 4, 'the whole window drained before the failure');
  // A failure stops the fan-out: later windows never start.
  const windowed = await run('test.wf.mapfail-window', [workflow.map({ id: 'pick', deployment: failing, maxItems: 10, windowSize: 2 })], [1, 2, 3, 5]);
  assert.equal(windowed.result.termination.failure?.code, 'item_test.leaf.failed');
  assert.equal(finishedChildren(windowed.events).length, 2, 'the second window never started');
});

test('fork: a branch failure propagates with the branch_ prefix and the branch named', async () => {
  const { result } = await run('test.wf.forkfail', [
    workflow.fork({
      id: 'pair',
      branches: [
        { id: 'good', deployment: double },
        { id: 'bad', deployment: failingOn('test.bad', [7]) },
      ],
    }),
  ], 7);
  assert.equal(result.termination.failure?.kind, 'execution');
  assert.equal(result.termination.failure?.code, 'branch_test.leaf.failed');
  assert.equal(result.termination.failure?.message, 'branch bad: no 7');
});

test('call: a child failure propagates unchanged (kind, code, diagnostic)', async () => {
  const { result } = await run('test.wf.callfail', [workflow.call({ id: 'bad', deployment: failingOn('test.bad', ['x']) })], 'x');
  assert.equal(result.status, 'failed');
  assert.deepEqual(result.termination.failure?.toWire(), { kind: 'execution', code: 'test.leaf.failed', message: 'no "x"' });
});

test('call: a child admission failure propagates unchanged', async () => {
  // The mapped input does not satisfy the child's input schema: the Engine refuses the start.
  const { result, events } = await run('test.wf.admission', [workflow.call({ id: 'double', deployment: double, input: () => 'not a number' })], 1);
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.kind, 'contract');
  assert.equal(result.termination.failure?.code, 'engine.child.input.invalid');
  assert.equal(finishedChildren(events).length, 0);
});

test('transform: its output is validated against its schema; a throw fails the process', async () => {
  const invalid = await run('test.wf.transform', [workflow.transform({ id: 'count', outputSchema: { type: 'number' }, run: () => 'three' })], 1);
  assert.equal(invalid.result.termination.failure?.code, 'workflow.transform.output_invalid');
  assert.equal(invalid.result.termination.failure?.kind, 'contract');
  const thrown = await run('test.wf.throw', [workflow.transform({ id: 'boom', outputSchema: true, run: () => { throw new Error('no luck'); } })], 1);
  assert.equal(thrown.result.termination.failure?.code, 'workflow.transform.failed');
  assert.equal(thrown.result.termination.failure?.message, 'transform boom failed: no luck');
  const chained = await run('test.wf.chain', [
    workflow.transform({ id: 'inc', inputSchema: { type: 'number' }, outputSchema: { type: 'number' }, run: (value) => (value as number) + 1 }),
    workflow.transform({ id: 'sq', inputSchema: { type: 'number' }, outputSchema: { type: 'number' }, run: (value) => (value as number) ** 2 }),
  ], 2);
  assert.equal(chained.result.output?.decode(), 9);
  assert.equal(chained.transitions.length, 1, 'consecutive transforms run in one Step');
});

test('the final value must satisfy the workflow output schema', async () => {
  const { result } = await run('test.wf.output', [workflow.transform({ id: 'id', outputSchema: true, run: (value) => value })], 'text', { type: 'number' });
  assert.equal(result.termination.failure?.code, 'workflow.output.invalid');
});

test('the first stage input contract is checked at start', async () => {
  const definition = workflow.define({ name: 'test.wf.first', description: 'A test workflow.', inputSchema: true, outputSchema: true, stages: [workflow.loop({ id: 'twice', deployment: double, maxIterations: 2 })] });
  const host = engine();
  await assert.rejects(host.run(deployment(definition, 'first'), Payload.encode('not a number')), /schema|satisf/i);
  await host.close();
});

test('fork windows: branches beyond the window start in the next batch', async () => {
  const branches = ['a', 'b', 'c'].map((id) => ({ id, deployment: leaf(`test.branch.${id}`, () => id) }));
  const { result, transitions } = await run('test.wf.forkwindow', [workflow.fork({ id: 'three', branches, windowSize: 2 })], null);
  assert.deepEqual(result.output?.decode(), { a: 'a', b: 'b', c: 'c' });
  const batches = transitions.filter((transition) => operations(transition).includes('start_child')).map((transition) => operations(transition).length);
  assert.deepEqual(batches, [2, 1]);
});

test('budgets: each child gets its binding’s grant when it starts, charged to the workflow', async () => {
  const childBudget = Budget.of({ steps: Quota.of(4), effects: Quota.of(2), signals: Quota.of(6) });
  const definition = workflow.define({
    name: 'test.wf.budget',
    description: 'A test workflow.',
    inputSchema: true,
    outputSchema: true,
    stages: [workflow.map({ id: 'double', deployment: double, budget: childBudget, maxItems: 5, windowSize: 1 })],
  });
  const host = new Engine({ committer: new MemoryTreeCommitter() });
  const granted = await host.run(deployment(definition, 'budget'), Payload.encode([1, 2]));
  assert.deepEqual(granted.output?.decode(), [2, 4]);
  // The root's own signals (2 start results, 2 openings, 2 answers) plus 6 for the first child fit in 14; the second child's 6 do not.
  const rootBudget = Budget.of({ steps: Quota.of(100), effects: Quota.of(100), signals: Quota.of(14) });
  const starved = await host.run(deployment(definition, 'budget'), Payload.encode([1, 2]), { budget: rootBudget });
  assert.equal(starved.status, 'failed');
  assert.equal(starved.termination.failure?.code, 'item_engine.child.budget_exhausted', JSON.stringify(starved.termination.toWire()));
  assert.match(starved.termination.failure?.message ?? '', /^item 1: /);
  await host.close();
});

test('map: items that are not a list fail workflow.map.items_invalid', async () => {
  const { result } = await run('test.wf.items', [workflow.map({ id: 'maxItems', deployment: double, maxItems: 3, items: () => 'not a list' })], 1);
  assert.equal(result.termination.failure?.kind, 'contract');
  assert.equal(result.termination.failure?.code, 'workflow.map.items_invalid');
});
