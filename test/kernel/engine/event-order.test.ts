/**
 * The observable order of one Process's log: an attempt's deltas reach the delta listeners before
 * its settled boundary is committed (so before any committed event that follows), attempt events
 * precede the commit that follows from them, and `agent.process.finished` is the last event.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Dispatcher } from '../../../src/kernel/definition.js';
import type { Delta } from '../../../src/kernel/delta.js';
import { eventRules, type Event } from '../../../src/kernel/event.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { echoDefinition } from '../../../src/testing/example-definitions.js';
import { deploy, RecordingCommitter, settle } from './harness.js';
import { Engine } from '../../../src/kernel/engine.js';

/** One merged, observed sequence: events by name, deltas by sequence, commits when they are issued. */
function observedLog() {
  const log: string[] = [];
  const committer = new RecordingCommitter();
  committer.intercept = (record) => {
    log.push(`commit ${record.kind}`);
    return undefined;
  };
  return {
    log,
    committer,
    onEvent: (event: Event) => void log.push(event.name),
    // A lagging listener: each delivery yields a macrotask turn before it records the delta.
    onDelta: async (delta: Delta) => {
      await settle();
      log.push(`delta ${delta.effectSequence}`);
    },
  };
}

/** Emits `count` deltas without yielding, then settles at once (the fastest possible dispatch). */
function burstDispatcher(count: number): Dispatcher {
  return {
    async dispatch(request, emit) {
      for (let index = 1; index <= count; index += 1) emit?.(Payload.encode({ index }));
      return Settlement.of('succeeded', request.effect.payload);
    },
    replayPolicy: () => 'never',
  };
}

test('an attempt\'s deltas are delivered before its settled boundary is committed; attempt events precede their commits; process.finished is last', async () => {
  const observed = observedLog();
  const deltasAtSettledCommit: number[] = [];
  const base = observed.committer.intercept;
  observed.committer.intercept = (record) => {
    // The commit gate: what the delta listeners had received when the settled boundary was issued.
    if (record.kind === 'settled') deltasAtSettledCommit.push(observed.log.filter((entry) => entry.startsWith('delta')).length);
    return base(record);
  };
  const engine = new Engine({
    committer: observed.committer,
    eventListeners: [observed.onEvent],
    deltaListeners: [{ onDelta: observed.onDelta }],
  });
  const result = await engine.run(deploy(echoDefinition, burstDispatcher(4), 'event-order'), Payload.encode({ value: 'x' }));
  assert.equal(result.status, 'completed');
  assert.deepEqual(deltasAtSettledCommit, [4]);
  assert.deepEqual(observed.log, [
    'commit start',
    'agent.process.started',
    'agent.step.started',
    'agent.step.prepared',
    'agent.step.finished',
    'commit pending',
    'agent.effect.started',
    'delta 1',
    'delta 2',
    'delta 3',
    'delta 4',
    'agent.effect.finished',
    'commit settled', // it adopts the batch: its agent.step.committed follows it
    'agent.step.committed',
    'agent.step.started',
    'agent.step.finished',
    'commit terminal',
    'agent.step.committed',
    'agent.process.finished',
  ]);
  const committedEvents = observed.log.filter((entry) => entry in eventRules && eventRules[entry as keyof typeof eventRules].phase === 'committed');
  assert.equal(committedEvents.at(-1), 'agent.process.finished');
  assert.equal(observed.log.at(-1), 'agent.process.finished');
  await engine.close();
});

test('a failing Step publishes agent.step.finished before the terminal commit and process.finished last', async () => {
  const observed = observedLog();
  const engine = new Engine({ committer: observed.committer, eventListeners: [observed.onEvent] });
  const failing: Dispatcher = {
    dispatch: async () => Settlement.of('failed', Payload.encode({ error: 'no' })),
    replayPolicy: () => 'never',
  };
  const result = await engine.run(deploy(echoDefinition, failing, 'event-order-failing'), Payload.encode({ value: 'x' }));
  assert.equal(result.status, 'failed');
  const tail = observed.log.slice(observed.log.lastIndexOf('agent.step.started'));
  assert.deepEqual(tail, ['agent.step.started', 'agent.step.finished', 'commit terminal', 'agent.step.committed', 'agent.process.finished']);
  await engine.close();
});
