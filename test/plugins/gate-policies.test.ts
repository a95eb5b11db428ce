import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import request from 'supertest';
import { approvalDefinition } from '../../strategies/demo/approval.js';
import { counterDefinition } from '../../strategies/demo/counter.js';
import { buildApp } from '../../src/app/app.js';
import { DeploymentCatalog } from '../../src/server/catalog.js';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';
import { type GatePolicy, policySetDigest, withGatePolicies } from '../../src/server/gates/gate-policies.js';
import { Deployment, Digest } from '../../src/kernel/index.js';
import type { Json } from '../../src/server/host.js';
import { problemOf, until } from './server.js';

/**
 * Auto-decisions by gate policy (issue 16): a deployment's pure rules answer gates on the tree's owner
 * through the gate route's answer path (provenance `policy`, the rule recorded), bind the head they
 * read, leave the gate open on error or abstention, and stop in a tree after failures in a row.
 */

/** Decides by the subject the process was started with, so each test picks its case. */
const approvalPolicy: GatePolicy = {
  rule: 'test.by-subject',
  version: '1',
  decide(gate) {
    const subject = (gate.state.value as { subject: string }).subject;
    if (subject === 'throw') throw new Error('the rule broke');
    if (subject === 'hang') return new Promise(() => undefined);
    if (subject === 'invalid') return { answer: { approved: 'yes' } as Json };
    if (subject === 'approve' || subject === 'move') return { answer: { approved: true, comment: `by ${gate.deployment}` } };
    return 'abstain';
  },
};

let counterCalls = 0;
const counterPolicy: GatePolicy = {
  rule: 'test.counter-throws',
  version: '1',
  decide() {
    counterCalls += 1;
    throw new Error('always broken');
  },
};

const digests = (name: string) => ({ implementationDigest: Digest.of(`test:${name}:impl`), configurationDigest: Digest.of(`test:${name}:config`) });

let logs = '';
let app: Awaited<ReturnType<typeof buildApp>>;
let host: EngineHost;
let url: string;

before(async () => {
  const config = loadConfig({ SCOPE_SHUTDOWN_MS: '300', SCOPE_DEMOS: 'false', SCOPE_POLICY_BREAKER_FAILURES: '2' });
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _encoding, done) {
        logs += chunk.toString('utf8');
        done();
      },
    }),
  );
  host = new EngineHost({
    config,
    defaultMetrics: false,
    logger,
    deployments: [
      withGatePolicies({ definition: approvalDefinition, ...digests('approval') }, [approvalPolicy]),
      withGatePolicies({ definition: counterDefinition, ...digests('counter') }, [counterPolicy]),
    ],
    // The head moves between the decision and the answer: a note reaches the process in between.
    policyDecideTimeoutMs: 200,
    afterPolicyDecision: async (gate) => {
      if ((gate.state.value as { subject?: string }).subject !== 'move') return;
      await host.deliverSignals(gate.processId, [{ id: 'note-between', payload: { note: 'the facts changed' } }], { agency: 'user' });
    },
  });
  app = await buildApp({ host, config, logger: false });
  url = await app.listen({ port: 0, host: '127.0.0.1' });
});

after(async () => {
  await app.close();
});

async function startWaiting(deployment: string, input: unknown): Promise<string> {
  const started = await request(url).post('/v1/processes').send({ deployment, input });
  assert.equal(started.status, 201, started.text);
  return started.body.processId as string;
}

async function gateOf(root: string, state = 'open'): Promise<any> {
  return until(
    async () => (await request(url).get(`/v1/gates?rootId=${encodeURIComponent(root)}&state=${state}`)).body.items,
    (items) => Array.isArray(items) && items.length >= 1,
  ).then((items) => items.at(-1));
}

const logged = (text: string, root: string) => until(async () => logs.split('\n').filter((line) => line.includes(text) && line.includes(root)), (lines) => lines.length > 0);
const treeOf = async (root: string) => (await request(url).get(`/v1/trees/${encodeURIComponent(root)}`)).body;

