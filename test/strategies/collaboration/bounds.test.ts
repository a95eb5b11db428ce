/**
 * The collaboration's bounds (maxTurns, maxTasks, maxConcurrentTasks, maxControlsPerTurn), its
 * controls (signal_child / cancel_child receipts as facts) and its definition-time checks.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collaborationDefinition } from '../../../strategies/collaboration/collaboration.js';
import { coordinatorDefinition } from '../../../strategies/collaboration/coordinator.js';
import type { Decision, Turn } from '../../../strategies/collaboration/schemas.js';
import { echoDefinition } from '../../../strategies/demo/echo.js';
import { Descriptor } from '../../../src/kernel/descriptor.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Schema } from '../../../src/kernel/schema.js';
import { machineDefinition } from '../../../strategies/internal/machine.js';
import { Transition } from '../../../src/kernel/transition.js';
import { deployment, echoWorker, Gates, gatedWorker, newEngine, outputSchema, scripted, stateSchema, taskSummary, worker } from './harness.js';

const complete = (turn: Turn): Decision => ({ mode: 'complete', state: {}, output: { seen: taskSummary(turn), controls: turn.controls } });
const echo = (key: string, value: unknown = key) => ({ key, worker: 'demo.echo', input: { value } });

test('maxTurns: a decision to go on in the last allowed turn fails with collaboration.turns.exhausted', async () => {
  const run = scripted({ workers: [echoWorker()], limits: { maxTurns: Quota.of(3) }, decide: () => ({ mode: 'continue', state: {} }) });
  const engine = newEngine();
  const result = await engine.run(run.deployment, Payload.encode({}));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.code, 'collaboration.turns.exhausted');
  assert.equal(result.termination.failure?.kind, 'execution');
  assert.deepEqual(run.turns.map((turn) => turn.number), [1, 2, 3]);
  await engine.close();
});

test('maxTurns 0: the collaboration fails before any turn', async () => {
  const run = scripted({ workers: [echoWorker()], limits: { maxTurns: Quota.of(0) }, decide: () => ({ mode: 'continue', state: {} }) });
  const engine = newEngine();
  const result = await engine.run(run.deployment, Payload.encode({}));
  assert.equal(result.termination.failure?.code, 'collaboration.turns.exhausted');
  assert.equal(run.turns.length, 0);
  await engine.close();
});

test('maxTasks counts rejected starts: after one rejected and one admitted start a third request is refused', async () => {
  const run = scripted({
    workers: [echoWorker()],
    limits: { maxTasks: Quota.of(2) },
    decide(turn) {
      if (turn.number === 1) return { mode: 'wait', state: {}, tasks: [echo('rejected', 42), echo('admitted')] };
      if (turn.number === 2) return { mode: 'wait', state: {}, tasks: [echo('third')] };
      return complete(turn);
    },
  });
  const engine = newEngine();
  const result = await engine.run(run.deployment, Payload.encode({}));
  assert.equal(result.status, 'completed', result.json());
  assert.deepEqual((result.output?.decode() as { seen: string[] }).seen, [
    'rejected:engine.child.input.invalid:-',
    'admitted:started:completed',
    'third:collaboration.task.limit_exceeded:-',
  ]);
  await engine.close();
});

test('maxConcurrentTasks refuses a start beyond the bound; a drained outcome frees its place', async () => {
  const gates = new Gates();
  const gated = (key: string) => ({ key, worker: 'test.worker.gated', input: { gate: key, value: key } });
  const run = scripted({
    workers: [gatedWorker(gates)],
    limits: { maxConcurrentTasks: 1 },
    decide(turn) {
      if (turn.number === 1) return { mode: 'wait', state: {}, tasks: [gated('first'), gated('second')] };
      if (turn.number === 2) return { mode: 'wait', state: {}, tasks: [gated('third')] };
      return complete(turn);
    },
  });
  const engine = newEngine();
  const process = await engine.start(run.deployment, Payload.encode({}));
  // Turn 2 only comes after `first` drained; its own start then fits the bound again.
  await gates.started('first');
  gates.open('first');
  await gates.started('third');
  gates.open('third');
  const result = await process.await();
  assert.equal(result.status, 'completed', result.json());
  assert.deepEqual(taskSummary(run.turns[1]!), ['first:started:completed', 'second:collaboration.task.concurrency_exceeded:-']);
  assert.deepEqual((result.output?.decode() as { seen: string[] }).seen, [
    'first:started:completed',
    'second:collaboration.task.concurrency_exceeded:-',
    'third:started:completed',
  ]);
  await engine.close();
});

test('maxControlsPerTurn: controls beyond the bound get refused receipts; the others compile to cancel_child / signal_child', async () => {
  const gates = new Gates();
  const run = scripted({
    workers: [gatedWorker(gates)],
    limits: { maxControlsPerTurn: 2 },
    decide(turn) {
      if (turn.number === 1) return { mode: 'continue', state: {}, tasks: [{ key: 'job', worker: 'test.worker.gated', input: { gate: 'job', value: 'v' } }] };
      if (turn.number === 2) {
        return {
          mode: 'wait',
          state: {},
          controls: [
            { task: 'job', signal: { id: 'nudge-1', payload: { hint: 'faster' } } },
            { task: 'job', cancelReason: 'no longer needed' },
            { task: 'job', cancelReason: 'beyond the bound' },
            { task: 'nobody', cancelReason: 'unknown task' },
          ],
        };
      }
      return complete(turn);
    },
  });
  const engine = newEngine();
  const result = await engine.run(run.deployment, Payload.encode({}));
  assert.equal(result.status, 'completed', result.json());
  const output = result.output?.decode() as { seen: string[]; controls: Array<{ control: unknown; result: { status: string; failure?: { code: string } } }> };
  assert.deepEqual(output.seen, ['job:started:canceled'], 'the cancel reached the task; its drained outcome is a fact');
  assert.deepEqual(
    output.controls.map((receipt) => `${receipt.result.status}:${receipt.result.failure?.code ?? ''}`),
    [
      // The gated worker admits no unaddressed signal: the Engine's rejection is the receipt.
      'failed:engine.child.signal.rejected',
      'succeeded:',
      'failed:collaboration.control.limit_exceeded',
      'failed:collaboration.control.limit_exceeded',
    ],
  );
  await engine.close();
});

test('a control naming an unknown task, or a task that never started, is refused', async () => {
  const run = scripted({
    workers: [echoWorker()],
    decide(turn) {
      if (turn.number === 1) return { mode: 'wait', state: {}, tasks: [echo('bad', 1)], controls: [{ task: 'nobody', cancelReason: 'x' }] };
      if (turn.number === 2) return { mode: 'continue', state: { controls: turn.controls }, controls: [{ task: 'bad', cancelReason: 'x' }] };
      return complete(turn);
    },
  });
  const engine = newEngine();
  const result = await engine.run(run.deployment, Payload.encode({}));
  assert.equal(result.status, 'completed', result.json());
  const codes = (receipts: Turn['controls']) => receipts.map((receipt) => receipt.result?.failure?.code);
  assert.deepEqual(codes(run.turns[1]!.controls), ['collaboration.control.task_unknown']);
  assert.deepEqual(codes(run.turns[2]!.controls), ['collaboration.control.task_not_started']);
  await engine.close();
});

test('definition time: the coordinator must take exactly Turn and return exactly Decision; workers are unique by name; bounds are > 0', () => {
  const coordinator = deployment('test.coordinator', coordinatorDefinition({ name: 'test.coordinator', description: 'c', decide: () => ({ mode: 'continue', state: {} }) }));
  const base = {
    name: 'test.collaboration',
    description: 'A collaboration under test.',
    coordinator: worker(coordinator),
    workers: [worker(echoWorker())],
    stateSchema,
    outputSchema,
    maxTurns: Quota.of(4),
    maxTasks: Quota.of(4),
    maxConcurrentTasks: 2,
    maxControlsPerTurn: 2,
  };
  assert.doesNotThrow(() => collaborationDefinition(base));
  const wrongInput = deployment('test.wrong', machineDefinition({
    descriptor: Descriptor.create({ name: 'test.wrong', description: 'w', inputSchema: Schema.of({ type: 'object' }), outputSchema: coordinator.descriptor.outputSchema }),
    stateKind: 'test.wrong',
    initial: () => ({}),
    check: (value) => value as object,
    step: (state) => ({ state, transition: Transition.fail(0, undefined as never) }),
  }));
  assert.throws(() => collaborationDefinition({ ...base, coordinator: worker(wrongInput) }), /must accept exactly the collaboration Turn schema/);
  assert.throws(() => collaborationDefinition({ ...base, coordinator: worker(echoWorker()) }), /must accept exactly the collaboration Turn schema/);
  const wrongOutput = deployment('test.wrong.output', machineDefinition({
    descriptor: Descriptor.create({ name: 'test.wrong.output', description: 'w', inputSchema: coordinator.descriptor.inputSchema, outputSchema: Schema.of({}) }),
    stateKind: 'test.wrong.output',
    initial: () => ({}),
    check: (value) => value as object,
    step: (state) => ({ state, transition: Transition.fail(0, undefined as never) }),
  }));
  assert.throws(() => collaborationDefinition({ ...base, coordinator: worker(wrongOutput) }), /must return exactly the collaboration Decision schema/);
  const twin = deployment('demo.echo.twin', echoDefinition);
  assert.throws(() => collaborationDefinition({ ...base, workers: [worker(echoWorker()), worker(twin)] }), /descriptor name demo\.echo is bound twice/);
  assert.throws(() => collaborationDefinition({ ...base, maxConcurrentTasks: 0 }), /maxConcurrentTasks must be a uint32 > 0/);
  assert.throws(() => collaborationDefinition({ ...base, maxControlsPerTurn: 0 }), /maxControlsPerTurn must be a uint32 > 0/);
  // The child bindings are the coordinator and the workers, in that order.
  const definition = collaborationDefinition(base);
  assert.deepEqual(definition.childDeployments().map((binding) => binding.descriptor.name), ['test.coordinator', 'demo.echo']);
});
