import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadDeploymentsModule } from '../../src/app/deployments-module.js';
import { ProcessDispatchers } from '../../src/app/process-dispatchers.js';
import { KernelError } from '../../src/kernel/errors.js';
import { Engine, Event, Payload, ProcessId, type TreeSnapshot } from '../../src/kernel/index.js';
import { DeploymentCatalog } from '../../src/server/catalog.js';
import { EmbeddedCommitter } from '../../src/server/embedded-committer.js';
import { Succession } from '../../src/server/succession.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import { MemoryIdempotencyStore } from '../../src/store/memory-idempotency.js';
import { MemoryRootIndex } from '../../src/store/root-index.js';
import { MemorySuccessionStore } from '../../src/store/succession.js';
import { RedisWaitIndex } from '../../src/store/redis/wait-index.js';
import type { EngineHost } from '../../src/server/engine-host.js';
import type { RestoreDecider } from '../../src/server/drift.js';
import { counterV1, counterV2, moveOnFromV1 } from '../fixtures/counter-versions-deployments.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { dataOf, embeddedHost, freshPrefix, redisHost, rejectsWith, result, start } from './harness.js';
import { moveNestOn, nestV1, nestV2 } from '../fixtures/nested-versions-deployments.js';

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

/** The first child of `root` once it is listed. */
async function childOf(host: EngineHost, root: string): Promise<string> {
  for (let polls = 0; ; polls += 1) {
    const child = (await host.children(root)).items[0];
    if (child !== undefined) return child.processId;
    assert.ok(polls < 100, 'the nest starts its child');
    await host.awaitResult(root, 50);
  }
}

/** A v1 nest stored by a Host that then closed: the root waits on its child, the child on its first round. */
async function storedNestTree(prefix: string): Promise<{ root: string; child: string; waits: readonly { rootId: string; processId: string; waitId: string }[] }> {
  const { host, redis } = redisHost({ url: server.url, prefix, env, deployments: [nestV1] });
  try {
    const root = (await start(host, 'demo.nest', { target: 4 })).processId;
    const child = await childOf(host, root);
    await untilWaiting(host, child);
    await untilWaiting(host, root);
    const tree = await host.inspectTree(root);
    assert.deepEqual(tree.processes.map((process) => [process.depth, process.status, process.waitKind]), [
      [0, 'waiting', 'children'],
      [1, 'waiting', 'external'],
    ]);
    const waits = (await host.waits({ rootId: root })).map((wait) => ({ rootId: wait.rootId, processId: wait.processId, waitId: wait.waitId }));
    assert.equal(waits.length, 2, 'both waits are in the inbox');
    assert.equal((await host.gatePage({ rootId: root })).items.length, 1, "the child's round is an open gate");
    return { root, child, waits };
  } finally {
    await host.close(1_000);
    redis.disconnect();
  }
}

/** Asserts that the superseded nest `root` (child `child`) ended cancelled, recorded, and left the inbox. */
async function assertCancelled(host: EngineHost, root: string, child: string): Promise<void> {
  const tree = await host.inspectTree(root);
  assert.equal(tree.active, false);
  const byId = new Map(tree.processes.map((process) => [process.processId, process]));
  const rootView = byId.get(root);
  const childView = byId.get(child);
  assert.equal(rootView?.status, 'canceled');
  assert.equal(rootView?.result?.cause, 'host_cancellation');
  assert.match(rootView?.result?.reason ?? '', new RegExp(`^superseded: moved on to a successor tree on ${nestV2.ref.toString().replace(/[+]/g, '\\+')} \\(v2 runs the nest again\\)$`));
  assert.equal(childView?.status, 'canceled');
  assert.equal(childView?.result?.cause, 'parent_cancellation');
  assert.equal(childView?.result?.reason, 'the parent finished (host_cancellation)');
  assert.ok(tree.processes.every((process) => process.waitId === null && process.result !== null), 'every process is terminal, its wait closed');
  assert.equal((await host.inspectProcess(root)).status, 'canceled');
  const finished = (await host.events(root, { types: ['agent.process.finished'] })).items.map((entry) => [entry.processId, (dataOf(entry).payload as { cause: string }).cause]);
  assert.deepEqual(finished.sort(), [[child, 'parent_cancellation'], [root, 'host_cancellation']].sort(), 'one agent.process.finished per cancelled process is in the log');
  assert.deepEqual(await host.waits({ rootId: root }), [], 'no wait of the old tree is left in the inbox');
  assert.deepEqual((await host.waits()).filter((wait) => wait.rootId === root), []);
  assert.deepEqual((await host.gatePage({ rootId: root })).items, [], 'no gate of the old tree is open');
}

