import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { activeOn, Cluster, committedNames, exited, json, ownerOf, post, processUrl, startProcess, treeUrl, waitingWaitId, type Node } from './nodes-cluster.js';

/**
 * Two nodes taking the same ownerless tree over at once: exactly one activation installs (the
 * owner record guard in the activation's script), the other follows the winner; and an operator's
 * `?force=true` restore takes a tree from a live owner, which then drops it and forwards.
 */

const cluster = new Cluster();
let a: Node;
let b: Node;

before(async () => {
  await cluster.start();
  [a, b] = await Promise.all([cluster.node('a'), cluster.node('b')]);
});

after(async () => {
  await cluster.stop();
});

test('concurrent restores from two nodes of ownerless trees: never both take over (20 rounds)', async () => {
  const rounds = 20;
  // A node with a long lease owns the trees and dies; its directory goes first (so no sweep takes
  // them over), then its lease: every tree is ownerless, and only the two restores race for it.
  const z = await cluster.node('z', { SCOPE_NODE_LEASE_MS: '60000', SCOPE_NODE_RENEW_MS: '20000' });
  const ids = await Promise.all(Array.from({ length: rounds }, (_, index) => startProcess(z, 'demo.approval', { subject: `race-${index}` })));
  await Promise.all(ids.map((id) => waitingWaitId(z, id)));
  z.child.kill('SIGKILL');
  await exited(z.child);
  await cluster.redis.del(`${cluster.prefix}:{node:z}:trees`);
  await cluster.redis.del(`${cluster.prefix}:{node:z}:lease`);

  for (const id of ids) {
    const [first, second] = await Promise.all([post(treeUrl(a, id, '/restore')), post(treeUrl(b, id, '/restore'))]);
    // Both answer the tree as it is now: one took it over, the other was forwarded to the winner.
    assert.equal(first.status, 200, await first.clone().text());
    assert.equal(second.status, 200, await second.clone().text());
    const holders = await activeOn([a, b], id);
    assert.equal(holders.length, 1, `${id} is held by exactly one node`);
    const owner = await ownerOf(cluster, id);
    assert.equal(owner?.node, holders[0]?.id);
    const tree = await json(await fetch(treeUrl(holders[0] as Node, id)));
    assert.equal(owner?.incarnation, tree.incarnationId, 'the owner record names the incarnation of the head');
    const restored = (await committedNames(a, id)).filter((name) => name === 'agent.process.restored');
    assert.equal(restored.length, 1, `${id} was activated once`);
  }
});

test('restore?force=true takes a tree from its live owner; the old owner drops it and forwards from then on', async () => {
  const id = await startProcess(a, 'demo.approval', { subject: 'force' });
  const waitId = await waitingWaitId(a, id);
  const plain = await post(treeUrl(b, id, '/restore'));
  assert.equal(plain.headers.get('scope-served-by'), 'a');
  assert.equal((await ownerOf(cluster, id))?.node, 'a');

  const forced = await post(treeUrl(b, id, '/restore?force=true'));
  assert.equal(forced.status, 200, await forced.clone().text());
  assert.equal((await ownerOf(cluster, id))?.node, 'b');
  // A still holds its fenced copy in memory; the first command there meets the new incarnation,
  // drops the tree and goes to B — never "retry later".
  const answered = await post(processUrl(a, id, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: true } }] });
  assert.equal(answered.status, 200, await answered.clone().text());
  assert.equal(answered.headers.get('scope-served-by'), 'b');
  assert.equal((await json(await fetch(treeUrl(a, id)))).active, false);
  const result = await json(await fetch(processUrl(b, id, '/result?waitMs=10000')));
  assert.equal(result.status, 'completed');
  // Reads on A are the stored head now (no stale copy).
  assert.equal((await json(await fetch(processUrl(a, id)))).status, 'completed');
});
