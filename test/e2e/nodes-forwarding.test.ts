import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cluster, json, ownerOf, post, processUrl, startProcess, treeUrl, waitingWaitId, type Node } from './nodes-cluster.js';

/**
 * Any node serves any tree: a command sent to a node that does not own the tree is forwarded, one
 * hop, to the owner, which admits it; reads are served where they arrive.
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

test('a signal sent to the non-owner is admitted by the owner: the process moves on, one receipt', async () => {
  const id = await startProcess(a, 'demo.approval', { subject: 'forwarded' });
  const waitId = await waitingWaitId(a, id);
  const owner = await ownerOf(cluster, id);
  assert.equal(owner?.node, 'a');

  // Reads on B come from the stored head; B holds nothing in memory.
  assert.equal((await json(await fetch(processUrl(b, id)))).status, 'waiting');
  assert.equal((await json(await fetch(treeUrl(b, id)))).active, false);

  const answered = await post(processUrl(b, id, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: true, comment: 'via b' } }] });
  assert.equal(answered.status, 200, await answered.clone().text());
  assert.deepEqual(await json(answered), { accepted: true });
  assert.equal(answered.headers.get('scope-served-by'), 'a');
  assert.match(await (await fetch(`${b.url}/metrics`)).text(), /^scope_forwards_total\{outcome="relayed"\} [1-9]/m);

  const result = await json(await fetch(processUrl(b, id, '/result?waitMs=10000')));
  assert.equal(result.status, 'completed');
  assert.equal(result.output.comment, 'via b');
  // The owner never moved, and the answer is in the tree exactly once.
  assert.deepEqual(await ownerOf(cluster, id), owner);
  assert.equal((await json(await fetch(treeUrl(a, id)))).active, true);
  const receipts = await json(await fetch(processUrl(a, id, '/signals')));
  assert.deepEqual(
    receipts.items.map((receipt: { id: string }) => receipt.id).filter((receiptId: string) => !receiptId.startsWith('signal:engine:')),
    ['answer'],
  );
  // Retrying the same signal through B is the same idempotent answer.
  const again = await post(processUrl(b, id, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: true, comment: 'via b' } }] });
  assert.equal(again.status, 200);
  assert.deepEqual(await json(again), { accepted: false });
});

test('control and a restore sent to the non-owner go to the owner; the owner keeps the tree', async () => {
  const id = await startProcess(a, 'demo.approval', { subject: 'control' });
  await waitingWaitId(a, id);
  const restored = await post(treeUrl(b, id, '/restore'));
  assert.equal(restored.status, 200);
  assert.equal(restored.headers.get('scope-served-by'), 'a');
  assert.equal((await json(await fetch(treeUrl(b, id)))).active, false);
  const cancel = await post(processUrl(b, id, '/cancel'));
  assert.equal(cancel.status, 202, await cancel.clone().text());
  const result = await json(await fetch(processUrl(a, id, '/result?waitMs=10000')));
  assert.equal(result.status, 'canceled');
  assert.equal((await ownerOf(cluster, id))?.node, 'a');
});

test('a forwarded command that meets a node without the tree answers tree_owned_elsewhere naming the owner (one hop)', async () => {
  const id = await startProcess(a, 'demo.approval', { subject: 'hop' });
  const waitId = await waitingWaitId(a, id);
  const response = await fetch(processUrl(b, id, '/signals'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'scope-forwarded-by': 'x' },
    body: JSON.stringify({ signals: [{ id: 'hop', waitId, payload: { approved: true } }] }),
  });
  assert.equal(response.status, 409);
  assert.equal((await json(response)).code, 'tree_owned_elsewhere');
  assert.equal(response.headers.get('scope-owner-node'), 'a');
  assert.equal(response.headers.get('scope-owner-url'), a.url);
});

test('a child is found on every node: read on a node that never held its tree, and its commands routed to the owner', async () => {
  const id = await startProcess(a, 'demo.fanout', { values: ['one', 'two', 'three'] });
  const result = await json(await fetch(processUrl(a, id, '/result?waitMs=10000')));
  assert.equal(result.status, 'completed');
  const children = (await json(await fetch(processUrl(a, id, '/children')))).items as { processId: string }[];
  assert.equal(children.length, 3);
  for (const child of children) {
    // B never held the tree: the process directory names the child's root, the head confirms it.
    const read = await fetch(processUrl(b, child.processId));
    assert.equal(read.status, 200, await read.clone().text());
    const view = await json(read);
    assert.equal(view.rootId, id);
    assert.equal(view.status, 'completed');
    // A command on the child reaches its tree (finished here), not "no such process".
    const cancel = await post(processUrl(b, child.processId, '/cancel'));
    assert.equal(cancel.status, 409, await cancel.clone().text());
    assert.equal((await json(cancel)).code, 'process_finished');
  }
  // An id no tree holds is still unknown everywhere.
  const unknown = await fetch(processUrl(b, 'process:00000000000000000000000000000000'));
  assert.equal(unknown.status, 404);
});
