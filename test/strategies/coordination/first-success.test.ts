/**
 * FirstSuccess: the selection rules on hand-built windows (request order, the predicate, waiting
 * again for the rest, the losers' cancellation), and through the Engine with real child Processes:
 * nobody satisfying the predicate is an explicit empty result, a winner cancels every loser's whole
 * subtree, and a predicate that throws is an execution failure, not a protocol violation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sleepDefinition } from '../../../strategies/demo/sleep.js';
import { unreliableDefinition } from '../../../strategies/demo/unreliable.js';
import { Budget, type Definition, type Effect, ExecutionState, Payload, ProcessId, Quota, type Signal, type Transition } from '../../../src/kernel/index.js';
import { sleepDispatcher, unreliableDispatcher } from '../../../src/server/demo-dispatchers.js';
import { setup } from '../../kernel/engine/harness.js';
import { cancelReceipt, childAnswer, childAt, competition, deployment, echo, smallBudget, state, waitAt } from './fixtures.js';

const kind = 'test.coordination.first-success';
const candidates = ['reject', 'b', 'c'].map((value) => ({ deployment: 'demo.echo', input: { value }, budget: smallBudget }));
const [c0, c1, c2] = [childAt(1, 0), childAt(1, 1), childAt(1, 2)] as [ProcessId, ProcessId, ProcessId];
const waiting = (extra: Record<string, unknown> = {}): ExecutionState =>
  state(kind, { phase: 'waiting', candidates, started: [c0, c1, c2].map(String), outcomes: [], canceled: [], wait_id: waitAt(2).toString(), ...extra });

async function stepFrom(definition: Definition, from: ExecutionState, ...windows: Signal[][]): Promise<Transition[]> {
  const execution = await definition.restore(from, new AbortController().signal);
  const transitions: Transition[] = [];
  for (const window of windows) transitions.push(await execution.step(new AbortController().signal, window));
  return transitions;
}

const operations = (transition: Transition): unknown[] => transition.effects.map((effect: Effect) => effect.payload.decode<{ operation: string }>().operation);

test('FirstSuccess: in one satisfaction the first completed candidate the predicate accepts wins, in request order', async () => {
  const [done] = await stepFrom(
    competition(),
    waiting(),
    [childAnswer(waitAt(2), [{ id: c0, output: { value: 'reject' } }, { id: c1, output: { value: 'b' } }, { id: c2, output: { value: 'c' } }])],
  );
  assert.equal(done?.kind, 'complete');
  const output = done?.output?.decode<any>();
  assert.deepEqual(output.winner, { index: 1, processId: c1.toString(), output: { value: 'b' } }, 'c0 is refused by the predicate; c1 precedes c2');
  assert.deepEqual(output.outcomes.map((outcome: { index: number }) => outcome.index), [0, 1, 2]);
  assert.deepEqual(output.canceled, []);
});

test('FirstSuccess: without an accepted success it waits again for the candidates still running', async () => {
  const [again] = await stepFrom(competition(), waiting(), [childAnswer(waitAt(2), [{ id: c0, output: { value: 'reject' } }, { id: c2, failure: 'x.failed' }])]);
  assert.equal(again?.kind, 'continue');
  assert.deepEqual(operations(again!), ['wait_children']);
  const spec = again!.effects[0]!.frameworkOperation() as { spec: { children: ProcessId[]; boundary: string } };
  assert.deepEqual(spec.spec.children.map(String), [c1.toString()]);
  assert.equal(spec.spec.boundary, 'terminal_result');
});

test('FirstSuccess: a winner cancels the candidates still running, then completes once the receipts are in', async () => {
  const [cancel, done] = await stepFrom(competition(), waiting(), [childAnswer(waitAt(2), [{ id: c1, output: { value: 'b' } }])], [cancelReceipt(3, 0), cancelReceipt(3, 1)]);
  assert.equal(cancel?.kind, 'continue');
  assert.deepEqual(operations(cancel!), ['cancel_child', 'cancel_child']);
  assert.deepEqual(cancel!.effects.map((effect) => (effect.frameworkOperation() as { childId: ProcessId }).childId.toString()), [c0.toString(), c2.toString()]);
  assert.equal(done?.kind, 'complete');
  assert.deepEqual(done?.output?.decode<any>().canceled, [c0.toString(), c2.toString()]);
  assert.equal(done?.output?.decode<any>().winner.index, 1);
});

const unreliable = deployment('demo.unreliable', unreliableDefinition, unreliableDispatcher());
const budget = (steps: number, effects: number, signals: number) => Budget.of({ steps: Quota.of(steps), effects: Quota.of(effects), signals: Quota.of(signals) });

test('FirstSuccess (Engine): nobody satisfying the predicate completes with an empty winner', async () => {
  const { engine } = setup();
  const definition = competition([echo, unreliable]);
  const result = await engine.run(
    deployment(kind, definition),
    Payload.encode([
      { deployment: 'demo.unreliable', input: { mode: 'fail', replayable: false }, budget: smallBudget },
      { deployment: 'demo.echo', input: { value: 'reject' }, budget: smallBudget },
    ]),
    { budget: budget(100, 100, 100) },
  );
  assert.equal(result.status, 'completed');
  const output = result.output?.decode<any>();
  assert.equal(output.winner, undefined);
  assert.deepEqual(
    output.outcomes.map((outcome: any) => [outcome.index, outcome.status, outcome.failure?.code]),
    [
      [0, 'failed', 'demo.unreliable.failed'],
      [1, 'completed', undefined],
    ],
  );
  await engine.close();
});

test('FirstSuccess (Engine): the winner completes the competition and every loser subtree is canceled', async () => {
  const { engine } = setup();
  const sleep = deployment('demo.sleep', sleepDefinition, sleepDispatcher());
  // A loser with descendants of its own: a nested competition between two long sleeps.
  const inner = deployment('test.coordination.inner', competition([sleep], undefined, 'test.coordination.inner'));
  const outer = deployment(kind, competition([inner, echo]));
  const process = await engine.start(
    outer,
    Payload.encode([
      {
        deployment: 'test.coordination.inner',
        input: [1, 2].map(() => ({ deployment: 'demo.sleep', input: { ms: 600_000 }, budget: smallBudget })),
        budget: { steps: 40, effects: 40, signals: 80 },
      },
      { deployment: 'demo.echo', input: { value: 'win' }, budget: smallBudget },
    ]),
    { budget: budget(200, 200, 400) },
  );
  const result = await process.await();
  assert.equal(result.status, 'completed');
  const output = result.output?.decode<any>();
  assert.equal(output.winner.index, 1);
  assert.deepEqual(output.winner.output, { value: 'win' });
  await process.join();
  const members = engine.inspectTree(process.id).processes.map((member) => member.snapshot);
  assert.equal(members.length, 5, 'root, inner, its two sleeps, the echo');
  const loser = members.find((member) => member.deploymentRef.name === 'test.coordination.inner')!;
  assert.deepEqual(output.canceled, [loser.processId.toString()]);
  for (const member of members.filter((member) => member.processId.equals(loser.processId) || member.relation.parentId?.equals(loser.processId) === true)) {
    assert.equal(member.status, 'canceled', `${member.deploymentRef.name} ${member.processId.toString()}`);
    assert.equal(member.termination?.cause, 'parent_cancellation');
  }
  assert.equal(members.filter((member) => member.deploymentRef.name === 'demo.sleep').length, 2);
  await engine.close();
});

test('FirstSuccess (Engine): a predicate that throws is an execution failure, not a protocol violation', async () => {
  const { engine } = setup();
  const throwing = competition([echo], () => {
    throw new Error('the predicate broke');
  });
  const result = await engine.run(deployment(kind, throwing), Payload.encode([{ deployment: 'demo.echo', input: { value: 'x' }, budget: smallBudget }]), { budget: budget(100, 100, 100) });
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.kind, 'execution');
  assert.notEqual(result.termination.failure?.code, 'coordination.protocol.invalid');
  await engine.close();
});
