/**
 * Issue 10, fix 5 (observation half): a Process whose event publication sequence reaches 2^64−1
 * omits every later event and counts it in `droppedEvents`; its execution is unchanged. The
 * sequence is per activation and never in a snapshot, so this drives a TreeRuntime directly and
 * starts its Process's sequence near the end.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { systemClock } from '../../../src/kernel/clock.js';
import { TreeIncarnationId } from '../../../src/kernel/identity.js';
import { DeltaPipeline, EventPublisher, ObservationFailureLog } from '../../../src/kernel/observation.js';
import { Payload } from '../../../src/kernel/payload.js';
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

test('events past the last process sequence are dropped and counted; the Process still completes', async () => {
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
    0n,
    new Map([[started.id.toString(), program]]),
  );
  await runtime.activate(head.incarnationId, head.digest, []);
  const process = runtime.process(started.id)!;
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
