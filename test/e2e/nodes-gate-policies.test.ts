import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { Cluster, eventually, json, ownerOf, post, processUrl, startProcess, type Node } from './nodes-cluster.js';

/**
 * A gate policy races people for a gate across real nodes sharing one Redis (issue 16): the policy
 * runs on the tree's owner, a person answers at once through the other node (forwarded to the owner);
 * whoever wins, exactly one answer is in the head, recorded with the winner's provenance, and every
 * other answer is 409 naming it.
 */

const cluster = new Cluster();
const module = fileURLToPath(new URL('../fixtures/policy-race-deployments.ts', import.meta.url));
const env = { SCOPE_NODE_LEASE_MS: '4000', SCOPE_NODE_RENEW_MS: '400', SCOPE_DEMOS: 'off', SCOPE_DEPLOYMENTS: module };
let a: Node;
let b: Node;

before(async () => {
  await cluster.start();
  [a, b] = await Promise.all([cluster.node('a', env), cluster.node('b', env)]);
});

after(async () => {
  await cluster.stop();
});

function gateIdOf(processId: string, waitId: string): string {
  return `gate:${Buffer.from(`${processId} ${waitId}`, 'utf8').toString('base64url')}`;
}

test('two nodes, a person and a policy racing for each of 8 gates: exactly one answer each, with the winner’s provenance', async () => {
  const wins = { human: 0, policy: 0 };
  for (let round = 0; round < 8; round += 1) {
    const id = await startProcess(a, 'demo.approval', { subject: `race ${round}` });
    const owner = (await eventually(() => ownerOf(cluster, id), `${id} owned`)).node;
    const other = owner === a.id ? b : a;
    // The person, on the node that does not own the tree: answers the moment the wait is visible there.
    let person = true;
    let waitId = await eventually(async () => {
      const view = await json(await fetch(processUrl(other, id)));
      return typeof view.waitId === 'string' ? (view.waitId as string) : view.status === 'completed' ? '' : undefined;
    }, `${id} waiting on ${other.id}`);
    if (waitId === '') {
      // The policy answered before the other node showed the wait: the person never got to try.
      person = false;
      const answered = await json(await fetch(`${other.url}/v1/gates?rootId=${encodeURIComponent(id)}&state=answered`));
      waitId = answered.items[0].subject.waitId as string;
    }
    const gateId = gateIdOf(id, waitId);
    const responses = await Promise.all(
      (person ? [0, 1, 2] : []).map(async (index) => {
        const response = await post(`${other.url}/v1/gates/${encodeURIComponent(gateId)}/answer`, { answer: { approved: false }, requestId: `person-${index}`, actor: `person-${index}` });
        return { status: response.status, body: await json(response) };
      }),
    );
    const gate = await eventually(async () => {
      const view = await json(await fetch(`${a.url}/v1/gates/${encodeURIComponent(gateId)}`));
      return view.state === 'answered' ? view : undefined;
    }, `${gateId} answered`);
    const provenance = gate.answer.provenance as 'human' | 'policy';
    wins[provenance] += 1;
    const accepted = responses.filter((response) => response.status === 200);
    assert.equal(accepted.length, provenance === 'human' ? 1 : 0, JSON.stringify(responses));
    for (const response of responses) {
      if (response.status === 200) continue;
      assert.equal(response.status, 409, JSON.stringify(response.body));
      assert.equal(response.body.firstAnswer.provenance, provenance);
    }
    if (provenance === 'policy') assert.equal(gate.answer.rule, 'test.race.approve-after-thinking');
    // Exactly one answer in the head, and the process saw that one.
    const receipts = (await json(await fetch(processUrl(b, id, '/signals?limit=1000')))).items as Array<{ id: string; waitId: string | null; agency: string }>;
    const answers = receipts.filter((receipt) => receipt.waitId === waitId && !receipt.id.startsWith('signal:engine:'));
    assert.equal(answers.length, 1, JSON.stringify(receipts));
    assert.equal(answers[0]?.id, gate.answer.signalId);
    assert.equal(answers[0]?.agency, provenance === 'human' ? 'user' : 'machine');
    const result = await json(await fetch(processUrl(b, id, '/result?waitMs=10000')));
    assert.equal(result.output.approved, provenance === 'policy');
  }
  process.stdout.write(`# person vs policy over 8 gates: ${JSON.stringify(wins)}\n`);
});