test('moving a drifted two-level tree on cancels it in the supersede commit: every process terminal with its cause, its events logged, its waits and gates gone', async () => {
  const prefix = freshPrefix();
  const { root, child, waits } = await storedNestTree(prefix);
  const { host, redis } = redisHost({ url: server.url, prefix, env, deployments: [{ deployment: nestV2, restoreDecider: moveNestOn }] });
  try {
    await rejectsWith(host.restoreTree(root), 'deployment_drift');
    const index = new RedisWaitIndex({ redis, keyPrefix: prefix });
    assert.ok((await index.read(waits)).every((entry) => entry !== undefined), 'the stored waits are indexed');
    const moved = await host.restoreTree(root, { allowDrift: true });
    // The move-on removed the old tree's entries itself (before any reader could verify them away).
    assert.deepEqual(await index.read(waits), [undefined, undefined], 'the open-wait index holds nothing of the old tree');
    const successor = moved.supersededBy?.successorId as string;
    assert.ok(successor !== undefined && successor !== root);
    await assertCancelled(host, root, child);
    assert.equal((await host.inspectTree(successor)).predecessorId, root);
    assert.equal((await host.inspectProcess(successor)).deploymentRef, nestV2.ref.toString(), 'the successor runs on v2');
    const versions = await host.deploymentVersions('demo.nest');
    assert.deepEqual(versions.versions.map((version) => [version.deploymentRef, version.liveTrees]), [[nestV2.ref.toString(), 1]], 'the v1 tree is no longer live (v1 is listed only while it has live trees)');
    // The old tree answers clearly from now on: the move-on repeats as it was, anything else is refused.
    assert.equal((await host.restoreTree(root, { allowDrift: true })).supersededBy?.successorId, successor);
    await rejectsWith(host.restoreTree(root), 'tree_superseded');
    const refused = await host.deliverSignals(child, [{ id: 'late', payload: { add: 1 } }]).then(
      () => undefined,
      (error: unknown) => error as KernelError,
    );
    assert.ok(refused instanceof KernelError && ['process_finished', 'tree_superseded'].includes(refused.code), `a signal to the old child is refused clearly: ${String(refused)}`);
  } finally {
    await host.close(1_000);
    redis.disconnect();
  }
});

test('a crash between the supersede commit and the successor start: the old tree is already cancelled, and the next move-on starts the successor', async () => {
  const prefix = freshPrefix();
  const { root, child } = await storedNestTree(prefix);
  const crashing = redisHost({
    url: server.url,
    prefix,
    env,
    deployments: [{ deployment: nestV2, restoreDecider: moveNestOn }],
    afterSupersede: async () => {
      throw new Error('crashed after the supersede commit');
    },
  });
  try {
    await assert.rejects(crashing.host.restoreTree(root, { allowDrift: true }), /crashed after the supersede commit/);
  } finally {
    await crashing.host.close(1_000);
    crashing.redis.disconnect();
  }
  const refusing: RestoreDecider = () => ({ accept: false, reason: 'the decider is not asked again' });
  const { host, redis } = redisHost({ url: server.url, prefix, env, deployments: [{ deployment: nestV2, restoreDecider: refusing }] });
  try {
    const pending = await host.inspectTree(root);
    assert.equal(pending.supersededBy?.successorId, null, 'the succession is recorded, its successor not started');
    await assertCancelled(host, root, child);
    await rejectsWith(host.restoreTree(root), 'tree_superseded');
    const moved = await host.restoreTree(root, { allowDrift: true });
    const successor = moved.supersededBy?.successorId as string;
    assert.equal((await host.inspectTree(successor)).predecessorId, root);
    assert.equal((await host.inspectProcess(successor)).deploymentRef, nestV2.ref.toString());
    await assertCancelled(host, root, child);
  } finally {
    await host.close(1_000);
    redis.disconnect();
  }
});

