import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Child } from '../../src/supervisor/child.js';
import { Supervisor, type SupervisorOptions } from '../../src/supervisor/supervisor.js';
import { alive, isSettled, LineWorkerStarter, ManualTimers, PidLedger, rejectsWithCode, settle } from './helpers.js';

const idleTtlMs = 1_000;
const startTimeoutMs = 5_000;
const reconcileEveryMs = 100;

/** A supervisor on a manual clock, a line-worker starter, and the end-of-test leak check. */
function setup(t: TestContext, options: SupervisorOptions = {}) {
  const timers = new ManualTimers();
  const ledger = new PidLedger();
  const supervisor = new Supervisor<Child>({ timers, idleTtlMs, startTimeoutMs, reconcileEveryMs, ...options });
  const starter = new LineWorkerStarter(ledger);
  t.after(() => supervisor.close());
  const states = (): string[] => supervisor.inspect().map((info) => `${info.key}:${info.state}:${info.leases}`);
  return {
    timers,
    ledger,
    supervisor,
    starter,
    states,
    /** Closes the supervisor and proves every child it ever spawned is gone. */
    async finish(): Promise<void> {
      assert.equal(await supervisor.close(), true);
      assert.deepEqual(supervisor.inspect(), []);
      ledger.assertAllGone();
    },
  };
}

test('a lease starts the key’s process; leases share it, and a release is idempotent', async (t) => {
  const { supervisor, starter, states, finish } = setup(t);
  const first = await supervisor.lease('k', 'fp', starter.start);
  const second = await supervisor.lease('k', 'fp', starter.start);
  assert.equal(first.process, second.process);
  assert.equal(starter.calls, 1);
  assert.equal(await starter.ping(first.process), first.process.pid);
  assert.deepEqual(states(), ['k:live:2']);
  first.release();
  first.release();
  assert.deepEqual(states(), ['k:live:1']);
  second.release();
  const third = await supervisor.lease('k', 'fp', starter.start);
  assert.equal(third.process, first.process, 'a released process is reused');
  assert.equal(third.fingerprint, 'fp');
  third.release();
  await finish();
});

test('concurrent leases during one slow start share it', async (t) => {
  const { supervisor, starter, states, finish } = setup(t);
  starter.args = ['--gate'];
  const leases = [1, 2, 3].map(() => supervisor.lease('k', 'fp', starter.start));
  const worker = await starter.nextSpawn();
  for (const lease of leases) assert.equal(await isSettled(lease), false, 'nobody gets a process before the start ends');
  assert.equal(starter.calls, 1, 'one start per key');
  assert.deepEqual(states(), ['k:starting:0']);
  worker.child.write('go\n');
  const granted = await Promise.all(leases);
  for (const lease of granted) assert.equal(lease.process, worker.child);
  assert.deepEqual(states(), ['k:live:3'], 'every waiter holds a lease from the moment the start ends');
  for (const lease of granted) lease.release();
  await finish();
});

test('a start crash is shared as one error by every waiter, and the next lease retries', async (t) => {
  const { supervisor, starter, states, finish } = setup(t);
  starter.args = ['--crash-on-start'];
  const outcomes = await Promise.allSettled([1, 2, 3].map(() => supervisor.lease('k', 'fp', starter.start)));
  const reasons = outcomes.map((outcome) => (outcome.status === 'rejected' ? (outcome.reason as { code?: string }) : undefined));
  assert.equal(reasons[0]?.code, 'exited');
  assert.ok(reasons.every((reason) => reason === reasons[0]), 'the same error reaches every waiter');
  assert.equal(starter.calls, 1);
  assert.deepEqual(states(), []);
  starter.args = [];
  const lease = await supervisor.lease('k', 'fp', starter.start);
  assert.equal(starter.calls, 2);
  assert.equal(await starter.ping(lease.process), lease.process.pid);
  lease.release();
  await finish();
});

test('the start timeout fails the waiters with start_timeout and aborts the start; the next lease retries', async (t) => {
  const { supervisor, starter, timers, states, finish } = setup(t);
  starter.args = ['--gate'];
  const waiting = [supervisor.lease('k', 'fp', starter.start), supervisor.lease('k', 'fp', starter.start)];
  const worker = await starter.nextSpawn();
  timers.advance(startTimeoutMs - 1);
  assert.equal(await isSettled(waiting[0] as Promise<unknown>), false);
  timers.advance(1);
  for (const lease of waiting) await rejectsWithCode(lease, 'start_timeout');
  assert.equal(starter.signals[0]?.aborted, true);
  await worker.child.exited;
  await settle();
  assert.deepEqual(states(), []);
  starter.args = [];
  const lease = await supervisor.lease('k', 'fp', starter.start);
  assert.equal(starter.calls, 2);
  lease.release();
  await finish();
});

