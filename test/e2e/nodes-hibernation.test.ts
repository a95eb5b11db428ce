import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { activeOn, Cluster, eventually, exited, json, ownerOf, post, processUrl, startProcess, waitingWaitId, type Node } from './nodes-cluster.js';

/**
 * Hibernation across real nodes: a parked tree leaves its owner's memory after the idle time
 * (nothing written: the owner record still names the owner), a signal sent to another node is
 * forwarded to the owner, which restores the tree on demand; a long poll on another node is answered;
 * and a hibernated tree of a node killed with SIGKILL is restored by the next command, wherever it lands.
 */

const cluster = new Cluster();
let a: Node;
let b: Node;

before(async () => {
  await cluster.start();
  [a, b] = await Promise.all([cluster.node('a', { SCOPE_HIBERNATE_AFTER_MS: '200' }), cluster.node('b', { SCOPE_HIBERNATE_AFTER_MS: '200' })]);
});

after(async () => {
  await cluster.stop();
});

async function counter(node: Node, name: string): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  const line = text.split('\n').find((entry) => entry.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

async function hibernatedOn(node: Node, root: string): Promise<void> {
  await eventually(async () => ((await activeOn([node], root)).length === 0 ? true : undefined), `${root} hibernated on ${node.id}`, 10_000);
}

test('a hibernated tree keeps its owner; a signal through another node wakes it there and the long poll on a third answers', async () => {
  const id = await startProcess(a, 'demo.approval', { subject: 'sleepy' });
  const waitId = await waitingWaitId(a, id);
  const owner = await ownerOf(cluster, id);
  assert.equal(owner?.node, 'a');
  await hibernatedOn(a, id);
  assert.ok((await counter(a, 'scope_trees_hibernated_total')) >= 1);
  assert.deepEqual(await ownerOf(cluster, id), owner, 'a release writes nothing: the owner record is unchanged');
  const waits = await json(await fetch(`${b.url}/v1/waits`));
  assert.ok(waits.items.some((wait: { processId: string }) => wait.processId === id), 'the inbox on every node still lists it');

  const poll = fetch(processUrl(b, id, '/result?waitMs=15000'));
  const answered = await post(processUrl(b, id, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: true, comment: 'woken' } }] });
  assert.equal(answered.status, 200, await answered.clone().text());
  assert.equal(answered.headers.get('scope-served-by'), 'a', 'forwarded to the owner, which restored it');
  const result = await json(await poll);
  assert.equal(result.status, 'completed');
  assert.equal(result.output.comment, 'woken');
  assert.equal(await counter(a, 'scope_trees_woken_total'), 1);
  assert.equal((await ownerOf(cluster, id))?.node, 'a', 'the owner restored its own tree');
  assert.notEqual((await ownerOf(cluster, id))?.incarnation, owner?.incarnation, 'under a new incarnation');
});

test('a hibernated tree of a node killed with SIGKILL stays ownerless (parked: nothing to take over) and a signal restores it where it lands', async () => {
  const c = await cluster.node('c', { SCOPE_HIBERNATE_AFTER_MS: '200' });
  const id = await startProcess(c, 'demo.approval', { subject: 'orphan' });
  const waitId = await waitingWaitId(c, id);
  await hibernatedOn(c, id);
  c.child.kill('SIGKILL');
  await exited(c.child);
  // Once c's lease is gone (deleted here, as after its TTL) the tree is ownerless.
  await cluster.redis.del(`${cluster.prefix}:{node:c}:lease`);
  const answered = await post(processUrl(a, id, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: false } }] });
  assert.equal(answered.status, 200, await answered.clone().text());
  assert.equal((await ownerOf(cluster, id))?.node, 'a', 'restored by the node the signal reached');
  assert.equal((await json(await fetch(processUrl(b, id, '/result?waitMs=15000')))).status, 'completed');
});
