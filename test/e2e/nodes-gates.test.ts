import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cluster, eventually, exited, json, ownerOf, post, processUrl, startProcess, waitingWaitId, type Node } from './nodes-cluster.js';

/**
 * Gates on real nodes sharing one Redis (issue 16): answered exactly once across nodes, whoever
 * forwards to whom, and answered iff the head holds the answer, also when the owner dies mid-answer.
 */

const cluster = new Cluster();
const lease = { SCOPE_NODE_LEASE_MS: '4000', SCOPE_NODE_RENEW_MS: '400' };
let a: Node;
let b: Node;

before(async () => {
  await cluster.start();
  // Leases a loaded test machine keeps renewing (the file's assertions are about answers, not leases).
  [a, b] = await Promise.all([cluster.node('a', lease), cluster.node('b', lease)]);
});

after(async () => {
  await cluster.stop();
});

interface Listed {
  gateId: string;
  state: string;
  answer: { provenance: string; actor: string | null; signalId: string; answeredAt: string } | null;
}

async function listedGate(node: Node, root: string): Promise<Listed> {
  return eventually(async () => {
    const page = await json(await fetch(`${node.url}/v1/gates?rootId=${encodeURIComponent(root)}`));
    return page.items?.length === 1 ? (page.items[0] as Listed) : undefined;
  }, `the gate of ${root} listed on ${node.id}`);
}

function answer(node: Node, gateId: string, body: unknown): Promise<Response> {
  return post(`${node.url}/v1/gates/${encodeURIComponent(gateId)}/answer`, body);
}

/** What a client does: a 503 (retry later) is sent again under the same request id, a few times. */
async function answerRetrying(node: Node, gateId: string, body: unknown): Promise<Response> {
  for (let attempt = 0; ; attempt += 1) {
    const response = await answer(node, gateId, body);
    if (response.status !== 503 || attempt === 5) return response;
    await response.body?.cancel();
  }
}

async function gateOn(node: Node, gateId: string): Promise<Listed> {
  const response = await fetch(`${node.url}/v1/gates/${encodeURIComponent(gateId)}`);
  assert.equal(response.status, 200);
  return (await json(response)) as Listed;
}

/** The receipts of the head addressed to `waitId` (what the process sees of the answer). */
async function answersInHead(node: Node, id: string, waitId: string): Promise<Array<{ id: string; agency: string }>> {
  const page = await json(await fetch(processUrl(node, id, '/signals?limit=1000')));
  // The wait's opening carries its id too (an engine-minted record): only answers count.
  return (page.items as Array<{ id: string; waitId: string | null; agency: string }>).filter((receipt) => receipt.waitId === waitId && !receipt.id.startsWith('signal:engine:'));
}

test('50 concurrent answers to one gate from both nodes: exactly one in the head, every other 409 with the winner’s provenance and actor', async () => {
  const id = await startProcess(a, 'demo.approval', { subject: 'race' });
  const waitId = await waitingWaitId(a, id);
  // Listed on the other node too: the open-wait index, verified against the acknowledged head.
  const gate = await listedGate(b, id);
  assert.equal(gate.state, 'open');

  const started = performance.now();
  const responses = await Promise.all(
    Array.from({ length: 50 }, async (_, index) => {
      const node = index % 2 === 0 ? a : b;
      const response = await answerRetrying(node, gate.gateId, { answer: { approved: index % 3 === 0 }, requestId: `req-${index}`, actor: `person-${index}` });
      return { index, status: response.status, body: await json(response) };
    }),
  );
  process.stdout.write(`# 50 concurrent gate answers from two nodes: ${Math.round(performance.now() - started)} ms\n`);
  const winners = responses.filter((response) => response.status === 200);
  assert.equal(winners.length, 1, JSON.stringify(responses.map((response) => [response.status, response.body?.code])));
  const winner = winners[0] as (typeof winners)[number];
  const winnerActor = `person-${winner.index}`;
  for (const response of responses) {
    if (response === winner) continue;
    assert.equal(response.status, 409, JSON.stringify(response.body));
    assert.equal(response.body.code, 'gate_already_answered');
    assert.deepEqual(response.body.firstAnswer, { answeredAt: winner.body.gate.answer.answeredAt, provenance: 'human', actor: winnerActor });
  }
  const inHead = await answersInHead(b, id, waitId);
  assert.equal(inHead.length, 1);
  assert.equal(inHead[0]?.id, winner.body.gate.answer.signalId);
  assert.equal(inHead[0]?.agency, 'user', 'a person answered (recorded beside the head, read on the other node)');
  for (const node of [a, b]) {
    const read = await gateOn(node, gate.gateId);
    assert.equal(read.state, 'answered');
    assert.equal(read.answer?.actor, winnerActor);
  }
  const result = await json(await fetch(processUrl(b, id, '/result?waitMs=10000')));
  assert.equal(result.output.approved, winner.index % 3 === 0);
});

