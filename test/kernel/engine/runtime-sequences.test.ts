/**
 * Issue 10, fix 5, for the sequences of one writer activation: a Process whose event publication
 * sequence reaches 2^64−1 omits every later event and counts it in `droppedEvents`, its execution
 * unchanged; a writer whose commit sequence is exhausted stops (a restore restarts it) instead of
 * building an invalid commit. Both sequences restart with each activation and are never in a
 * snapshot, so these drive a TreeRuntime directly and start a sequence near its end.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { systemClock } from '../../../src/kernel/clock.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { TreeIncarnationId } from '../../../src/kernel/identity.js';
import { DeltaPipeline, EventPublisher, ObservationFailureLog } from '../../../src/kernel/observation.js';
import { Payload } from '../../../src/kernel/payload.js';
import { RuntimeError } from '../../../src/kernel/runtime-error.js';
import { Transition } from '../../../src/kernel/transition.js';
import { TreeRuntime } from '../../../src/kernel/tree-runtime.js';
import { maxUint64 } from '../../../src/kernel/wire.js';
import { ObservationRecorder } from '../../../src/testing/scripted-dispatcher.js';
import { deploy, ProgramDefinition, published, RecordingCommitter, setup } from './harness.js';

const program = deploy(
  new ProgramDefinition({
    name: 'test.event_sequence',
    step: ({ step }) => (step === 1 ? Transition.pause(0, 'held') : Transition.complete(0, Payload.encode({ done: true }))),
  }),
  undefined,
  'event-sequence',
);

/** A paused head of `program` and a fresh TreeRuntime over it (not yet activated or begun). */
async function pausedRuntime(sequence: bigint) {
  const first = setup();
  const started = await first.engine.start(program, Payload.encode({}));
  await published(first.recorder, started.id, 'agent.process.paused');
  const head = await first.engine.captureTree(started.id);
  const failures = new ObservationFailureLog();
  const recorder = new ObservationRecorder();
  const committer = new RecordingCommitter(first.committer.store);
  const runtime = new TreeRuntime(
    {
      committer,
      clock: systemClock,
      events: new EventPublisher([recorder], { failures }),
      deltas: new DeltaPipeline({ failures }),
    },
    head.withIncarnation(TreeIncarnationId.random()),
    sequence,
    new Map([[started.id.toString(), program]]),
  );
  return { head, runtime, process: runtime.process(started.id)!, failures, recorder, committer };
}

test('events past the last process sequence are dropped and counted; the Process still completes', async () => {
  const { head, runtime, process, failures, recorder, committer } = await pausedRuntime(0n);
  await runtime.activate(head.incarnationId, head.digest, []);
  process.eventSequence = maxUint64 - 1n;
  runtime.begin([]);
  await runtime.resume(process);
  const result = await process.result.promise;
  await runtime.whenIdle();

  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { done: true });
  // resume takes the last sequence; step started, step finished, step committed and process
  // finished find none left.
  const events = recorder.events();
  assert.deepEqual(events.map((event) => [event.name, event.processSequence]), [['agent.process.resumed', maxUint64]]);
  assert.equal(failures.snapshot().droppedEvents, 4n);
  assert.equal(committer.acknowledged.at(-1)?.events.length, 0, 'the terminal commit carried no event');
  assert.equal(runtime.stopped, undefined, 'the writer did not stop');
});

test('a writer whose commit sequence is exhausted stops with counter_exhausted before building a commit', async () => {
  const { runtime, process, committer } = await pausedRuntime(maxUint64);
  runtime.begin([]);
  const error = await runtime.resume(process).then(
    () => assert.fail('expected a RuntimeError'),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof RuntimeError, String(error));
  assert.equal(error.causeCode, ErrorCode.counterExhausted);
  assert.equal(committer.attempts.length, 0, 'no commit was attempted');
  await assert.rejects(process.result.promise, RuntimeError);
  assert.equal(process.snapshot.status, 'paused', 'nothing was invented');
});
