/**
 * The collaboration's modes and facts through a real Engine: `wait` turns come after a task
 * drained, `continue` turns while tasks run (and what drained meanwhile shows in the next Turn),
 * `complete` cancels what still runs, and every refusal or failure is an explicit fact.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { completionCancelReason } from '../../../strategies/collaboration/collaboration.js';
import type { Decision } from '../../../strategies/collaboration/schemas.js';
import { Budget } from '../../../src/kernel/budget.js';
import { Engine } from '../../../src/kernel/engine.js';
import { Failure } from '../../../src/kernel/failure.js';
import { Quota } from '../../../src/kernel/quota.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { Payload } from '../../../src/kernel/payload.js';
import { echoWorker, Finishes, Gates, gatedWorker, newEngine, scripted, taskSummary } from './harness.js';

const complete = (output: unknown): Decision => ({ mode: 'complete', state: {}, output });

test('wait: each next turn comes after at least one outstanding task drained; complete returns the output', async () => {
  const run = scripted({
    workers: [echoWorker()],
    decide(turn) {
      if (turn.number === 1) {
        return { mode: 'wait', state: { asked: 2 }, tasks: ['a', 'b'].map((key) => ({ key, worker: 'demo.echo', input: { value: key } })) };
      }
      if (turn.tasks.every((task) => task.outcome !== undefined)) {
        const values = turn.tasks.map((task) => (task.outcome?.output as { value: string }).value).sort();
        return complete({ values, state: turn.state });
      }
      return { mode: 'wait', state: turn.state };
    },
  });
  const engine = newEngine();
  const result = await engine.run(run.deployment, Payload.encode({}));
  assert.equal(result.status, 'completed', result.json());
  assert.deepEqual(result.output?.decode(), { values: ['a', 'b'], state: { asked: 2 } });
  const drained = run.turns.map((turn) => turn.tasks.filter((task) => task.outcome !== undefined).length);
  assert.equal(drained[0], 0);
  for (let index = 1; index < drained.length; index += 1) {
    assert.ok((drained[index] as number) > (drained[index - 1] as number), `turn ${index + 1} follows a drained task: ${drained}`);
  }
  assert.deepEqual(run.turns.map((turn) => turn.number), run.turns.map((_, index) => index + 1));
  assert.ok(run.turns.length <= 3);
  await engine.close();
});

test('continue: the next turn starts while the task runs; what drained during that turn is in the one after', async () => {
  const gates = new Gates();
  const run = scripted({
    workers: [gatedWorker(gates)],
    gates,
    consult: (turn) => (turn.number === 2 ? { gate: 'turn-2' } : undefined),
    decide(turn) {
      if (turn.number === 1) return { mode: 'continue', state: {}, tasks: [{ key: 'slow', worker: 'test.worker.gated', input: { gate: 'task', value: 'v' } }] };
      if (turn.number === 2) return { mode: 'continue', state: {} };
      return complete({ seen: taskSummary(turn) });
    },
  });
  const finishes = new Finishes();
  const engine = newEngine(finishes);
  const process = await engine.start(run.deployment, Payload.encode({}));
  // Turn 2 runs (it consults its gate) while the task is still at its own gate.
  await Promise.all([gates.started('task'), gates.started('turn-2')]);
  gates.open('task');
  // The task drains while turn 2 is still running: only then may turn 2 finish.
  await finishes.of('slow');
  gates.open('turn-2');
  const result = await process.await();
  assert.equal(result.status, 'completed', result.json());
  assert.deepEqual(taskSummary(run.turns[1]!), ['slow:started:-'], 'turn 2 began while the task ran');
  assert.deepEqual(result.output?.decode(), { seen: ['slow:started:completed'] }, 'turn 3 shows the outcome that arrived during turn 2');
  assert.deepEqual(run.turns[2]?.tasks[0]?.outcome, { status: 'completed', output: { value: 'v' } });
  await engine.close();
});

test('complete cancels the tasks still running, with the completion reason', async () => {
  const gates = new Gates();
  const run = scripted({
    workers: [gatedWorker(gates)],
    decide(turn) {
      if (turn.number === 1) return { mode: 'continue', state: {}, tasks: [{ key: 'never', worker: 'test.worker.gated', input: { gate: 'never', value: 'x' } }] };
      return complete({ done: true });
    },
  });
  const engine = newEngine();
  const process = await engine.start(run.deployment, Payload.encode({}));
  const result = await process.await();
  assert.equal(result.status, 'completed', result.json());
  await process.join();
  const task = engine.inspectTree(process.id).processes.find((entry) => entry.snapshot.relation.childKey?.toString() === 'never');
  const termination = task?.snapshot.termination;
  assert.equal(termination?.status, 'canceled');
  assert.equal(termination?.cause, 'parent_cancellation');
  assert.equal(termination?.reason, completionCancelReason);
  await engine.close();
});

test('wait with nothing outstanding: a failed start triggers the next turn; nothing at all fails the collaboration', async () => {
  const run = scripted({
    workers: [echoWorker()],
    decide(turn) {
      if (turn.number === 1) return { mode: 'wait', state: {}, tasks: [{ key: 'bad', worker: 'demo.echo', input: { value: 7 } }] };
      if (turn.number === 2) return { mode: 'wait', state: { seen: taskSummary(turn) } };
      return complete({});
    },
  });
  const engine = newEngine();
  const result = await engine.run(run.deployment, Payload.encode({}));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.code, 'collaboration.wait.nothing_outstanding');
  assert.deepEqual(taskSummary(run.turns[1]!), ['bad:engine.child.input.invalid:-'], 'the Engine-rejected start is the fact turn 2 saw');
  assert.equal(run.turns[1]?.tasks[0]?.start && 'failure' in run.turns[1].tasks[0].start ? run.turns[1].tasks[0].start.failure.kind : undefined, 'contract');
  await engine.close();
});

test('a failed coordinator turn fails the collaboration with its kind, code and diagnostic unchanged', async () => {
  const run = scripted({
    workers: [echoWorker()],
    decide(turn) {
      if (turn.number === 1) return { mode: 'continue', state: {}, tasks: [{ key: 'a', worker: 'demo.echo', input: { value: 'a' } }] };
      return Failure.create('external', 'test.coordinator.model_unavailable', 'the model did not answer in turn 2');
    },
  });
  const engine = newEngine();
  const result = await engine.run(run.deployment, Payload.encode({}));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.cause, 'external_failure');
  assert.deepEqual(result.termination.failure?.toWire(), { kind: 'external', code: 'test.coordinator.model_unavailable', message: 'the model did not answer in turn 2' });
  await engine.close();
});

test('a complete decision without output, or with output outside the schema, or with actions, is a contract failure', async () => {
  for (const decision of [
    { mode: 'complete', state: {} },
    { mode: 'complete', state: {}, output: 'not an object' },
    { mode: 'complete', state: {}, output: {}, tasks: [{ key: 'a', worker: 'demo.echo', input: { value: 'a' } }] },
    { mode: 'continue', state: {}, output: {} },
    { mode: 'continue', state: 'not an object' },
  ] as Decision[]) {
    const run = scripted({ workers: [echoWorker()], decide: () => decision });
    const engine = newEngine();
    const result = await engine.run(run.deployment, Payload.encode({}));
    assert.equal(result.status, 'failed', JSON.stringify(decision));
    assert.equal(result.termination.failure?.kind, 'contract');
    assert.equal(result.termination.failure?.code, 'collaboration.decision.invalid', JSON.stringify(decision));
    await engine.close();
  }
});

test('task keys: the reserved turn prefix, a reused key and an unknown worker are refused as facts', async () => {
  const run = scripted({
    workers: [echoWorker()],
    decide(turn) {
      if (turn.number === 1) {
        return {
          mode: 'wait',
          state: {},
          tasks: [
            { key: 'collaboration:turn:2', worker: 'demo.echo', input: { value: 'x' } },
            { key: 'a', worker: 'demo.echo', input: { value: 'a' } },
            { key: 'a', worker: 'demo.echo', input: { value: 'again' } },
            { key: 'b', worker: 'no.such.worker', input: {} },
          ],
        };
      }
      if (turn.number === 2) return { mode: 'wait', state: {}, tasks: [{ key: 'a', worker: 'demo.echo', input: { value: 'follow-up' } }] };
      return complete({ seen: taskSummary(turn) });
    },
  });
  const engine = newEngine();
  const result = await engine.run(run.deployment, Payload.encode({}));
  assert.equal(result.status, 'completed', result.json());
  assert.deepEqual(result.output?.decode(), {
    seen: [
      'collaboration:turn:2:collaboration.task.key_reserved:-',
      'a:started:completed',
      'a:collaboration.task.key_reused:-',
      'b:collaboration.task.worker_unknown:-',
      'a:collaboration.task.key_reused:-',
    ],
  });
  await engine.close();
});

test('a turn that ends without a Failure (canceled by the host) fails the collaboration with collaboration.coordinator.not_completed', async () => {
  const gates = new Gates();
  const run = scripted({ workers: [echoWorker()], gates, consult: () => ({ gate: 'turn-1' }), decide: () => ({ mode: 'complete', state: {}, output: {} }) });
  const engine = newEngine();
  const process = await engine.start(run.deployment, Payload.encode({}));
  await gates.started('turn-1');
  const turn = engine.inspectTree(process.id).processes.find((entry) => entry.snapshot.relation.childKey?.toString() === 'collaboration:turn:1');
  assert.ok(turn !== undefined);
  await engine.process(turn.snapshot.processId)?.requestCancellation('the operator stopped this turn');
  const result = await process.await();
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.code, 'collaboration.coordinator.not_completed');
  assert.match(result.termination.failure?.message ?? '', /turn 1 ended canceled: the operator stopped this turn/);
  await engine.close();
});

test('a turn the Engine refuses to start fails the collaboration with the Engine failure unchanged', async () => {
  const run = scripted({ workers: [echoWorker()], decide: () => ({ mode: 'complete', state: {}, output: {} }) });
  // The root may use 8 signals in all; the coordinator's grant asks for 32.
  const engine = new Engine({ committer: new MemoryTreeCommitter(), budget: Budget.of({ steps: Quota.unlimited(), effects: Quota.unlimited(), signals: Quota.of(8) }) });
  const result = await engine.run(run.deployment, Payload.encode({}));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.code, 'engine.child.budget_exhausted', result.json());
  assert.equal(run.turns.length, 0);
  await engine.close();
});