test('the start timeout bounds the start, not the process', async (t) => {
  const { supervisor, starter, timers, finish } = setup(t);
  const lease = await supervisor.lease('k', 'fp', starter.start);
  timers.advance(startTimeoutMs * 10);
  assert.equal(starter.signals[0]?.aborted, false, 'a finished start is never aborted');
  assert.equal(lease.process.isDone, false);
  assert.equal(await starter.ping(lease.process), lease.process.pid);
  lease.release();
  await finish();
});

test('a process an abandoned start still returns is closed, never handed out', async (t) => {
  const { supervisor, starter, timers, states, finish } = setup(t);
  starter.args = ['--gate'];
  starter.honourAbort = false;
  const waiting = supervisor.lease('k', 'fp', starter.start);
  const late = await starter.nextSpawn();
  timers.advance(startTimeoutMs);
  await rejectsWithCode(waiting, 'start_timeout');
  assert.deepEqual(states(), ['k:closing:0'], 'the abandoned start is still tracked');
  // The key is free again: a new lease starts a new process while the old start runs on.
  starter.args = [];
  const fresh = await supervisor.lease('k', 'fp', starter.start);
  assert.notEqual(fresh.process, late.child);
  late.child.write('go\n');
  await late.child.exited;
  await settle();
  assert.deepEqual(states(), ['k:live:1']);
  fresh.release();
  await finish();
});

test('a fingerprint change retires the old process, which closes only after its last release', async (t) => {
  const { supervisor, starter, states, finish } = setup(t);
  const old = await supervisor.lease('k', 'fp1', starter.start);
  const current = await supervisor.lease('k', 'fp2', starter.start);
  assert.notEqual(current.process, old.process);
  assert.deepEqual(states(), ['k:retired:1', 'k:live:1']);
  assert.equal(alive(old.process.pid), true, 'a leased retired process keeps running');
  assert.equal(await starter.ping(old.process), old.process.pid);
  const again = await supervisor.lease('k', 'fp2', starter.start);
  assert.equal(again.process, current.process, 'a retired process takes no new leases');
  again.release();
  old.release();
  await old.process.exited;
  await settle();
  assert.deepEqual(states(), ['k:live:1']);
  current.release();
  await finish();
});

test('a starter may report the fingerprint it actually started from', async (t) => {
  const { supervisor, starter, finish } = setup(t);
  starter.reportFingerprint = 'v1';
  const first = await supervisor.lease('k', 'version-not-known-yet', starter.start);
  assert.equal(first.fingerprint, 'v1', 'the waiter of the start gets it whatever it reports');
  first.release();
  const same = await supervisor.lease('k', 'v1', starter.start);
  assert.equal(same.process, first.process);
  same.release();
  starter.reportFingerprint = undefined;
  const upgraded = await supervisor.lease('k', 'v2', starter.start);
  assert.notEqual(upgraded.process, first.process);
  await first.process.exited;
  upgraded.release();
  await finish();
});

test('a lease with another fingerprint waits for the running start, then replaces its process', async (t) => {
  const { supervisor, starter, states, finish } = setup(t);
  starter.args = ['--gate'];
  const first = supervisor.lease('k', 'fp1', starter.start);
  const worker = await starter.nextSpawn();
  starter.args = [];
  const second = supervisor.lease('k', 'fp2', starter.start);
  assert.equal(await isSettled(second), false);
  assert.equal(starter.calls, 1, 'no second start runs beside the first');
  worker.child.write('go\n');
  const [one, two] = await Promise.all([first, second]);
  assert.equal(one.process, worker.child);
  assert.notEqual(two.process, worker.child);
  assert.equal(starter.calls, 2);
  assert.deepEqual(states(), ['k:retired:1', 'k:live:1']);
  one.release();
  two.release();
  await finish();
});

test('a process that has exited is replaced on the next lease', async (t) => {
  const { supervisor, starter, finish } = setup(t);
  const first = await supervisor.lease('k', 'fp', starter.start);
  first.release();
  process.kill(first.process.pid, 'SIGKILL');
  await first.process.exited;
  assert.equal(supervisor.peek('k'), undefined, 'peek never returns a dead process');
  const second = await supervisor.lease('k', 'fp', starter.start);
  assert.notEqual(second.process.pid, first.process.pid);
  assert.equal(starter.calls, 2);
  second.release();
  await finish();
});

