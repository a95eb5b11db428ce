import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cluster, eventually, json, post, type Node } from './nodes-cluster.js';

/**
 * Host-owned gates on real nodes sharing one Redis (issue 16): answered exactly once whichever node
 * each answer reaches, listed and read on every node, and the opener's long poll on one node woken
 * by an answer given on the other (the gates channel), with the answer gone after close.
 */

const cluster = new Cluster();
const lease = { SCOPE_NODE_LEASE_MS: '4000', SCOPE_NODE_RENEW_MS: '400' };
let a: Node;
let b: Node;

before(async () => {
  await cluster.start();
  [a, b] = await Promise.all([cluster.node('a', lease), cluster.node('b', lease)]);
});

after(async () => {
  await cluster.stop();
});

const gateUrl = (node: Node, id: string, tail = '') => `${node.url}/v1/gates/${encodeURIComponent(id)}${tail}`;

/** A barrier: resolves once `count` answer polls wait on `node` (its metrics say so), so what follows must wake them. */
async function pollsWaiting(node: Node, count: number): Promise<void> {
  await eventually(async () => {
    const text = await (await fetch(`${node.url}/metrics`)).text();
    return new RegExp(`^scope_gate_answer_polls ${count}$`, 'm').test(text) ? true : undefined;
  }, `${count} answer poll(s) waiting on ${node.id}`);
}

test('20 concurrent answers to one host-owned gate from both nodes: exactly one 200, every other 409 with the winner', async () => {
  const opened = await post(`${a.url}/v1/gates`, { kind: 'form', prompt: 'Pick one', answerSchema: { type: 'object', properties: { pick: { type: 'integer' } }, required: ['pick'] } });
  assert.equal(opened.status, 201);
  const { gateId } = (await json(opened)).gate as { gateId: string };
  // Listed on the other node too (the tenant index in Redis).
  const listed = await json(await fetch(`${b.url}/v1/gates?owner=host`));
  assert.ok(listed.items.some((item: { gateId: string }) => item.gateId === gateId));

  const responses = await Promise.all(
    Array.from({ length: 20 }, async (_, index) => {
      const response = await post(gateUrl(index % 2 === 0 ? a : b, gateId, '/answer'), { answer: { pick: index }, requestId: `req-${index}`, actor: `person-${index}` });
      return { index, status: response.status, body: await json(response) };
    }),
  );
  const winners = responses.filter((response) => response.status === 200);
  assert.equal(winners.length, 1, JSON.stringify(responses.map((response) => [response.status, response.body?.code])));
  const winner = winners[0] as (typeof winners)[number];
  for (const response of responses) {
    if (response === winner) continue;
    assert.equal(response.status, 409, JSON.stringify(response.body));
    assert.equal(response.body.code, 'gate_already_answered');
    assert.deepEqual(response.body.firstAnswer, { answeredAt: winner.body.gate.answer.answeredAt, provenance: 'human', actor: `person-${winner.index}` });
  }
  for (const node of [a, b]) {
    const read = await json(await fetch(gateUrl(node, gateId, '/answer')));
    assert.equal(read.gate.state, 'answered');
    assert.deepEqual(read.answer, { pick: winner.index });
  }
});

test('the opener polls on one node, the answer comes on the other: the poll is woken; after close the answer is gone on both', async () => {
  const opened = await json(await post(`${a.url}/v1/gates`, { kind: 'form', answerSchema: { type: 'string' } }));
  const gateId = opened.gate.gateId as string;
  const started = Date.now();
  const waiting = fetch(gateUrl(a, gateId, '/answer?waitMs=60000')).then(json);
  await pollsWaiting(a, 1);
  const answered = await post(gateUrl(b, gateId, '/answer'), { answer: 'from b', requestId: 'x' });
  assert.equal(answered.status, 200);
  const woken = await waiting;
  assert.ok(Date.now() - started < 30_000, 'woken by the answer, not by waitMs');
  assert.equal(woken.gate.state, 'answered');
  assert.equal(woken.answer, 'from b');

  // A poll on b is woken by a close on a.
  const second = await json(await post(`${a.url}/v1/gates`, { kind: 'form', answerSchema: true }));
  const pending = fetch(gateUrl(b, second.gate.gateId, '/answer?waitMs=60000')).then(json);
  await pollsWaiting(b, 1);
  const closing = Date.now();
  assert.equal((await post(gateUrl(a, second.gate.gateId, '/close'))).status, 200);
  assert.equal((await pending).gate.state, 'closed');
  assert.ok(Date.now() - closing < 30_000, 'woken by the close, not by waitMs');

  assert.equal((await post(gateUrl(b, gateId, '/close'))).status, 200);
  for (const node of [a, b]) {
    const read = await json(await fetch(gateUrl(node, gateId, '/answer')));
    assert.equal(read.gate.state, 'closed');
    assert.equal(read.answer, null);
    assert.equal(read.gate.answer.provenance, 'human');
  }
});