test('embedded committer: the move-on cancels the drifted tree in the commit that records its succession, and a repeat changes nothing', async () => {
  const log = new MemoryEventLog();
  const committer = new EmbeddedCommitter({ store: new MemoryTreeCommitter(), log, idempotency: new MemoryIdempotencyStore(), roots: new MemoryRootIndex() });
  const store = new MemorySuccessionStore((root, suffix) => committer.readRecord(ProcessId.parse(root), suffix));
  // A v1 engine runs the nest until both processes wait, then goes away (as a node holding v1 would).
  const waiting = new Set<string>();
  let parked!: () => void;
  const bothWaiting = new Promise<void>((resolve) => (parked = resolve));
  const v1 = new Engine({
    committer,
    deploymentResolver: new DeploymentCatalog([nestV1]),
    eventListeners: [
      (event: Event) => {
        if (event.name === 'agent.step.committed' && event.stepCommitted()?.status === 'waiting') waiting.add(event.processId.toString());
        if (waiting.size === 2) parked();
      },
    ],
  });
  const root = (await v1.start(nestV1, Payload.encode({ target: 4 }))).id;
  await bothWaiting;
  assert.equal(await v1.hibernateTree(root), true, 'the v1 engine lets the parked tree go');
  const head = (await committer.loadTree(root)) as TreeSnapshot;
  assert.deepEqual(head.processSnapshots().map((process) => process.status), ['waiting', 'waiting']);

  const catalog = new DeploymentCatalog([{ deployment: nestV2, restoreDecider: moveNestOn }]);
  const v2 = new Engine({ committer, deploymentResolver: catalog });
  const succession = new Succession({
    catalog,
    store,
    start: async (request) => (await v2.start(nestV2, Payload.encode(request.input))).id.toString(),
    tenantOf: async () => undefined,
    finalize: (replaced, cancellation, records) => committer.finalizeTree(replaced, cancellation.activation, { events: cancellation.events }, records),
    now: () => new Date(),
  });
  await succession.moveOn(head, catalog.driftOf(head.root.deploymentRef), 'admin');
  const final = (await committer.loadTree(root)) as TreeSnapshot;
  assert.notEqual(final.incarnationId.toString(), head.incarnationId.toString(), 'a new incarnation fences the v1 writer');
  assert.deepEqual(
    final.processSnapshots().map((process) => [process.relation.depth, process.status, process.termination?.cause, process.waitId]),
    [
      [0, 'canceled', 'host_cancellation', undefined],
      [1, 'canceled', 'parent_cancellation', undefined],
    ],
  );
  const entries = await log.readAfter(root.toString(), '0', 1000);
  assert.deepEqual(
    entries.filter((entry) => entry.type === 'agent.process.finished').map((entry) => [entry.processId, Event.parse(entry.data).treeIncarnationId?.toString()]),
    final.processSnapshots().map((process) => [process.processId.toString(), final.incarnationId.toString()]),
    'each cancelled process has its agent.process.finished in the log, from the final writer',
  );
  const view = await succession.view(root.toString());
  assert.ok(view?.successorId !== null && view?.successorId !== undefined);
  assert.equal(await succession.predecessorOf(view.successorId), root.toString());
  assert.equal(JSON.parse((await store.read(root.toString())) as string).successorId, view.successorId);
  await rejectsWith(succession.assertNotSuperseded(root.toString()), 'tree_superseded');
  // A repeat over the stale head or the final one changes nothing.
  await succession.moveOn(head, catalog.driftOf(head.root.deploymentRef), 'admin');
  assert.equal((await committer.loadTree(root))?.digest.toString(), final.digest.toString());
  assert.equal((await log.readAfter(root.toString(), '0', 1000)).length, entries.length);
});

test('two admins move the same drifted tree on at once from two Hosts: one supersede commit, one successor, both answered with it', async () => {
  const prefix = freshPrefix();
  const { root, child } = await storedNestTree(prefix);
  const hosts = [0, 1].map(() => redisHost({ url: server.url, prefix, env, deployments: [{ deployment: nestV2, restoreDecider: moveNestOn }] }));
  try {
    const views = await Promise.all(hosts.map(({ host }) => host.restoreTree(root, { allowDrift: true })));
    const successor = views[0]?.supersededBy?.successorId as string;
    assert.ok(typeof successor === 'string');
    assert.equal(views[1]?.supersededBy?.successorId, successor);
    await assertCancelled(hosts[0]!.host, root, child);
  } finally {
    for (const { host, redis } of hosts) {
      await host.close(1_000);
      redis.disconnect();
    }
  }
});
