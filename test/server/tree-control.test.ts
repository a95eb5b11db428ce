import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import type { EngineHost } from '../../src/server/engine-host.js';
import type { ProcessView } from '../../src/server/host.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { embeddedHost, freshPrefix, redisHost, start } from './harness.js';
import { gatedParent, threeLevels } from './tree-fixtures.js';

/**
 * Tree-wide control through the Host (issue 16), in both modes: a 3-level tree cancelled at once ends
 * every process with the right cause; a tree with nothing live commits nothing; pause and resume reach
 * every member; and while an interrupt lands, a child start settles `engine.child.interrupt_pending`.
 */

let redis: RedisServer;
before(async () => {
  redis = await startRedisServer();
});
after(async () => {
  await redis?.stop();
});

type Mode = 'memory' | 'redis';
const modes: readonly Mode[] = ['memory', 'redis'];

function hostFor(mode: Mode, deployments: Parameters<typeof embeddedHost>[0] extends infer O ? (O extends { deployments?: infer D } ? D : never) : never) {
  if (mode === 'memory') return { host: embeddedHost({ deployments }), done: async () => undefined };
  const { host, redis: client } = redisHost({ url: redis.url, prefix: freshPrefix(), deployments });
  return { host, done: async () => client.disconnect() };
}

/** Polls the Host's own tree view until `ready` holds (the API's reads; bounded). */
async function untilTree(host: EngineHost, rootId: string, ready: (processes: readonly ProcessView[]) => boolean): Promise<readonly ProcessView[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { processes } = await host.inspectTree(rootId);
    if (ready(processes)) return processes;
    if (Date.now() > deadline) throw new Error(`tree ${rootId} never got ready: ${JSON.stringify(processes.map((p) => [p.depth, p.status, p.work]))}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

for (const mode of modes) {
  test(`${mode}: tree-wide cancel of a 3-level tree ends every process (root host_cancellation, the rest parent_cancellation)`, async () => {
    const tree = threeLevels(`test.${mode}.cancel`, 'sleep');
    const { host, done } = hostFor(mode, tree.deployments);
    try {
      const root = (await start(host, tree.root, {})).processId;
      const processes = await untilTree(host, root, (members) => members.length === 3 && members.some((member) => member.depth === 2 && member.work === 'dispatch'));
      const outcome = await host.controlTree(root, 'cancel', 'stop the tree');
      assert.deepEqual(outcome, { rootId: root, action: 'cancel', affected: 3 });
      // The 202's promise: right after it, the stored head holds the intent on every member (or its end).
      const head = TreeSnapshot.parse((await host.snapshot(root)).json);
      for (const member of head.processSnapshots()) {
        const depth = member.relation.depth;
        const expected = depth === 0 ? 'host' : 'parent';
        const marked = member.pendingControl.cancellation?.owner === expected || member.termination?.cause === `${expected}_cancellation`;
        assert.ok(marked, `depth ${depth} is marked in the head: ${member.json()}`);
      }
      const causes: string[] = [];
      for (const member of processes) {
        const result = await host.awaitResult(member.processId, 10_000);
        assert.equal(result.done, true);
        if (result.done) causes[member.depth] = `${result.result.status}/${result.result.cause}`;
      }
      assert.deepEqual(causes, ['canceled/host_cancellation', 'canceled/parent_cancellation', 'canceled/parent_cancellation']);
      // Nothing live any more: nothing to commit.
      const digest = (await host.snapshot(root)).digest;
      assert.deepEqual(await host.controlTree(root, 'kill', 'again'), { rootId: root, action: 'kill', affected: 0 });
      assert.equal((await host.snapshot(root)).digest, digest, 'affected 0 commits nothing');
    } finally {
      await host.close(300);
      await done();
    }
  });

  test(`${mode}: tree-wide pause stops every member of a waiting tree, resume brings each back to its wait`, async () => {
    const tree = threeLevels(`test.${mode}.pause`, 'approval');
    const { host, done } = hostFor(mode, tree.deployments);
    try {
      const root = (await start(host, tree.root, {})).processId;
      await untilTree(host, root, (members) => members.length === 3 && members.every((member) => member.status === 'waiting'));
      const digest = (await host.snapshot(root)).digest;
      assert.equal((await host.controlTree(root, 'pause', 'lunch')).affected, 3);
      assert.notEqual((await host.snapshot(root)).digest, digest);
      const paused = await host.inspectTree(root);
      assert.deepEqual(paused.processes.map((member) => member.status), ['paused', 'paused', 'paused']);
      // User input keeps queuing on a paused tree.
      const leaf = paused.processes.find((member) => member.depth === 2) as ProcessView;
      assert.deepEqual(await host.deliverSignals(leaf.processId, [{ id: 'note-1', payload: { note: 'while paused' } }]), { accepted: true });
      assert.equal((await host.controlTree(root, 'resume')).affected, 3);
      const resumed = await host.inspectTree(root);
      assert.deepEqual(resumed.processes.map((member) => member.status), ['waiting', 'waiting', 'waiting']);
      await host.controlTree(root, 'kill', 'cleanup');
    } finally {
      await host.close(300);
      await done();
    }
  });

  test(`${mode}: a child start while a tree pause lands settles failed with engine.child.interrupt_pending`, async () => {
    const gated = gatedParent(`test.${mode}.gated`);
    const { host, done } = hostFor(mode, [gated.deployment]);
    try {
      const root = (await start(host, gated.name, {})).processId;
      await gated.dispatching.promise;
      // The dispatch is in flight: the pause is recorded pending, and the interrupt is in force.
      assert.equal((await host.controlTree(root, 'pause', 'interrupt')).affected, 1);
      gated.release.resolve();
      // The batch goes on: its child start reaches admission under the interrupt, then the pause applies.
      await untilTree(host, root, (members) => members[0]?.status === 'paused');
      assert.equal((await host.inspectTree(root)).processes.length, 1, 'no child joined the tree');
      await host.controlTree(root, 'resume');
      const result = await host.awaitResult(root, 10_000);
      assert.equal(result.done && result.result.status, 'completed');
      // What the parent read as its child start's settlement: a definite failure with the barrier's code.
      const output = JSON.stringify(result.done ? result.result.output : null);
      assert.match(output, /"code":"engine\.child\.interrupt_pending"/, output);
    } finally {
      await host.close(300);
      await done();
    }
  });
}
