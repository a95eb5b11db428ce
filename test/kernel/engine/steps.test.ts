import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClassifiedError } from '../../../src/kernel/classified-error.js';
import type { ExecutionState } from '../../../src/kernel/execution-state.js';
import { Failure } from '../../../src/kernel/failure.js';
import type { ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Schema } from '../../../src/kernel/schema.js';
import { Transition } from '../../../src/kernel/transition.js';
import { progressDefinition } from '../../../src/testing/example-definitions.js';
import {
  committedStatus,
  deferred,
  deploy,
  hostRequest,
  ProgramDefinition,
  published,
  settle,
  setup,
  type ProgramOptions,
  type Setup,
} from './harness.js';

const anySignal = Schema.of(true);

function snapshotOf(context: Setup, id: ProcessId) {
  return context.engine.inspectTree(id).processes[0]!.snapshot;
}

async function runProgram(options: ProgramOptions) {
  const definition = new ProgramDefinition(options);
  const context = setup();
  const result = await context.engine.run(deploy(definition), Payload.encode({}));
  return { definition, context, result };
}

function programState(state: ExecutionState): { step: number; note?: string } {
  return state.decode('test.program');
}

test('a thrown Error fails the Process with execution.step.failed', async () => {
  const { result } = await runProgram({
    step: () => {
      throw new Error('the model answered gibberish');
    },
  });
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.cause, 'execution_failure');
  assert.equal(result.termination.failure?.kind, 'execution');
  assert.equal(result.termination.failure?.code, 'execution.step.failed');
  assert.equal(result.usage.committedSteps, 0n);
});

test('an error wrapping a ClassifiedError keeps its kind and code', async () => {
  const sentinel = new ClassifiedError('contract', 'test.plan.invalid', 'the plan is invalid');
  const { result } = await runProgram({
    step: () => {
      throw sentinel.wrap('reading plan 3');
    },
  });
  assert.equal(result.termination.cause, 'contract_failure');
  assert.equal(result.termination.failure?.kind, 'contract');
  assert.equal(result.termination.failure?.code, 'test.plan.invalid');
  assert.equal(result.termination.failure?.message, 'reading plan 3: the plan is invalid');
});

test('a thrown non-Error value is a panic', async () => {
  const { result } = await runProgram({
    step: () => {
      throw 'bare string';
    },
  });
  assert.equal(result.termination.cause, 'panic');
  assert.equal(result.termination.failure?.kind, 'panic');
});

test('a failed Step never swallows input: the consumption cursor stays', async () => {
  const gate = deferred();
  const definition = new ProgramDefinition({
    signalSchema: anySignal,
    async step({ step }) {
      if (step === 1) return Transition.pause(0, 'idle');
      await gate.promise;
      throw new Error('cannot handle it');
    },
  });
  const context = setup();
  const process = await context.engine.start(deploy(definition), Payload.encode({}));
  await committedStatus(context.recorder, process.id, 'paused');
  await process.deliverSignals(hostRequest('a', 1), hostRequest('b', 2));
  await process.resume();
  gate.resolve();
  const result = await process.await();
  assert.equal(result.termination.failure?.code, 'execution.step.failed');
  const snapshot = snapshotOf(context, process.id);
  assert.deepEqual(snapshot.signalReceipts().map((receipt) => receipt.consumed), [false, false]);
  assert.equal(programState(snapshot.committedExecutionState).step, 1, 'the failed candidate is discarded');
});

test('a Fail transition commits its candidate and its consumed prefix', async () => {
  const failure = Failure.create('external', 'test.upstream.refused', 'the upstream refused the request');
  const definition = new ProgramDefinition({
    signalSchema: anySignal,
    step: ({ step }) => (step === 1 ? Transition.pause(0, 'idle') : Transition.fail(1, failure)),
  });
  const context = setup();
  const process = await context.engine.start(deploy(definition), Payload.encode({}));
  await committedStatus(context.recorder, process.id, 'paused');
  await process.deliverSignals(hostRequest('a', 1), hostRequest('b', 2));
  await process.resume();
  const result = await process.await();
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.cause, 'external_failure');
  assert.ok(result.termination.failure?.equals(failure));
  const snapshot = snapshotOf(context, process.id);
  assert.deepEqual(snapshot.signalReceipts().map((receipt) => receipt.consumed), [true, false]);
  assert.equal(programState(snapshot.committedExecutionState).step, 2);
  assert.equal(result.usage.committedSteps, 2n);
});

