import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cluster, eventually, exited, explained, json, leaseMs, ownerOf, post, processUrl, startProcess, waitingWaitId, type Node } from './nodes-cluster.js';

/**
 * A node without its lease changes nothing (503 `node_lease_lost`, no start, not ready) while the
 * others take its trees over, and joins again a lease period later; SIGTERM drains a node and hands its trees over at once; an operator
 * evicts a sick node, and the others take its trees over.
 */

const cluster = new Cluster();
let a: Node;

before(async () => {
  await cluster.start();
  a = await cluster.node('a');
});

after(async () => {
  await cluster.stop();
});

test('a node whose lease is gone answers mutations 503 node_lease_lost, starts nothing, is not ready; another node takes its tree with work', async () => {
  const sick = await cluster.node('sick');
  const id = await startProcess(sick, 'demo.approval', { subject: 'lease' });
  const waitId = await waitingWaitId(sick, id);
  const sleeping = await startProcess(sick, 'demo.sleep', { ms: 60_000 });
  await eventually(async () => ((await json(await fetch(processUrl(sick, sleeping, '/effects')))).items.length > 0 ? true : undefined), 'the sleep dispatched');
  // Renewals find the lease gone (as after a partition longer than the lease).
  await cluster.redis.del(`${cluster.prefix}:{node:sick}:lease`);
  // Until its next renewal the node still holds the lease as far as it can tell (that is what the
  // local margin is for); readiness says when it knows.
  const ready = await eventually(async () => {
    const response = await fetch(`${sick.url}/readyz`);
    return response.status === 503 ? response : undefined;
  }, 'the sick node noticing', leaseMs);
  assert.equal((await json(ready)).checks.node, 'lease lost');
  const refused = await post(processUrl(sick, id, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: true } }] });
  assert.equal(refused.status, 503);
  assert.equal((await json(refused)).code, 'node_lease_lost');
  const start = await post(`${sick.url}/v1/processes`, { deployment: 'demo.echo', input: { value: 1 } });
  assert.equal(start.status, 503);
  assert.equal((await json(start)).code, 'node_lease_lost');
  // Reads still work there.
  assert.equal((await json(await fetch(processUrl(sick, id)))).status, 'waiting');

  // The live node took the tree with work over; the parked one waits for a command, and the answer
  // sent to the live node restores it there and completes the process.
  await eventually(async () => ((await ownerOf(cluster, sleeping))?.node === 'a' ? true : undefined), 'a taking the sleeping tree over', leaseMs + 5_000);
  assert.equal((await ownerOf(cluster, id))?.node, 'sick', 'the parked tree was left alone');
  const answered = await post(processUrl(a, id, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: true } }] });
  assert.equal(answered.status, 200);
  assert.equal((await ownerOf(cluster, id))?.node, 'a');
  assert.equal((await json(await fetch(processUrl(a, id, '/result?waitMs=10000')))).status, 'completed');
  assert.equal((await post(processUrl(a, sleeping, '/cancel'))).status, 202);

  // A lease period after the loss it joins again under a new epoch, and serves again.
  await eventually(async () => ((await fetch(`${sick.url}/readyz`)).status === 200 ? true : undefined), 'the sick node back', leaseMs + 5_000);
  const nodes = await json(await fetch(`${a.url}/v1/nodes`));
  assert.equal(nodes.items.find((node: { nodeId: string }) => node.nodeId === 'sick')?.epoch, 2);
  const again = await post(`${sick.url}/v1/processes`, { deployment: 'demo.echo', input: { value: 'again' } });
  assert.equal(again.status, 201);
  const echoed = (await json(again)).processId as string;
  assert.deepEqual(await ownerOf(cluster, echoed).then((record) => [record?.node, record?.epoch]), ['sick', 2]);
  sick.child.kill('SIGKILL');
});

test('SIGTERM drains: the lease goes at once and another node continues the trees (well before a lease TTL)', async () => {
  const leaving = await cluster.node('leaving', { SCOPE_NODE_LEASE_MS: '60000', SCOPE_NODE_RENEW_MS: '5000' });
  const running = await startProcess(leaving, 'demo.sleep', { ms: 60_000 });
  const parked = await startProcess(leaving, 'demo.approval', { subject: 'drain' });
  const waitId = await waitingWaitId(leaving, parked);
  // The node directory is what the others' sweeps read after the drain: both trees must be in it
  // (the join sweep once dropped a tree whose start commit was still in flight).
  assert.deepEqual((await cluster.redis.smembers(`${cluster.prefix}:{node:leaving}:trees`)).sort(), [running, parked].sort());
  const started = performance.now();
  leaving.child.kill('SIGTERM');
  await exited(leaving.child);
  assert.equal(leaving.child.exitCode, 0);
  assert.match(leaving.output(), /handed over/);
  // A 60 s lease would keep them stuck for a minute; the drain deleted it.
  await explained([a, leaving], () => eventually(async () => ((await ownerOf(cluster, running))?.node === 'a' ? true : undefined), 'a continuing the running tree', 20_000));
  assert.ok(performance.now() - started < 30_000, 'well before the 60 s lease');
  const answered = await post(processUrl(a, parked, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: true } }] });
  assert.equal(answered.status, 200, await answered.clone().text());
  assert.equal((await json(await fetch(processUrl(a, parked, '/result?waitMs=10000')))).status, 'completed');
  const cancel = await post(processUrl(a, running, '/cancel'));
  assert.equal(cancel.status, 202);
  assert.equal((await json(await fetch(processUrl(a, running, '/result?waitMs=10000')))).status, 'canceled');
});

test('eviction: GET /v1/nodes lists the leases; POST /v1/nodes/{id}/evict makes the live nodes take the trees over', async () => {
  const evicted = await cluster.node('evicted', { SCOPE_NODE_LEASE_MS: '60000', SCOPE_NODE_RENEW_MS: '5000' });
  const id = await startProcess(evicted, 'demo.sleep', { ms: 60_000 });
  const listed = await json(await fetch(`${a.url}/v1/nodes`));
  const row = listed.items.find((node: { nodeId: string }) => node.nodeId === 'evicted');
  assert.equal(row.lease, 'live');
  assert.equal(row.url, evicted.url);
  assert.equal(listed.items.find((node: { nodeId: string }) => node.nodeId === 'a').self, true);

  const evict = await post(`${a.url}/v1/nodes/evicted/evict`);
  assert.equal(evict.status, 204);
  await eventually(async () => ((await ownerOf(cluster, id))?.node === 'a' ? true : undefined), 'a taking the evicted node\'s tree', 20_000);
  const after = await json(await fetch(`${a.url}/v1/nodes`));
  assert.notEqual(after.items.find((node: { nodeId: string }) => node.nodeId === 'evicted')?.lease, 'live');
  // The evicted node learns it at its next renewal and changes nothing (for a lease period: a minute here).
  await eventually(async () => ((await fetch(`${evicted.url}/readyz`)).status === 503 ? true : undefined), 'the evicted node not ready', 20_000);
  const refused = await post(processUrl(evicted, id, '/cancel'));
  assert.equal(refused.status, 503);
  assert.equal((await json(refused)).code, 'node_lease_lost');
  const unknown = await post(`${a.url}/v1/nodes/nobody/evict`);
  assert.equal(unknown.status, 404);
  assert.equal((await json(unknown)).code, 'node_not_found');
  const cancel = await post(processUrl(a, id, '/cancel'));
  assert.equal(cancel.status, 202);
  evicted.child.kill('SIGKILL');
});
