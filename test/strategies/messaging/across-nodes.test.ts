/**
 * Messages cross nodes: two real `scope serve` nodes on one Redis, the recipient's tree owned by node
 * A, the sender's by node B. B's delivery port finds the recipient owned elsewhere and forwards the one
 * signal to A's signals route, where A admits it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cluster, json, ownerOf, post, processUrl, waitingWaitId, type Node } from '../../e2e/nodes-cluster.js';

const cluster = new Cluster();
let a: Node;
let b: Node;

before(async () => {
  await cluster.start();
  const env = { SCOPE_GRANTS: JSON.stringify({ capabilities: ['scope.messaging.send'] }) };
  [a, b] = await Promise.all([cluster.node('a', env), cluster.node('b', env)]);
});

after(async () => {
  await cluster.stop();
});

async function started(node: Node, deployment: string, input: unknown): Promise<string> {
  const response = await post(`${node.url}/v1/processes`, { deployment, input });
  assert.equal(response.status, 201, await response.clone().text());
  return (await json(response)).processId as string;
}

test('a message from a tree on node B reaches a recipient owned by node A', async () => {
  const recipient = await started(a, 'demo.approval', { subject: 'across nodes' });
  const waitId = await waitingWaitId(a, recipient);
  const sender = await started(b, 'example.messaging.notify', { recipient, waitId, payload: { approved: true, comment: 'from b' } });
  assert.equal((await ownerOf(cluster, recipient))?.node, 'a');
  assert.equal((await ownerOf(cluster, sender))?.node, 'b');

  const sent = await json(await fetch(processUrl(b, sender, '/result?waitMs=15000')));
  assert.equal(sent.status, 'completed', JSON.stringify(sent));
  assert.match(sent.output.signalId, /^signal:message:sha256:[0-9a-f]{64}$/);

  const answered = await json(await fetch(processUrl(a, recipient, '/result?waitMs=15000')));
  assert.equal(answered.status, 'completed', JSON.stringify(answered));
  assert.deepEqual(answered.output, { subject: 'across nodes', approved: true, comment: 'from b', notes: [] });
  const receipts = await json(await fetch(processUrl(a, recipient, '/signals')));
  assert.deepEqual(
    (receipts.items as Array<{ id: string }>).filter((item) => item.id.startsWith('signal:message:')).map((item) => item.id),
    [sent.output.signalId],
  );
  // The recipient stayed on its owner: A admitted the forwarded signal.
  assert.equal((await ownerOf(cluster, recipient))?.node, 'a');
});
