import assert from 'node:assert/strict';
import { test } from 'node:test';
import { baseEnv, fallbackPath } from '../../src/supervisor/base-env.js';
import { Child } from '../../src/supervisor/child.js';
import { isSettled, ManualTimers, PidLedger, rejectsWithCode, spawnLineWorker } from './helpers.js';

const megabyte = 1024 * 1024;

test('a child runs a long-lived command: queued writes, stdout lines, pid', async () => {
  const ledger = new PidLedger();
  const { child, lines } = await spawnLineWorker(ledger);
  assert.equal(await lines.next(), 'ready');
  child.write('ping\n');
  child.write('ping\n');
  assert.equal(await lines.next(), `pong ${child.pid}`);
  assert.equal(await lines.next(), `pong ${child.pid}`);
  assert.equal(child.isDone, false);
  await child.close();
  ledger.assertAllGone();
});

test('the command sees the minimal base environment plus what the starter adds, nothing else', async (t) => {
  const ledger = new PidLedger();
  process.env.SCOPE_TEST_SECRET = 'must-not-leak';
  t.after(() => delete process.env.SCOPE_TEST_SECRET);
  const { child, lines } = await spawnLineWorker(ledger, [], { env: { WORKER_MODE: 'test' } });
  assert.equal(await lines.next(), 'ready');
  child.write('env\n');
  const env = JSON.parse(await lines.next()) as Record<string, string>;
  assert.equal(env.WORKER_MODE, 'test');
  assert.equal(env.SCOPE_TEST_SECRET, undefined);
  assert.equal(env.PATH, process.env.PATH);
  const allowed = new Set(['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ', 'WORKER_MODE']);
  // Node itself may add nothing; anything beyond the base names is a leak.
  assert.deepEqual(Object.keys(env).filter((name) => !allowed.has(name)), []);
  await child.close();
  ledger.assertAllGone();
});

test('baseEnv: fallbacks for a bare environment, extras on top, invalid names refused', () => {
  assert.deepEqual(baseEnv({}, { HOME: '/home/x' }), { PATH: fallbackPath, HOME: '/home/x', LANG: 'C.UTF-8' });
  assert.deepEqual(baseEnv({ LANG: 'de_DE.UTF-8', A: '1' }, { PATH: '/bin', HOME: '/h', TZ: 'UTC' }), {
    PATH: '/bin',
    HOME: '/h',
    LANG: 'de_DE.UTF-8',
    TZ: 'UTC',
    A: '1',
  });
  for (const extra of [{ 'A=B': '1' }, { '': '1' }, { A: 'x\0y' }] as Record<string, string>[]) {
    assert.throws(() => baseEnv(extra), (error: Error & { code?: string }) => error.code === 'invalid_argument');
  }
});

test('kill() takes the command out of service at once and never waits; close() resolves on exit', async () => {
  const ledger = new PidLedger();
  const { child, lines } = await spawnLineWorker(ledger);
  assert.equal(await lines.next(), 'ready');
  child.kill();
  assert.equal(child.isDone, true, 'done before kill returns');
  assert.equal(child.reason?.code, 'killed');
  assert.equal(await isSettled(child.done), true);
  assert.throws(() => child.write('ping\n'), (error: Error & { code?: string }) => error.code === 'killed');
  await child.close();
  assert.equal(child.hasExited, true);
  assert.equal(child.signalCode, 'SIGKILL');
  ledger.assertAllGone();
});

test('done settles when the command exits on its own; closeStdin lets it end at EOF', async () => {
  const ledger = new PidLedger();
  const exiting = await spawnLineWorker(ledger);
  assert.equal(await exiting.lines.next(), 'ready');
  exiting.child.write('exit 4\n');
  await exiting.child.done;
  assert.equal(exiting.child.reason?.code, 'exited');
  await exiting.child.exited;
  assert.equal(exiting.child.exitCode, 4);

  const eof = await spawnLineWorker(ledger);
  assert.equal(await eof.lines.next(), 'ready');
  eof.child.write('ping\n');
  eof.child.closeStdin();
  assert.equal(await eof.lines.next(), `pong ${eof.child.pid}`, 'queued input is still delivered');
  await eof.child.exited;
  assert.equal(eof.child.exitCode, 0);
  ledger.assertAllGone();
});

test('a command that leaves its input unread past the time bound is killed (not_reading)', async () => {
  const ledger = new PidLedger();
  const timers = new ManualTimers();
  const { child, lines } = await spawnLineWorker(ledger, ['--no-read'], { timers, notReadingMs: 2_000 });
  assert.equal(await lines.next(), 'ready');
  // More than any pipe buffer holds, so the write stays queued.
  child.write(Buffer.alloc(4 * megabyte, 0x61));
  timers.advance(1_999);
  assert.equal(child.isDone, false);
  timers.advance(1);
  assert.equal(child.isDone, true);
  assert.equal(child.reason?.code, 'not_reading');
  await child.exited;
  ledger.assertAllGone();
});

test('a reading command is never killed for not reading, however long it runs', async () => {
  const ledger = new PidLedger();
  const timers = new ManualTimers();
  const { child, lines } = await spawnLineWorker(ledger, [], { timers, notReadingMs: 2_000 });
  assert.equal(await lines.next(), 'ready');
  child.write('ping\n');
  assert.equal(await lines.next(), `pong ${child.pid}`);
  timers.advance(60_000);
  assert.equal(child.isDone, false);
  await child.close();
  ledger.assertAllGone();
});

test('a write overflowing the queue bound kills the command (not_reading)', async () => {
  const ledger = new PidLedger();
  const { child, lines } = await spawnLineWorker(ledger, ['--no-read'], { maxQueuedBytes: megabyte });
  assert.equal(await lines.next(), 'ready');
  assert.throws(() => child.write(Buffer.alloc(2 * megabyte, 0x61)), (error: Error & { code?: string }) => error.code === 'not_reading');
  assert.equal(child.isDone, true);
  await child.exited;
  ledger.assertAllGone();
});

test('the stderr tail keeps only the most recent bytes', async () => {
  const ledger = new PidLedger();
  let seen = '';
  let markerSeen!: () => void;
  const marker = new Promise<void>((resolve) => (markerSeen = resolve));
  const onStderr = (chunk: Buffer): void => {
    seen += chunk.toString('utf8');
    if (seen.endsWith('stderr-end\n')) markerSeen();
  };
  const { child, lines } = await spawnLineWorker(ledger, [], { stderrTailBytes: 256, onStderr });
  assert.equal(await lines.next(), 'ready');
  child.write('stderr 500\n');
  await marker;
  const tail = child.stderrTail();
  assert.ok(seen.length > 30_000, 'the command wrote far more than the bound');
  assert.equal(Buffer.byteLength(tail), 256);
  assert.ok(tail.endsWith('stderr line 499 ' + 'x'.repeat(64) + '\nstderr-end\n'), tail);
  await child.close();
  ledger.assertAllGone();
});

test('a command that cannot be spawned is spawn_failed; invalid options are invalid_argument', async () => {
  await rejectsWithCode(Child.spawn({ command: '/nonexistent/scope-command' }), 'spawn_failed');
  await assert.rejects(async () => Child.spawn({ command: '' }), (error: Error & { code?: string }) => error.code === 'invalid_argument');
  await assert.rejects(
    async () => Child.spawn({ command: process.execPath, notReadingMs: 0 }),
    (error: Error & { code?: string }) => error.code === 'invalid_argument',
  );
});