test('consumption is a prefix of the window; input arriving during a Step belongs to a later window', async () => {
  const windows: string[][] = [];
  const third = deferred();
  const thirdStarted = deferred();
  const definition = new ProgramDefinition({
    signalSchema: anySignal,
    async step({ step, signals }) {
      windows.push(signals.map((signal) => signal.id.toString()));
      if (step === 3) {
        thirdStarted.resolve();
        await third.promise;
      }
      return signals.length === 0 ? Transition.pause(0, 'idle') : Transition.continue(1);
    },
  });
  const context = setup();
  const process = await context.engine.start(deploy(definition), Payload.encode({}));
  await committedStatus(context.recorder, process.id, 'paused');
  await process.deliverSignals(hostRequest('a', 1), hostRequest('b', 2), hostRequest('c', 3));
  await process.resume();
  await thirdStarted.promise;
  await process.deliverSignals(hostRequest('d', 4));
  third.resolve();
  await committedStatus(context.recorder, process.id, 'paused', 2);
  assert.deepEqual(windows, [[], ['a', 'b', 'c'], ['b', 'c'], ['c', 'd'], ['d'], []]);
  await process.kill('done');
});

test('consuming more than the window is execution.transition.invalid', async () => {
  const { result } = await runProgram({ step: () => Transition.continue(1) });
  assert.equal(result.termination.failure?.kind, 'contract');
  assert.equal(result.termination.failure?.code, 'execution.transition.invalid');
});

test('completion output is validated against the descriptor: execution.output.invalid', async () => {
  const { result } = await runProgram({
    outputSchema: Schema.of({ type: 'string' }),
    step: () => Transition.complete(0, Payload.encode(42)),
  });
  assert.equal(result.termination.failure?.kind, 'contract');
  assert.equal(result.termination.failure?.code, 'execution.output.invalid');
  assert.equal(result.output, undefined);
});

test('a candidate that cannot be captured is execution.snapshot.failed', async () => {
  const { result } = await runProgram({
    step: ({ step }) => (step < 3 ? Transition.continue(0) : Transition.complete(0, Payload.encode('done'))),
    onSnapshot(state) {
      if (state.step === 2) throw new Error('cyclic state');
    },
  });
  assert.equal(result.termination.failure?.code, 'execution.snapshot.failed');
  assert.equal(result.usage.committedSteps, 1n);
});

test('a candidate its Definition cannot restore is execution.snapshot.unrestorable and never adopted', async () => {
  const { result, context } = await runProgram({
    step: ({ step }) => (step < 3 ? Transition.continue(0) : Transition.complete(0, Payload.encode('done'))),
    onRestore(state) {
      if (state.step === 2) throw new Error('unknown phase');
    },
  });
  assert.equal(result.termination.failure?.code, 'execution.snapshot.unrestorable');
  assert.equal(result.usage.committedSteps, 1n);
  assert.equal(programState(snapshotOf(context, result.processId).committedExecutionState).step, 1);
});

test('restore-before-adopt is unconditional: every Step candidate is restored before the next Step', async () => {
  const { definition, result } = await runProgram({
    step: ({ step }) => (step < 4 ? Transition.continue(0) : Transition.complete(0, Payload.encode('done'))),
  });
  assert.equal(result.status, 'completed');
  const log = definition.calls.map((entry) => ('step' in entry ? `${entry.call}:${entry.step}` : entry.call));
  for (let step = 1; step <= 4; step += 1) {
    const ran = log.indexOf(`step:${step}`);
    const next = step < 4 ? log.indexOf(`step:${step + 1}`) : log.length;
    const between = log.slice(ran, next);
    assert.ok(between.includes(`snapshot:${step}`), `Step ${step} is captured: ${between.join(' ')}`);
    assert.ok(between.indexOf(`restore:${step}`) > between.indexOf(`snapshot:${step}`), `Step ${step} is restored: ${between.join(' ')}`);
  }
  // The initial state is checked the same way before the Process is published.
  assert.deepEqual(log.slice(0, 3), ['start', 'snapshot:0', 'restore:0']);
});

test('a checkpoint is acknowledged before the Process runs its next Step', async () => {
  const context = setup();
  const gate = deferred();
  context.committer.intercept = (record) => (record.kind === 'progress' ? { before: () => gate.promise } : undefined);
  let kindsAtSecondStep: string[] | undefined;
  context.recorder.awaitEvent((event) => event.name === 'agent.step.started' && event.stepSequence === 2n).then(() => {
    kindsAtSecondStep = context.committer.kinds();
  });
  const process = await context.engine.start(deploy(progressDefinition), Payload.encode({ value: 'v' }));
  await context.committer.arrival((record) => record.kind === 'progress');
  await settle();
  assert.equal(context.recorder.events().filter((event) => event.name === 'agent.step.started').length, 1);
  gate.resolve();
  const result = await process.await();
  assert.equal(result.status, 'completed');
  await published(context.recorder, process.id, 'agent.process.finished');
  assert.deepEqual(kindsAtSecondStep, ['start', 'progress']);
});