describe('gate policies', () => {
  test('a policy answers a listed gate: recorded with provenance policy and its rule, as the machine', async () => {
    const root = await startWaiting('demo.approval', { subject: 'approve' });
    const gate = await gateOf(root, 'answered');
    assert.equal(gate.answer.provenance, 'policy');
    assert.equal(gate.answer.rule, 'test.by-subject');
    assert.equal(gate.answer.actor, 'policy:test.by-subject');
    const result = await request(url).get(`/v1/processes/${encodeURIComponent(root)}/result?waitMs=5000`);
    assert.equal(result.status, 200, result.text);
    assert.equal(result.body.output.approved, true);
    const receipts = (await request(url).get(`/v1/processes/${encodeURIComponent(root)}/signals`)).body.items;
    const answer = receipts.find((receipt: { id: string }) => receipt.id === gate.answer.signalId);
    assert.equal(answer.agency, 'machine');
    // A person's later answer is refused with the policy's provenance.
    const late = await request(url).post(`/v1/gates/${encodeURIComponent(gate.gateId)}/answer`).send({ answer: { approved: false }, requestId: 'late' });
    assert.match(problemOf(late, 409, 'gate_already_answered').detail, /policy by policy:test\.by-subject/);
  });

  test('abstention leaves the gate open for a person', async () => {
    const root = await startWaiting('demo.approval', { subject: 'ask a person' });
    await logged('gate policy abstained', root);
    const gate = await gateOf(root);
    assert.equal(gate.state, 'open');
    const answered = await request(url).post(`/v1/gates/${encodeURIComponent(gate.gateId)}/answer`).send({ answer: { approved: false }, requestId: 'p1', actor: 'ada' });
    assert.equal(answered.status, 200, answered.text);
    assert.equal(answered.body.gate.answer.provenance, 'human');
  });

  test('the decision binds the head it read: the head moved before the answer, so the policy abstains', async () => {
    const root = await startWaiting('demo.approval', { subject: 'move' });
    await logged('the head moved since its decision', root);
    const gate = await gateOf(root);
    assert.equal(gate.state, 'open');
    assert.equal(gate.answer, null);
    // The note that moved the head is in; no answer is, and nothing counted against the breaker.
    const receipts = (await request(url).get(`/v1/processes/${encodeURIComponent(root)}/signals`)).body.items;
    assert.ok(receipts.some((receipt: { id: string }) => receipt.id === 'note-between'));
    assert.equal((await treeOf(root)).policyBreaker, undefined);
  });

  test('a policy that throws, answers what the schema refuses, or does not decide in time leaves the gate open and counts a failure', async () => {
    for (const subject of ['throw', 'invalid', 'hang']) {
      const root = await startWaiting('demo.approval', { subject });
      const tree = await until(() => treeOf(root), (view) => view.policyBreaker !== undefined);
      assert.deepEqual({ ...tree.policyBreaker, lastFailure: undefined }, { consecutiveFailures: 1, tripped: false, trippedAt: null, lastFailure: undefined });
      assert.match(tree.policyBreaker.lastFailure, { throw: /decide threw/, invalid: /answer schema/, hang: /decide timed out/ }[subject] as RegExp);
      const gate = await gateOf(root);
      assert.equal(gate.state, 'open');
      assert.equal(gate.answer, null);
    }
  });

  test('the breaker trips after failures in a row in one tree: policies stop running there', async () => {
    const root = await startWaiting('demo.counter', { target: 100 });
    for (let round = 1; round <= 3; round += 1) {
      const gate = await until(() => gateOf(root), (open) => open.subject.key === `round-${round}`);
      if (round < 3) {
        await until(async () => counterCalls, (calls) => calls === round);
      } else {
        await logged('gate policies skipped: the tree’s policy breaker is tripped', root);
      }
      const answered = await request(url).post(`/v1/gates/${encodeURIComponent(gate.gateId)}/answer`).send({ answer: { add: 1 }, requestId: `r${round}` });
      assert.equal(answered.status, 200, answered.text);
    }
    assert.equal(counterCalls, 2);
    await logged('gate policy breaker tripped', root);
    const tree = await treeOf(root);
    assert.equal(tree.policyBreaker.tripped, true);
    assert.equal(tree.policyBreaker.consecutiveFailures, 2);
    assert.equal(typeof tree.policyBreaker.trippedAt, 'string');
  });

  test('a caller cannot claim policy provenance: not in the body, not by a header', async () => {
    const root = await startWaiting('demo.approval', { subject: 'forged' });
    await logged('gate policy abstained', root);
    const gate = await gateOf(root);
    const path = `/v1/gates/${encodeURIComponent(gate.gateId)}/answer`;
    for (const extra of [{ provenance: 'policy' }, { rule: 'test.by-subject' }, { provenance: 'policy', rule: 'test.by-subject' }]) {
      const refused = await request(url).post(path).send({ answer: { approved: true }, requestId: 'forge', ...extra });
      assert.equal(refused.status, 400, refused.text);
      assert.equal((await gateOf(root)).state, 'open');
    }
    const signalled = await request(url)
      .post(`/v1/processes/${encodeURIComponent(root)}/signals`)
      .send({ signals: [{ id: 'forged-signal', waitId: gate.subject.waitId, payload: { approved: true }, provenance: 'policy' }] });
    assert.equal(signalled.status, 400, signalled.text);
    const answered = await request(url)
      .post(path)
      .set('scope-provenance', 'policy')
      .set('x-scope-provenance', 'policy')
      .set('scope-gate-rule', 'test.by-subject')
      .set('scope-signal-agency', 'machine')
      .send({ answer: { approved: true }, requestId: 'forge-header', actor: 'policy:test.by-subject' });
    assert.equal(answered.status, 200, answered.text);
    assert.equal(answered.body.gate.answer.provenance, 'human');
    assert.equal(answered.body.gate.answer.rule, null);
  });
});

