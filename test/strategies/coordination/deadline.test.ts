/**
 * Deadline and its dispatcher, on an injected clock: the timer fires when the clock reaches the
 * instant (never before), an instant in the past fires at once, cancellation and shutdown end it
 * (Unknown), and a pending timer is replayed by a restore. Through the Engine, the process completes
 * with the same instant on success and fails `coordination.deadline.interrupted` otherwise.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deadlineInterrupted } from '../../../strategies/coordination/deadline.js';
import {
  type Dispatcher,
  Effect,
  EffectRequest,
  Payload,
  ProcessRelation,
  Settlement,
  type DeltaEmitter,
  type ReplayPolicy,
  type TreeSnapshot,
} from '../../../src/kernel/index.js';
import { type DeadlineClock, deadlineDispatcher } from '../../../src/server/dispatchers/deadline.js';
import { isSettled, published, RecordingCommitter, setup } from '../../kernel/engine/harness.js';
import { deadlineTestDefinition, deployment, pid } from './fixtures.js';

/** A manual clock: timers fire only when the test advances time past them. */
class ManualClock implements DeadlineClock {
  #now: number;
  readonly timers = new Map<number, { at: number; callback: () => void; ms: number }>();
  #next = 0;

  constructor(now: number) {
    this.#now = now;
  }

  now(): number {
    return this.#now;
  }

