import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { rendezvousWinner } from '../../src/server/ownership/rendezvous.js';
import { activeOn, Cluster, committedNames, eventually, exited, json, leaseMs, ownerOf, post, processUrl, startProcess, waitingWaitId, type Node } from './nodes-cluster.js';

/**
 * Liveness after a crash: when a node's lease lapses, the surviving nodes take its trees with work
 * over (spread by rendezvous hashing), restored from the head, with no manual restore; its parked
 * trees, and any tree whose owner is gone, are restored by a command where it lands.
 */

const cluster = new Cluster();
let a: Node;
let b: Node;
let c: Node;

before(async () => {
  await cluster.start();
  [a, b, c] = await Promise.all([cluster.node('a'), cluster.node('b'), cluster.node('c')]);
});

after(async () => {
  await cluster.stop();
});

async function counter(node: Node, name: string): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(name))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

test('SIGKILL of the owner: the survivors take its trees with work over within the lease TTL + 5 s; its parked trees wait for their next command', async () => {
  const sleeps = await Promise.all(Array.from({ length: 8 }, () => startProcess(a, 'demo.sleep', { ms: 60_000 })));
  const approvals = await Promise.all(Array.from({ length: 4 }, (_, index) => startProcess(a, 'demo.approval', { subject: `crash-${index}` })));
  const waits = await Promise.all(approvals.map((id) => waitingWaitId(a, id)));
  await Promise.all(
    sleeps.map((id) => eventually(async () => ((await json(await fetch(processUrl(a, id, '/effects')))).items.length > 0 ? true : undefined), `${id} dispatched`)),
  );

  a.child.kill('SIGKILL');
  await exited(a.child);
  const killed = performance.now();
  const survivors = [b, c];
  const owners = await Promise.all(
    sleeps.map((id) =>
      eventually(
        async () => {
          const owner = await ownerOf(cluster, id);
          if (owner === undefined || owner.node === 'a') return undefined;
          const holders = await activeOn(survivors, id);
          return holders.length === 1 ? owner.node : undefined;
        },
        `${id} taken over`,
        leaseMs + 10_000,
      ),
    ),
  );
  const tookMs = performance.now() - killed;
  process.stdout.write(`# takeover of 8 trees with work after SIGKILL: ${Math.round(tookMs)} ms (lease ${leaseMs} ms)\n`);
  assert.ok(tookMs < leaseMs + 5_000, `took ${tookMs} ms`);
  // Spread by rendezvous hashing: each tree went to the survivor the hash names for its root. (The ids
  // are random, so all eight landing on one survivor is a legitimate 1-in-128 outcome, not a failure.)
  assert.deepEqual(
    owners,
    sleeps.map((id) => rendezvousWinner(id, [{ nodeId: 'b' }, { nodeId: 'c' }])?.nodeId),
  );
  const takenOver = await Promise.all(survivors.map((node) => counter(node, 'scope_trees_taken_over_total')));
  assert.equal(takenOver[0]! + takenOver[1]!, 8, 'each survivor counts the takeovers its sweep made');

  // The parked approvals were left alone: no survivor holds them, their owner record still names a.
  // The sweep that took the sleeps over looked at them too (one directory), so this is after it.
  for (const id of approvals) {
    assert.equal((await ownerOf(cluster, id))?.node, 'a');
    assert.deepEqual(await activeOn(survivors, id), []);
  }
  // A signal restores each where it lands; each tree was restored once.
  await Promise.all(
    approvals.map(async (id, index) => {
      const answered = await post(processUrl(b, id, '/signals'), { signals: [{ id: 'answer', waitId: waits[index], payload: { approved: true } }] });
      assert.equal(answered.status, 200, await answered.clone().text());
      assert.equal((await ownerOf(cluster, id))?.node, 'b');
      const result = await json(await fetch(processUrl(c, id, '/result?waitMs=10000')));
      assert.equal(result.status, 'completed');
      assert.equal((await committedNames(b, id)).filter((name) => name === 'agent.process.restored').length, 1);
    }),
  );
  // The sleeps run again under their identity (same_identity) and complete.
  for (const id of sleeps) {
    const owner = (await ownerOf(cluster, id))?.node === 'b' ? b : c;
    const cancel = await post(processUrl(owner, id, '/cancel'));
    assert.equal(cancel.status, 202);
    const result = await json(await fetch(processUrl(owner, id, '/result?waitMs=10000')));
    assert.equal(result.status, 'canceled');
  }
});

test('a command to a tree whose owner is gone restores it on the node that received it', async () => {
  const d = await cluster.node('d', { SCOPE_NODE_LEASE_MS: '60000', SCOPE_NODE_RENEW_MS: '20000' });
  const id = await startProcess(d, 'demo.approval', { subject: 'ownerless' });
  const waitId = await waitingWaitId(d, id);
  d.child.kill('SIGKILL');
  await exited(d.child);
  // The long lease is still live on the server: the command cannot reach the owner.
  const early = await post(processUrl(b, id, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: true } }] });
  assert.equal(early.status, 503);
  assert.equal((await json(early)).code, 'owner_unreachable');
  assert.equal(early.headers.get('retry-after'), '1');
  // Its lease gone (as after its TTL), the tree is ownerless: the next command restores it here.
  await cluster.redis.del(`${cluster.prefix}:{node:d}:lease`);
  const answered = await post(processUrl(c, id, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: true } }] });
  assert.equal(answered.status, 200, await answered.clone().text());
  assert.notEqual((await ownerOf(cluster, id))?.node, 'd');
  const owner = (await ownerOf(cluster, id))?.node === 'b' ? b : c;
  const result = await json(await fetch(processUrl(owner, id, '/result?waitMs=10000')));
  assert.equal(result.status, 'completed');
});