describe('policies are part of the configuration digest', () => {
  const config = () => ({ definition: approvalDefinition, ...digests('digest') });
  test('another rule, or another version of one, is another DeploymentRef', () => {
    const base = withGatePolicies(config(), [approvalPolicy]).deployment.ref;
    assert.ok(base.equals(withGatePolicies(config(), [{ ...approvalPolicy }]).deployment.ref));
    assert.ok(!base.equals(withGatePolicies(config(), [{ ...approvalPolicy, version: '2' }]).deployment.ref));
    assert.ok(!base.equals(withGatePolicies(config(), [{ ...approvalPolicy, rule: 'test.other' }]).deployment.ref));
    assert.ok(!base.equals(withGatePolicies(config(), []).deployment.ref));
    assert.ok(!base.equals(Deployment.create(config()).ref));
    assert.notEqual(policySetDigest([approvalPolicy]).toString(), policySetDigest([{ ...approvalPolicy, version: '2' }]).toString());
  });

  test('the catalog refuses policies that are not in the ref', () => {
    const catalog = new DeploymentCatalog();
    assert.throws(() => catalog.register({ deployment: Deployment.create(config()), policies: [approvalPolicy] }), /not part of its configuration digest/);
    const bound = withGatePolicies(config(), [approvalPolicy]);
    assert.throws(() => catalog.register({ deployment: bound.deployment, policies: [{ ...approvalPolicy, version: '2' }] }), /not part of its configuration digest/);
    catalog.register(bound);
    assert.deepEqual(catalog.policies(bound.deployment.ref).map((policy) => policy.rule), ['test.by-subject']);
    assert.throws(() => withGatePolicies(config(), [approvalPolicy, approvalPolicy]), /registered twice/);
  });
});