test('idle reaping closes unleased processes after the idle TTL and never touches a leased one', async (t) => {
  const { supervisor, starter, timers, states, finish } = setup(t);
  const held = await supervisor.lease('held', 'fp', starter.start);
  const idle = await supervisor.lease('idle', 'fp', starter.start);
  idle.release();
  timers.advance(idleTtlMs - 1);
  assert.equal(idle.process.isDone, false, 'not idle long enough yet');
  timers.advance(reconcileEveryMs);
  await idle.process.exited;
  timers.advance(idleTtlMs * 50);
  assert.equal(held.process.isDone, false);
  assert.equal(await starter.ping(held.process), held.process.pid);
  await settle();
  assert.deepEqual(states(), ['held:live:1']);
  held.release();
  timers.advance(idleTtlMs + reconcileEveryMs);
  await held.process.exited;
  await settle();
  assert.deepEqual(states(), []);
  await finish();
});

test('the reconcile loop closes dead processes nobody leases, and dead leased ones at their release', async (t) => {
  const { supervisor, starter, timers, states, finish } = setup(t);
  const unleased = await supervisor.lease('a', 'fp', starter.start);
  unleased.release();
  const leased = await supervisor.lease('b', 'fp', starter.start);
  process.kill(unleased.process.pid, 'SIGKILL');
  process.kill(leased.process.pid, 'SIGKILL');
  await Promise.all([unleased.process.exited, leased.process.exited]);
  assert.deepEqual(states(), ['a:live:0', 'b:live:1'], 'nothing depends on noticing an exit at once');
  timers.advance(reconcileEveryMs);
  await settle();
  assert.deepEqual(states(), ['b:retired:1']);
  leased.release();
  await settle();
  assert.deepEqual(states(), []);
  await finish();
});

test('drain refuses while busy, closes the key’s processes, and holds starts off until unblocked', async (t) => {
  const { supervisor, starter, finish } = setup(t);
  const lease = await supervisor.lease('k', 'fp', starter.start);
  await rejectsWithCode(supervisor.drain('k', () => true), 'busy');
  assert.equal(lease.process.isDone, false, 'a refused drain touches nothing');
  const unblock = await supervisor.drain('k', () => false);
  assert.equal(lease.process.hasExited, true, 'drain returns once the processes have exited');
  const blocked = supervisor.lease('k', 'fp', starter.start);
  assert.equal(await isSettled(blocked), false);
  assert.equal(starter.calls, 1, 'no start while the drain holds the key');
  await rejectsWithCode(supervisor.drain('k'), 'busy');
  await rejectsWithCode(supervisor.drain((key) => key.startsWith('k')), 'busy');
  const other = await supervisor.lease('other', 'fp', starter.start);
  other.release();
  unblock();
  unblock();
  const fresh = await blocked;
  assert.notEqual(fresh.process, lease.process);
  assert.equal(starter.calls, 3);
  lease.release();
  fresh.release();
  await finish();
});

test('drain treats a running start as at work, and without a busy check abandons it with drained', async (t) => {
  const { supervisor, starter, finish } = setup(t);
  starter.args = ['--gate'];
  const waiting = supervisor.lease('k', 'fp', starter.start);
  const worker = await starter.nextSpawn();
  await rejectsWithCode(supervisor.drain('k', () => false), 'busy');
  const draining = supervisor.drain('k');
  await rejectsWithCode(waiting, 'drained');
  const unblock = await draining;
  assert.equal(worker.child.hasExited, true);
  unblock();
  starter.args = [];
  const lease = await supervisor.lease('k', 'fp', starter.start);
  lease.release();
  await finish();
});

test('peek neither leases nor starts; markBroken and retire retire the current process', async (t) => {
  const { supervisor, starter, states, finish } = setup(t);
  assert.equal(supervisor.peek('k'), undefined);
  assert.equal(starter.calls, 0);
  const lease = await supervisor.lease('k', 'fp', starter.start);
  assert.equal(supervisor.peek('k'), lease.process);
  assert.deepEqual(states(), ['k:live:1'], 'peek takes no lease');
  supervisor.markBroken('k', lease.process);
  assert.equal(supervisor.peek('k'), undefined);
  assert.equal(lease.process.isDone, false, 'a leased broken process runs until its release');
  lease.release();
  await lease.process.exited;

  const busy = await supervisor.lease('a', 'fp', starter.start);
  const idle = await supervisor.lease('b', 'fp', starter.start);
  idle.release();
  supervisor.markBroken('a', idle.process);
  assert.equal(supervisor.peek('a'), busy.process, 'markBroken ignores a process that is not the key’s current one');
  supervisor.retire((key) => key === 'a' || key === 'b');
  await idle.process.exited;
  assert.equal(busy.process.isDone, false);
  busy.release();
  await busy.process.exited;
  await finish();
});