  setTimer(callback: () => void, ms: number): unknown {
    const handle = ++this.#next;
    this.timers.set(handle, { at: this.#now + ms, callback, ms });
    return handle;
  }

  clearTimer(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves time forward by `ms`, firing every timer that came due (in order). */
  advance(ms: number): void {
    this.#now += ms;
    for (;;) {
      const due = [...this.timers].filter(([, timer]) => timer.at <= this.#now).sort((a, b) => a[1].at - b[1].at)[0];
      if (due === undefined) return;
      this.timers.delete(due[0]);
      due[1].callback();
    }
  }
}

const t0 = Date.parse('2026-12-02T00:00:00Z');
const instant = '2026-12-02T00:00:05Z';

function request(body: unknown): EffectRequest {
  return EffectRequest.create({
    processId: pid,
    relation: ProcessRelation.root(pid),
    deploymentRef: deployment('test.coordination.deadline', deadlineTestDefinition).ref,
    stepSequence: 1n,
    batchIndex: 0,
    effect: Effect.dispatcher(Payload.encode(body)),
  });
}

const timer = (at: string = instant) => request({ operation: 'coordination.deadline', at });
const live = () => new AbortController().signal;

test('deadline dispatcher: fires when the clock reaches the instant, not before', async () => {
  const clock = new ManualClock(t0);
  const pending = deadlineDispatcher({ clock }).dispatch(timer(), undefined, live());
  clock.advance(4_999);
  assert.equal(await isSettled(pending), false);
  clock.advance(1);
  const settlement = await pending;
  assert.equal(settlement.status, 'succeeded');
  assert.deepEqual(settlement.payload.decode(), { at: instant, firedAt: '2026-12-02T00:00:05.000Z' });
  assert.equal(clock.timers.size, 0);
});

test('deadline dispatcher: an instant in the past fires at once (no timer); offsets are honoured', async () => {
  const clock = new ManualClock(t0);
  const past = await deadlineDispatcher({ clock }).dispatch(timer('2026-12-01T23:59:59Z'), undefined, live());
  assert.equal(past.status, 'succeeded');
  assert.equal(clock.timers.size, 0);
  // 01:00:05+01:00 is 00:00:05Z.
  const offset = deadlineDispatcher({ clock }).dispatch(timer('2026-12-02T01:00:05+01:00'), undefined, live());
  assert.equal([...clock.timers.values()][0]?.ms, 5_000);
  clock.advance(5_000);
  assert.equal((await offset).status, 'succeeded');
});

test('deadline dispatcher: an instant beyond the longest timer is reached in hops', async () => {
  const clock = new ManualClock(t0);
  const far = new Date(t0 + 30 * 86_400_000).toISOString();
  const pending = deadlineDispatcher({ clock }).dispatch(timer(far), undefined, live());
  assert.equal([...clock.timers.values()][0]?.ms, 2_147_483_647);
  clock.advance(2_147_483_647);
  assert.equal(await isSettled(pending), false);
  clock.advance(30 * 86_400_000 - 2_147_483_647);
  assert.equal((await pending).status, 'succeeded');
});

test('deadline dispatcher: the dispatch signal and the host shutdown cancel the timer; a malformed request fails definitely; replay is same_identity', async () => {
  const clock = new ManualClock(t0);
  const abort = new AbortController();
  const canceled = deadlineDispatcher({ clock }).dispatch(timer(), undefined, abort.signal);
  abort.abort(new Error('canceled'));
  await assert.rejects(canceled, /canceled/);
  assert.equal(clock.timers.size, 0, 'the timer was cleared');

  const shutdown = new AbortController();
  const held = deadlineDispatcher({ clock, shutdown: shutdown.signal }).dispatch(timer(), undefined, live());
  shutdown.abort(new Error('shutting down'));
  await assert.rejects(held, /shutting down/);

  for (const body of [{ at: instant }, { operation: 'coordination.deadline', at: 'tomorrow' }, { operation: 'coordination.deadline', at: '2026-02-30T00:00:00Z' }]) {
    assert.equal((await deadlineDispatcher({ clock }).dispatch(request(body), undefined, live())).status, 'failed', JSON.stringify(body));
  }
  assert.equal(deadlineDispatcher().replayPolicy(timer().effect), 'same_identity');
});

test('Deadline (Engine): completes with the same instant when the timer fires; the Step reads no clock', async () => {
  const clock = new ManualClock(t0);
  const { engine, recorder } = setup();
  const process = await engine.start(deployment('test.coordination.deadline', deadlineTestDefinition, deadlineDispatcher({ clock })), Payload.encode(instant));
  await published(recorder, process.id, 'agent.effect.started');
  const result = process.await();
  clock.advance(4_000);
  assert.equal(await isSettled(result), false);
  clock.advance(1_000);
  const done = await result;
  assert.equal(done.status, 'completed');
  assert.equal(done.output?.decode(), instant);
  await engine.close();
});

/** A dispatcher that settles every Effect with `status`. */
function settles(status: 'failed' | 'succeeded'): Dispatcher {
  return {
    async dispatch(_request: EffectRequest, _emit: DeltaEmitter | undefined): Promise<Settlement> {
      return Settlement.of(status, Payload.encode({}));
    },
    replayPolicy: (): ReplayPolicy => 'same_identity',
  };
}

test('Deadline (Engine): a timer that does not succeed fails external coordination.deadline.interrupted', async () => {
  const { engine } = setup();
  const failed = await engine.run(deployment('test.coordination.deadline', deadlineTestDefinition, settles('failed')), Payload.encode(instant));
  assert.equal(failed.status, 'failed');
  assert.equal(failed.termination.failure?.kind, 'external');
  assert.equal(failed.termination.failure?.code, deadlineInterrupted);

  // A timer ended by shutdown is Unknown; adjudicated as failed it is an interruption too.
  const clock = new ManualClock(t0);
  const shutdown = new AbortController();
  const { engine: other, recorder } = setup();
  const process = await other.start(deployment('test.coordination.deadline', deadlineTestDefinition, deadlineDispatcher({ clock, shutdown: shutdown.signal })), Payload.encode(instant));
  await published(recorder, process.id, 'agent.effect.started');
  shutdown.abort(new Error('stopping'));
  // The capture returns the acknowledged head once the in-flight dispatch settled: the barrier.
  await other.captureTree(process.id);
  const unknown = other.inspectTree(process.id).processes[0]!.snapshot.unknownEffectIds()[0];
  assert.ok(unknown !== undefined, 'the aborted timer is Unknown, not failed');
  await process.resolveUnknownEffect(unknown, Settlement.of('failed', Payload.encode({ reason: 'operator' })));
  const interrupted = await process.await();
  assert.equal(interrupted.termination.failure?.code, deadlineInterrupted);
  await engine.close();
  await other.close();
});

test('Deadline (Engine): a restore replays the pending timer under its identity; it fires at the same instant', async () => {
  const first = setup();
  const stalled = new ManualClock(t0);
  const stop = new AbortController();
  const process = await first.engine.start(
    deployment('test.coordination.deadline', deadlineTestDefinition, deadlineDispatcher({ clock: stalled, shutdown: stop.signal })),
    Payload.encode(instant),
  );
  await published(first.recorder, process.id, 'agent.effect.started');
  // The acknowledged head with the timer pending, as a crash leaves it (a capture would wait for the timer).
  const head = (await first.committer.store.loadTree(process.id)) as TreeSnapshot;
  assert.equal(head.process(process.id)?.prepared?.effects()[0]?.phase, 'pending');

  // Another writer, a second later: the replayed timer waits for the same instant, not for a new delay.
  const later = new ManualClock(t0 + 1_000);
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(deployment('test.coordination.deadline', deadlineTestDefinition, deadlineDispatcher({ clock: later })), head);
  await published(second.recorder, restored.id, 'agent.effect.started');
  const pending = restored.await();
  later.advance(3_999);
  assert.equal(await isSettled(pending), false, 'not before the instant');
  later.advance(1);
  const result = await pending;
  assert.equal(result.status, 'completed');
  assert.equal(result.output?.decode(), instant);
  const started = second.recorder.events().filter((event) => event.name === 'agent.effect.started');
  assert.equal(started.length, 1, 'the restored writer dispatched the timer once');
  assert.equal(started[0]?.effectId?.toString(), head.process(process.id)?.prepared?.effects()[0]?.id.toString(), 'under the same identity');
  stop.abort(new Error('the fenced writer stops'));
  await second.engine.close();
});

test('Deadline (Engine): a restore after the instant fires the replayed timer at once', async () => {
  const first = setup();
  const stop = new AbortController();
  const process = await first.engine.start(
    deployment('test.coordination.deadline', deadlineTestDefinition, deadlineDispatcher({ clock: new ManualClock(t0), shutdown: stop.signal })),
    Payload.encode(instant),
  );
  await published(first.recorder, process.id, 'agent.effect.started');
  const head = (await first.committer.store.loadTree(process.id)) as TreeSnapshot;
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const late = new ManualClock(t0 + 60_000);
  const restored = await second.engine.restoreTree(deployment('test.coordination.deadline', deadlineTestDefinition, deadlineDispatcher({ clock: late })), head);
  const result = await restored.await();
  assert.equal(result.output?.decode(), instant);
  assert.equal(late.timers.size, 0, 'no timer was needed');
  stop.abort(new Error('the fenced writer stops'));
  await second.engine.close();
});
