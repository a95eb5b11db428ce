import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadDeploymentsModule } from '../../src/app/deployments-module.js';
import { ProcessDispatchers } from '../../src/app/process-dispatchers.js';
import type { EngineHost } from '../../src/server/engine-host.js';
import type { RestoreDecider } from '../../src/server/drift.js';
import { counterV1, counterV2, moveOnFromV1 } from '../fixtures/counter-versions-deployments.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { embeddedHost, freshPrefix, redisHost, rejectsWith, result, start } from './harness.js';

/**
 * Deployment versions in one server (docs/deployment-versions.md): several versions of a name in the
 * catalog, new starts on the current one, older trees finishing on their own; and the decider's
 * refusals, which leave the drifted tree exactly as it was.
 */

let server: RedisServer;
before(async () => {
  server = await startRedisServer();
});
after(async () => {
  await server?.stop();
});

const env = { SCOPE_DEMOS: 'off' };

/** Answers the counter's current round. */
async function add(host: EngineHost, processId: string, amount: number): Promise<void> {
  const view = await host.inspectProcess(processId);
  assert.ok(view.waitId !== null, `${processId} waits`);
  await host.deliverSignals(processId, [{ id: `add-${view.waitId}`, waitId: view.waitId, payload: { add: amount } }]);
}

async function untilWaiting(host: EngineHost, processId: string): Promise<void> {
  for (let polls = 0; (await host.inspectProcess(processId)).waitId === null; polls += 1) {
    assert.ok(polls < 100, 'the counter waits');
    await host.awaitResult(processId, 50);
  }
}

test('start on v1, register v2: the v1 tree finishes on v1 while new starts use v2; the versions list both with their live trees', async () => {
  const host = embeddedHost({ env, deployments: [counterV1] });
  try {
    const old = await start(host, 'demo.counter', { target: 2 });
    assert.equal(old.deploymentRef, counterV1.ref.toString());
    await untilWaiting(host, old.processId);
    host.catalog.register({ deployment: counterV2 });
    const fresh = await start(host, 'demo.counter', { target: 1 });
    assert.equal(fresh.deploymentRef, counterV2.ref.toString(), 'new starts use the current version');
    const both = await host.deploymentVersions('demo.counter');
    assert.deepEqual(
      both.versions.map((version) => [version.deploymentRef, version.current, version.registeredHere, version.liveTrees, version.liveRootIds]),
      [
        [counterV1.ref.toString(), false, true, 1, [old.processId]],
        [counterV2.ref.toString(), true, true, 1, [fresh.processId]],
      ],
    );
    await add(host, old.processId, 2);
    const finished = await result(host, old.processId);
    assert.equal(finished.status, 'completed');
    assert.equal((await host.inspectProcess(old.processId)).deploymentRef, counterV1.ref.toString(), 'it finished on its own version');
    const after = await host.deploymentVersions('demo.counter');
    assert.deepEqual(after.versions.map((version) => version.liveTrees), [0, 1]);
    assert.equal(after.complete, true);
    await rejectsWith(host.deploymentVersions('demo.nothing'), 'deployment_not_found');
  } finally {
    await host.close(1_000);
  }
});

test('a module exporting both versions: the last registered is current unless one is marked current', async () => {
  process.env.COUNTER_VERSIONS = 'both';
  const entries = await loadDeploymentsModule('test/fixtures/counter-versions-deployments.ts', { shutdown: new AbortController().signal, processes: new ProcessDispatchers() });
  delete process.env.COUNTER_VERSIONS;
  const host = embeddedHost({ env, deployments: entries });
  const pinned = embeddedHost({ env, deployments: [{ deployment: counterV1, current: true }, counterV2] });
  try {
    assert.equal((await start(host, 'demo.counter', { target: 1 })).deploymentRef, counterV2.ref.toString());
    const versions = await host.deploymentVersions('demo.counter');
    assert.deepEqual(versions.versions.map((version) => [version.current, version.restoreDecider]), [[false, false], [true, true]]);
    assert.equal((await start(pinned, 'demo.counter', { target: 1 })).deploymentRef, counterV1.ref.toString(), 'current: true pins v1');
    assert.throws(() => pinned.catalog.register({ deployment: counterV2, current: true }), /two versions of demo.counter are marked current/);
  } finally {
    await host.close(1_000);
    await pinned.close(1_000);
  }
});

/** A v1 tree stored by a Host that then closed, waiting on its second round (two of five counted). */
async function storedV1Tree(prefix: string): Promise<string> {
  const { host, redis } = redisHost({ url: server.url, prefix, env, deployments: [counterV1] });
  try {
    const root = (await start(host, 'demo.counter', { target: 5 })).processId;
    await untilWaiting(host, root);
    await add(host, root, 2);
    await untilWaiting(host, root);
    return root;
  } finally {
    await host.close(1_000);
    redis.disconnect();
  }
}

async function withV2(prefix: string, restoreDecider: RestoreDecider | undefined, run: (host: EngineHost) => Promise<void>): Promise<void> {
  const { host, redis } = redisHost({ url: server.url, prefix, env, deployments: [restoreDecider === undefined ? counterV2 : { deployment: counterV2, restoreDecider }] });
  try {
    await run(host);
  } finally {
    await host.close(1_000);
    redis.disconnect();
  }
}

test('a decider that refuses, throws or names an input v2 refuses: 409 or 422, and the drifted tree is left as it was', async () => {
  const prefix = freshPrefix();
  const root = await storedV1Tree(prefix);
  await withV2(prefix, undefined, async (host) => {
    const drift = await rejectsWith(host.restoreTree(root), 'deployment_drift');
    assert.match(drift.message, /differs in implementationDigest, configurationDigest\)/);
    await rejectsWith(host.restoreTree(root, { allowDrift: true }), 'deployment_drift_undecidable');
  });
  const refusing: RestoreDecider = () => ({ accept: false, reason: 'an operator must look at it first' });
  await withV2(prefix, refusing, async (host) => {
    const refused = await rejectsWith(host.restoreTree(root, { allowDrift: true }), 'deployment_drift_refused');
    assert.match(refused.message, /an operator must look at it first/);
  });
  await withV2(prefix, () => {
    throw new Error('boom');
  }, async (host) => {
    const refused = await rejectsWith(host.restoreTree(root, { allowDrift: true }), 'deployment_drift_refused');
    assert.match(refused.message, /the restoreDecider failed: boom/);
  });
  await withV2(prefix, () => ({ accept: true, reason: 'wrong input', input: { target: 'three' } }), async (host) => {
    await rejectsWith(host.restoreTree(root, { allowDrift: true }), 'schema_validation_failed');
  });
  await withV2(prefix, moveOnFromV1, async (host) => {
    const view = await host.inspectTree(root);
    assert.equal(view.supersededBy, null, 'no refusal wrote anything');
    const moved = await host.restoreTree(root, { allowDrift: true });
    const successor = moved.supersededBy?.successorId as string;
    assert.equal((await host.inspectTree(successor)).predecessorId, root);
    await rejectsWith(host.restoreTree(root), 'tree_superseded');
  });
});