test('retire during a start: its waiters get the process, later leases wait and start anew', async (t) => {
  const { supervisor, starter, finish } = setup(t);
  starter.args = ['--gate'];
  const first = supervisor.lease('k', 'fp', starter.start);
  const worker = await starter.nextSpawn();
  supervisor.retire('k');
  starter.args = [];
  const second = supervisor.lease('k', 'fp', starter.start);
  worker.child.write('go\n');
  const [one, two] = await Promise.all([first, second]);
  assert.equal(one.process, worker.child);
  assert.notEqual(two.process, worker.child);
  one.release();
  await worker.child.exited;
  two.release();
  await finish();
});

test('an aborted lease stops waiting; the others still get the process', async (t) => {
  const { supervisor, starter, states, finish } = setup(t);
  starter.args = ['--gate'];
  const controller = new AbortController();
  const abandoned = supervisor.lease('k', 'fp', starter.start, { signal: controller.signal });
  const kept = supervisor.lease('k', 'fp', starter.start);
  const worker = await starter.nextSpawn();
  controller.abort(new Error('gave up'));
  await assert.rejects(abandoned, /gave up/);
  worker.child.write('go\n');
  const lease = await kept;
  assert.deepEqual(states(), ['k:live:1']);
  lease.release();
  await finish();
});

test('close tears every process down at once and refuses later leases and drains with closed', async (t) => {
  const { supervisor, starter, ledger } = setup(t);
  const leased = await supervisor.lease('a', 'fp', starter.start);
  const idle = await supervisor.lease('b', 'fp', starter.start);
  idle.release();
  const unblock = await supervisor.drain('held');
  const blocked = rejectsWithCode(supervisor.lease('held', 'fp', starter.start), 'closed');
  assert.equal(await supervisor.close(), true);
  assert.equal(leased.process.hasExited, true, 'close does not wait for leases');
  assert.equal(idle.process.hasExited, true);
  await blocked;
  await rejectsWithCode(supervisor.lease('a', 'fp', starter.start), 'closed');
  await rejectsWithCode(supervisor.drain('a'), 'closed');
  leased.release();
  unblock();
  assert.equal(supervisor.closed, true);
  ledger.assertAllGone();
});

test('close waits for a generation still starting, or until its deadline', async (t) => {
  const { supervisor, starter, ledger } = setup(t);
  starter.args = ['--gate'];
  starter.honourAbort = false;
  const waiting = supervisor.lease('k', 'fp', starter.start);
  const worker = await starter.nextSpawn();
  const deadline = new AbortController();
  const bounded = supervisor.close({ signal: deadline.signal });
  await rejectsWithCode(waiting, 'closed');
  const unbounded = supervisor.close();
  assert.equal(await isSettled(unbounded), false, 'a start still running keeps close waiting');
  deadline.abort();
  assert.equal(await bounded, false, 'the deadline ended the wait first');
  worker.child.write('go\n');
  assert.equal(await unbounded, true);
  assert.equal(worker.child.hasExited, true, 'the late process was closed');
  ledger.assertAllGone();
});

test('invalid arguments are refused with invalid_argument', async (t) => {
  const { supervisor, starter, finish } = setup(t);
  await rejectsWithCode(supervisor.lease('', 'fp', starter.start), 'invalid_argument');
  await rejectsWithCode(supervisor.lease('k', 7 as unknown as string, starter.start), 'invalid_argument');
  assert.throws(() => new Supervisor({ idleTtlMs: 0 }), (error: Error & { code?: string }) => error.code === 'invalid_argument');
  assert.throws(() => new Supervisor({ startTimeoutMs: Number.NaN }), (error: Error & { code?: string }) => error.code === 'invalid_argument');
  const bad = async () => ({ process: {} as Child });
  await rejectsWithCode(supervisor.lease('k', 'fp', bad), 'invalid_start');
  await finish();
});