test('SIGKILL of the owner during the answers: after takeover the gate is answered iff the head holds the answer, seen exactly once', async () => {
  const id = await startProcess(a, 'demo.approval', { subject: 'crash' });
  const waitId = await waitingWaitId(a, id);
  const gate = await listedGate(b, id);
  assert.equal((await ownerOf(cluster, id))?.node, 'a');

  // Answers from both nodes; the owner dies while they are in flight (after a random number were sent).
  const killAfter = Math.floor(Math.random() * 6);
  const sent: Promise<number>[] = [];
  for (let index = 0; index < 12; index += 1) {
    const node = index % 2 === 0 ? a : b;
    sent.push(
      answer(node, gate.gateId, { answer: { approved: true }, requestId: `crash-${index}`, actor: `p-${index}` }).then(
        (response) => response.status,
        () => 0,
      ),
    );
    if (index === killAfter) a.child.kill('SIGKILL');
  }
  const statuses = await Promise.all(sent);
  await exited(a.child);

  // A parked tree is taken over by the next command once the dead owner's lease lapsed: a restore on b.
  await eventually(async () => ((await post(`${b.url}/v1/trees/${encodeURIComponent(id)}/restore`)).status === 200 ? true : undefined), 'takeover by b', Number(lease.SCOPE_NODE_LEASE_MS) + 15_000);
  assert.equal((await ownerOf(cluster, id))?.node, 'b');
  const record = await cluster.redis.get(`${cluster.prefix}:{${id}}:record:gate:${id}:${waitId}`);
  const inHead = await answersInHead(b, id, waitId);
  const read = await gateOn(b, gate.gateId);
  assert.ok(inHead.length <= 1, 'the process sees at most one answer');
  assert.equal(read.state === 'answered', inHead.length === 1, `state ${read.state} with ${inHead.length} answers in the head (statuses ${statuses.join(',')})`);
  assert.equal(record !== null, inHead.length === 1, 'the record exists iff the head holds the answer');
  if (inHead.length === 1) {
    assert.equal(read.answer?.signalId, inHead[0]?.id);
    assert.equal(read.answer?.provenance, 'human');
    assert.equal(inHead[0]?.agency, 'user');
  } else {
    // Nothing landed: the gate is open, and answering it on the survivor works.
    assert.equal(read.state, 'open');
    const late = await answer(b, gate.gateId, { answer: { approved: true }, requestId: 'after-takeover' });
    assert.equal(late.status, 200, await late.text());
  }
  const result = await json(await fetch(processUrl(b, id, '/result?waitMs=15000')));
  assert.equal(result.status, 'completed');
  assert.equal((await answersInHead(b, id, waitId)).length, 1, 'exactly once');
  // Whichever way it went, the answer in the head has its record beside it, written by the same commit.
  const final = await gateOn(b, gate.gateId);
  assert.equal(final.answer?.provenance, 'human');
  assert.notEqual(await cluster.redis.get(`${cluster.prefix}:{${id}}:record:gate:${id}:${waitId}`), null);
  // Every 200 any client saw names the answer the head holds.
  assert.ok(statuses.filter((status) => status === 200).length <= 1);
});
