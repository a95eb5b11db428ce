/**
 * The API's readiness rule for deployments sent to `scope worker` processes
 * (src/transport/bullmq/worker-readiness.ts), on registry entries as the workers publish them.
 * The same rule against real worker processes: worker-process-readiness.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Deployment, Digest } from '../../../src/kernel/index.js';
import type { LiveWorker, WorkerProcessKey } from '../../../src/store/redis/worker-registry.js';
import { workerReadiness } from '../../../src/transport/bullmq/worker-readiness.js';
import { echoDefinition } from '../../../strategies/demo/echo.js';

const echo = Deployment.create({
  definition: echoDefinition,
  dispatcher: { dispatch: async () => { throw new Error('not run'); }, replayPolicy: () => 'same_identity' },
  implementationDigest: Digest.of('test:readiness-echo:implementation'),
  configurationDigest: Digest.of('test:readiness-echo:configuration'),
});
const hex = echo.ref.digest.hex;

const good: WorkerProcessKey = { key: 'shout', command: 'node', resolvable: true, generations: [] };
const started: WorkerProcessKey = { ...good, lastStart: 'started', generations: [{ serial: 1, state: 'live', leases: 0, current: true }] };
const unresolvable: WorkerProcessKey = { key: 'shout', command: '/nope/shout', resolvable: false, generations: [] };
const failedStart: WorkerProcessKey = { ...good, lastStart: 'start_failed' };

function worker(workerId: string, keys: readonly WorkerProcessKey[] | undefined, refs: readonly string[] = [hex]): LiveWorker {
  return { workerId, refs, processes: keys === undefined ? {} : { [hex]: keys } };
}

test('worker readiness: no live worker holding the ref is not ready, saying so', () => {
  const readiness = workerReadiness([echo], [worker('w-other', [good], ['0'.repeat(64)])]);
  assert.equal(readiness.checks['worker:demo.echo'], `no live worker holds ${echo.ref.toString()}`);
  assert.deepEqual(readiness.refs, [{ deployment: 'demo.echo', ref: echo.ref.toString(), workers: [] }]);
});

test('worker readiness: a live worker with no process keys for the ref can run it', () => {
  const readiness = workerReadiness([echo], [worker('w1', undefined)]);
  assert.equal(readiness.checks['worker:demo.echo'], 'ok');
  assert.deepEqual(readiness.refs[0]?.workers, [{ workerId: 'w1', ready: true, processes: [] }]);
});

test('worker readiness: a resolvable key that never started, or started, is usable; its generations are shown', () => {
  assert.equal(workerReadiness([echo], [worker('w1', [good])]).checks['worker:demo.echo'], 'ok');
  const readiness = workerReadiness([echo], [worker('w1', [started])]);
  assert.equal(readiness.checks['worker:demo.echo'], 'ok');
  assert.deepEqual(readiness.refs[0]?.workers[0]?.processes, [
    { key: 'shout', resolvable: true, lastStart: 'started', generations: [{ serial: 1, state: 'live', leases: 0, current: true }], check: 'ok' },
  ]);
});

test('worker readiness: every live worker unusable (command missing, or last start failed) is not ready, naming ref, worker and key', () => {
  const readiness = workerReadiness([echo], [worker('w-b', [failedStart]), worker('w-a', [good, unresolvable])]);
  assert.equal(
    readiness.checks['worker:demo.echo'],
    `no live worker can run ${echo.ref.toString()}: worker w-a: process shout: command "/nope/shout" is not an executable file; worker w-b: process shout: last start failed: start_failed`,
  );
  assert.deepEqual(
    readiness.refs[0]?.workers.map((entry) => [entry.workerId, entry.ready, entry.processes.map((key) => key.check)]),
    [
      ['w-a', false, ['ok', 'command "/nope/shout" is not an executable file']],
      ['w-b', false, ['last start failed: start_failed']],
    ],
    'workers in id order; a worker is unusable when any of its keys is',
  );
});

test('worker readiness: one usable live worker is enough; the unusable ones stay visible', () => {
  const readiness = workerReadiness([echo], [worker('w-bad', [unresolvable]), worker('w-good', [started])]);
  assert.equal(readiness.checks['worker:demo.echo'], 'ok');
  assert.deepEqual(readiness.refs[0]?.workers.map((entry) => [entry.workerId, entry.ready]), [['w-bad', false], ['w-good', true]]);
});

test('worker readiness: a crowd of unusable workers is named up to three, then counted', () => {
  const workers = ['w1', 'w2', 'w3', 'w4', 'w5'].map((id) => worker(id, [unresolvable]));
  const check = workerReadiness([echo], workers).checks['worker:demo.echo'] ?? '';
  assert.match(check, /worker w3: process shout: command "\/nope\/shout" is not an executable file; and 2 more$/);
  assert.doesNotMatch(check, /w4/);
});
