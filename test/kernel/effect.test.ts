import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import { DeploymentRef } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import {
  ChildSpec,
  ChildWaitCondition,
  ChildWaitSpec,
  Effect,
  EffectRequest,
  parseChildWaitBoundary,
  parseEffectTarget,
  type ChildSpecConfig,
  type ChildWaitSpecConfig,
  type EffectRequestConfig,
} from '../../src/kernel/effect.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import {
  ChildKey,
  EffectAttemptId,
  EffectId,
  ProcessId,
  SignalId,
  TreeIncarnationId,
  WaitKey,
} from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Quota } from '../../src/kernel/quota.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import { Schema } from '../../src/kernel/schema.js';
import { SignalRequest } from '../../src/kernel/signal.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const invalidEffect = code(ErrorCode.invalidEffect);
const invalidChildStart = code(ErrorCode.invalidChildStart);
const invalidChildWait = code(ErrorCode.invalidChildWait);
const invalidChildControl = code(ErrorCode.invalidChildControl);

const ref = DeploymentRef.create({
  name: 'example.child',
  contractDigest: Digest.of('contract'),
  implementationDigest: Digest.of('implementation'),
  configurationDigest: Digest.of('configuration'),
  bindingsDigest: DeploymentRef.bindingsDigestOf([]),
});

const budget = Budget.of({ steps: Quota.of(10), effects: Quota.of(5), signals: Quota.unlimited() });
const budgetJson = '{"effects":{"maximum":5},"signals":{"maximum":null},"steps":{"maximum":10}}';

const specConfig: ChildSpecConfig = {
  key: ChildKey.parse('worker.1'),
  deploymentRef: ref,
  input: Payload.parse('{"task":"x"}'),
  budget,
  capabilities: CapabilitySet.of(['net.read', 'fs.read']),
};

const specJson =
  `{"budget":${budgetJson},"capabilities":["fs.read","net.read"],"deployment_ref":${ref.json()},` +
  '"input":{"task":"x"},"key":"worker.1"}';

const childA = ProcessId.parse('process:a');
const childB = ProcessId.parse('process:b');
const childC = ProcessId.parse('process:c');

function waitSpec(overrides: Partial<ChildWaitSpecConfig> = {}): ChildWaitSpec {
  return ChildWaitSpec.create({
    key: WaitKey.parse('gather'),
    children: [childB, childA],
    boundary: 'terminal_result',
    condition: ChildWaitCondition.all(),
    ...overrides,
  });
}

test('a dispatcher effect carries an opaque payload; empty capabilities are omitted', () => {
  const effect = Effect.dispatcher(Payload.parse('{"tool":"search","q":"x"}'));
  assert.equal(effect.target, 'dispatcher');
  assert.equal(effect.isFramework, false);
  assert.equal(effect.requiredCapabilities.size, 0);
  assert.equal(effect.json(), '{"payload":{"q":"x","tool":"search"},"target":"dispatcher"}');
  assert.throws(() => effect.frameworkOperation(), invalidEffect);
  assert.ok(Object.isFrozen(effect));
});

test('a dispatcher effect lists its required capabilities in canonical order', () => {
  const effect = Effect.dispatcher(Payload.parse('{}'), CapabilitySet.of(['net.write', 'fs.read', 'net.write']));
  assert.equal(effect.json(), '{"payload":{},"required_capabilities":["fs.read","net.write"],"target":"dispatcher"}');
  assert.deepEqual(effect.requiredCapabilities.values(), ['fs.read', 'net.write']);
  assert.ok(Effect.parse(effect.json()).equals(effect));
});

test('Effect.dispatcher rejects members of the wrong type', () => {
  assert.throws(() => Effect.dispatcher('{}' as unknown as Payload), invalidEffect);
  assert.throws(() => Effect.dispatcher(Payload.parse('{}'), ['fs.read'] as unknown as CapabilitySet), invalidEffect);
});

test('a wait effect asks for a WaitId for its key', () => {
  const effect = Effect.wait(WaitKey.parse('approval'));
  assert.equal(effect.target, 'framework');
  assert.equal(effect.json(), '{"payload":{"key":"approval","operation":"wait"},"target":"framework"}');
  const operation = effect.frameworkOperation();
  assert.equal(operation.operation, 'wait');
  assert.ok(operation.operation === 'wait' && operation.key.equals(WaitKey.parse('approval')));
  assert.ok(Effect.parse(effect.json()).equals(effect));
  assert.throws(() => Effect.wait('approval' as unknown as WaitKey), invalidEffect);
});

test('a wait effect may carry a run-time answer schema and prompt on its wire', () => {
  const answerSchema = Schema.of({ type: 'object', properties: { add: { type: 'integer' } }, required: ['add'], additionalProperties: false });
  const effect = Effect.wait(WaitKey.parse('round-1'), { answerSchema, prompt: 'How much?' });
  assert.equal(
    effect.json(),
    '{"payload":{"answer_schema":{"additionalProperties":false,"properties":{"add":{"type":"integer"}},"required":["add"],"type":"object"},' +
      '"key":"round-1","operation":"wait","prompt":"How much?"},"target":"framework"}',
  );
  const decoded = Effect.parse(effect.json());
  assert.ok(decoded.equals(effect));
  const operation = decoded.frameworkOperation();
  assert.ok(operation.operation === 'wait' && operation.answerSchema?.equals(answerSchema) && operation.prompt === 'How much?');
  // Without options (or with empty ones) the wire is exactly the plain wait.
  assert.equal(Effect.wait(WaitKey.parse('round-1'), {}).json(), Effect.wait(WaitKey.parse('round-1')).json());
  assert.ok(!Effect.wait(WaitKey.parse('round-1'), { prompt: 'How much?' }).equals(Effect.wait(WaitKey.parse('round-1'))));
});

test('wait options and their wire are validated', () => {
  const key = WaitKey.parse('k');
  assert.throws(() => Effect.wait(key, { answerSchema: { type: 'object' } as unknown as Schema }), invalidEffect);
  for (const prompt of ['', ' padded', 'x'.repeat(4097), 7]) {
    assert.throws(() => Effect.wait(key, { prompt: prompt as string }), invalidEffect, String(prompt));
  }
  assert.throws(() => Effect.wait(key, 'options' as never), invalidEffect);
  const wire = (payload: unknown) => JSON.stringify({ target: 'framework', payload });
  assert.throws(() => Effect.parse(wire({ operation: 'wait', key: 'k', answer_schema: { type: 'strng' } })), invalidEffect);
  assert.throws(() => Effect.parse(wire({ operation: 'wait', key: 'k', prompt: '' })), invalidEffect);
  assert.throws(() => Effect.parse(wire({ operation: 'wait', key: 'k', prompt: 1 })), invalidEffect);
  assert.throws(
    () => Effect.parse(wire({ operation: 'wait', key: 'k', answer_schema: { type: 'strng' } })),
    (error: unknown) => invalidEffect(error) && (error as Error).message.startsWith('/payload/answer_schema '),
  );
});

test('a child spec has an exact canonical form and digest', () => {
  const spec = ChildSpec.create(specConfig);
  assert.equal(spec.json(), specJson);
  assert.ok(spec.digest().equals(Digest.of(specJson)));
  assert.ok(ChildSpec.parse(spec.json()).equals(spec));
  assert.ok(Object.isFrozen(spec));
  assert.ok(spec.deploymentRef.equals(ref));
  assert.ok(spec.budget.equals(budget));
  assert.deepEqual(spec.capabilities.values(), ['fs.read', 'net.read']);
});

test('ChildSpec rejects invalid members with invalid_child_start', () => {
  assert.throws(() => ChildSpec.create({ ...specConfig, key: 'worker' as unknown as ChildKey }), invalidChildStart);
  assert.throws(() => ChildSpec.create({ ...specConfig, deploymentRef: {} as DeploymentRef }), invalidChildStart);
  assert.throws(() => ChildSpec.create({ ...specConfig, input: {} as Payload }), invalidChildStart);
  assert.throws(() => ChildSpec.create({ ...specConfig, budget: {} as Budget }), invalidChildStart);
  assert.throws(() => ChildSpec.create({ ...specConfig, capabilities: [] as unknown as CapabilitySet }), invalidChildStart);
  const wire = JSON.parse(specJson) as Record<string, unknown>;
  assert.throws(() => ChildSpec.parse(JSON.stringify({ ...wire, extra: 1 })), invalidChildStart);
  for (const member of Object.keys(wire)) {
    const partial = { ...wire };
    delete partial[member];
    assert.throws(() => ChildSpec.parse(JSON.stringify(partial)), invalidChildStart, member);
  }
  assert.throws(() => ChildSpec.parse(JSON.stringify({ ...wire, capabilities: ['net.read', 'fs.read'] })), invalidChildStart);
  assert.throws(() => ChildSpec.parse(JSON.stringify({ ...wire, budget: { steps: { maximum: 1 } } })), invalidChildStart);
  assert.throws(
    () => ChildSpec.parse(JSON.stringify({ ...wire, deployment_ref: { ...(wire.deployment_ref as object), digest: Digest.of('x').toString() } })),
    invalidChildStart,
  );
});

test('a start_child effect embeds its spec', () => {
  const spec = ChildSpec.create(specConfig);
  const effect = Effect.startChild(spec);
  assert.equal(effect.json(), `{"payload":{"operation":"start_child","spec":${specJson}},"target":"framework"}`);
  const operation = Effect.parse(effect.json()).frameworkOperation();
  assert.ok(operation.operation === 'start_child' && operation.spec.equals(spec));
  assert.throws(() => Effect.startChild(specConfig as unknown as ChildSpec), invalidChildStart);
});

test('a child wait spec keeps its children in request order', () => {
  const spec = waitSpec();
  assert.equal(
    spec.json(),
    '{"boundary":"terminal_result","children":["process:b","process:a"],"condition":{"kind":"all"},"key":"gather"}',
  );
  assert.deepEqual(
    spec.children.map((child) => child.toString()),
    ['process:b', 'process:a'],
  );
  assert.equal(spec.requiredCount, 2);
  assert.ok(ChildWaitSpec.parse(spec.json()).equals(spec));
  assert.ok(!spec.equals(waitSpec({ children: [childA, childB] })), 'order is part of the request');
});

test('child wait conditions: all, any and quorum', () => {
  const any = waitSpec({ condition: ChildWaitCondition.any(), boundary: 'subtree_drained' });
  assert.equal(any.requiredCount, 1);
  assert.ok(any.json().includes('"boundary":"subtree_drained"'));
  assert.ok(any.json().includes('"condition":{"kind":"any"}'));
  const quorum = waitSpec({ children: [childA, childB, childC], condition: ChildWaitCondition.quorum(2) });
  assert.equal(quorum.requiredCount, 2);
  assert.ok(quorum.json().includes('"condition":{"kind":"quorum","quorum":2}'));
  for (const spec of [any, quorum]) assert.ok(ChildWaitSpec.parse(spec.json()).equals(spec));
  waitSpec({ condition: ChildWaitCondition.quorum(2) });
});

test('child wait specs reject empty or repeated children, bad quorums and bad boundaries', () => {
  assert.throws(() => waitSpec({ children: [] }), invalidChildWait);
  assert.throws(() => waitSpec({ children: [childA, childB, childA] }), invalidChildWait);
  assert.throws(() => waitSpec({ children: ['process:a' as unknown as ProcessId] }), invalidChildWait);
  assert.throws(() => waitSpec({ condition: ChildWaitCondition.quorum(3) }), invalidChildWait);
  assert.throws(() => ChildWaitCondition.quorum(0), invalidChildWait);
  assert.throws(() => ChildWaitCondition.quorum(1.5), invalidChildWait);
  assert.throws(() => ChildWaitCondition.quorum(2 ** 32), invalidChildWait);
  assert.throws(() => waitSpec({ condition: { kind: 'quorum', quorum: 0 } }), invalidChildWait);
  assert.throws(() => waitSpec({ condition: { kind: 'all', quorum: 1 } as unknown as ChildWaitCondition }), invalidChildWait);
  assert.throws(() => waitSpec({ condition: { kind: 'most' } as unknown as ChildWaitCondition }), invalidChildWait);
  assert.throws(() => waitSpec({ boundary: 'finished' as unknown as 'terminal_result' }), invalidChildWait);
  assert.throws(() => waitSpec({ key: 'gather' as unknown as WaitKey }), invalidChildWait);
  assert.throws(() => parseChildWaitBoundary('finished'), invalidChildWait);
});

test('decoding a child wait spec enforces the same rules', () => {
  const base = JSON.parse(waitSpec().json()) as Record<string, unknown>;
  const bad: Array<Record<string, unknown>> = [
    { ...base, children: [] },
    { ...base, children: ['process:a', 'process:a'] },
    { ...base, children: ['not an id'] },
    { ...base, children: [1] },
    { ...base, boundary: 'finished' },
    { ...base, condition: { kind: 'quorum' } },
    { ...base, condition: { kind: 'quorum', quorum: 0 } },
    { ...base, condition: { kind: 'quorum', quorum: 3 } },
    { ...base, condition: { kind: 'all', quorum: 1 } },
    { ...base, condition: { kind: 'any', extra: true } },
    { ...base, condition: { kind: 'most' } },
    { ...base, extra: 1 },
  ];
  for (const wire of bad) assert.throws(() => ChildWaitSpec.parse(JSON.stringify(wire)), invalidChildWait, JSON.stringify(wire));
});

test('a wait_children effect embeds its spec', () => {
  const spec = waitSpec();
  const effect = Effect.waitChildren(spec);
  assert.equal(effect.json(), `{"payload":{"operation":"wait_children","spec":${spec.json()}},"target":"framework"}`);
  const operation = Effect.parse(effect.json()).frameworkOperation();
  assert.ok(operation.operation === 'wait_children' && operation.spec.equals(spec));
  assert.throws(() => Effect.waitChildren({} as ChildWaitSpec), invalidChildWait);
});

test('a signal_child effect carries the child id and the exact signal request', () => {
  const request = SignalRequest.create({ id: 'parent-note-1', payload: Payload.parse('{"note":"hi"}') });
  const effect = Effect.signalChild(childA, request);
  assert.equal(
    effect.json(),
    '{"payload":{"child_id":"process:a","operation":"signal_child","signal":{"id":"parent-note-1","payload":{"note":"hi"}}},"target":"framework"}',
  );
  const operation = Effect.parse(effect.json()).frameworkOperation();
  assert.ok(operation.operation === 'signal_child' && operation.childId.equals(childA) && operation.signal.equals(request));
  assert.throws(() => Effect.signalChild('process:a' as unknown as ProcessId, request), invalidChildControl);
  assert.throws(() => Effect.signalChild(childA, {} as SignalRequest), invalidChildControl);
});

test('a cancel_child effect carries a bounded, trimmed reason', () => {
  const effect = Effect.cancelChild(childA, 'no longer needed');
  assert.equal(
    effect.json(),
    '{"payload":{"child_id":"process:a","operation":"cancel_child","reason":"no longer needed"},"target":"framework"}',
  );
  const operation = Effect.parse(effect.json()).frameworkOperation();
  assert.ok(operation.operation === 'cancel_child' && operation.reason === 'no longer needed');
  for (const reason of ['', ' padded', 'padded ', 'x'.repeat(4097)]) {
    assert.throws(() => Effect.cancelChild(childA, reason), invalidChildControl, JSON.stringify(reason.slice(0, 10)));
  }
  Effect.cancelChild(childA, 'x'.repeat(4096));
  assert.throws(() => Effect.cancelChild('process:a' as unknown as ProcessId, 'stop'), invalidChildControl);
});

test('effects decode from any member order into canonical form', () => {
  const shuffled = '{ "target": "framework", "payload": { "operation": "wait", "key": "approval" } }';
  assert.equal(Effect.parse(shuffled).json(), '{"payload":{"key":"approval","operation":"wait"},"target":"framework"}');
  const dispatcher = '{"target":"dispatcher","required_capabilities":["a.b"],"payload":{"z":1,"a":[3,1.50]}}';
  assert.equal(Effect.parse(dispatcher).json(), '{"payload":{"a":[3,1.50],"z":1},"required_capabilities":["a.b"],"target":"dispatcher"}');
});

test('decoding an effect rejects invalid targets, members and capability placement', () => {
  const bad = [
    '{"payload":{},"target":"engine"}',
    '{"payload":{}}',
    '{"target":"dispatcher"}',
    '{"payload":{},"target":"dispatcher","extra":1}',
    '{"payload":{},"required_capabilities":[],"target":"dispatcher"}',
    '{"payload":{},"required_capabilities":["b.x","a.x"],"target":"dispatcher"}',
    '{"payload":{},"required_capabilities":null,"target":"dispatcher"}',
    '{"payload":{"key":"k","operation":"wait"},"required_capabilities":["a.b"],"target":"framework"}',
    '"effect"',
  ];
  for (const text of bad) assert.throws(() => Effect.parse(text), invalidEffect, text);
  assert.throws(() => parseEffectTarget('engine'), invalidEffect);
});

test('a framework payload must be exactly one closed operation', () => {
  const engineId = SignalId.settlement(EffectId.derive(childA, 1n, 0)).toString();
  const payloads = [
    '{}',
    '"wait"',
    '[]',
    '{"operation":"sleep"}',
    '{"operation":"wait"}',
    '{"key":"k"}',
    '{"key":"k","operation":"wait","signal_payload":{}}',
    '{"key":"bad key","operation":"wait"}',
    '{"operation":"start_child"}',
    `{"operation":"start_child","spec":${specJson},"extra":1}`,
    '{"operation":"wait_children","spec":{"boundary":"terminal_result","children":[],"condition":{"kind":"all"},"key":"k"}}',
    '{"child_id":"process:a","operation":"signal_child"}',
    `{"child_id":"process:a","operation":"signal_child","signal":{"id":"${engineId}","payload":{}}}`,
    '{"child_id":"process:a","operation":"signal_child","signal":{"id":"s","payload":{},"status":"succeeded"}}',
    '{"child_id":"process:a","operation":"cancel_child"}',
    '{"child_id":"process:a","operation":"cancel_child","reason":""}',
    '{"child_id":"process:a","operation":"cancel_child","reason":" x"}',
    '{"child_id":"bad id","operation":"cancel_child","reason":"x"}',
    '{"child_id":"process:a","operation":"cancel_child","reason":"x","key":"k"}',
  ];
  for (const payload of payloads) {
    assert.throws(() => Effect.parse(`{"payload":${payload},"target":"framework"}`), invalidEffect, payload);
    // The same payload is fine as an opaque dispatcher request.
    Effect.parse(`{"payload":${payload},"target":"dispatcher"}`);
  }
});

test('effect digests are sha256 of the canonical wire form', () => {
  const effect = Effect.wait(WaitKey.parse('approval'));
  assert.ok(effect.digest().equals(Digest.of(effect.json())));
  assert.ok(!effect.digest().equals(Effect.wait(WaitKey.parse('other')).digest()));
});

/* EffectRequest ---------------------------------------------------------------------------------- */

const processId = ProcessId.parse('process:root');
const relation = ProcessRelation.root(processId);
const requestConfig: EffectRequestConfig = {
  processId,
  relation,
  deploymentRef: ref,
  stepSequence: 3n,
  batchIndex: 1,
  effect: Effect.dispatcher(Payload.parse('{"secret":"value"}')),
};

test('an effect request derives its EffectId from process, step and batch index', () => {
  const request = EffectRequest.create(requestConfig);
  assert.ok(request.id.equals(EffectId.derive(processId, 3n, 1)));
  assert.equal(request.stepSequence, 3n);
  assert.equal(request.batchIndex, 1);
  assert.equal(request.attemptId, undefined);
  assert.equal(request.incarnationId, undefined);
  assert.ok(Object.isFrozen(request));
});

test('a new attempt keeps the logical identity', () => {
  const incarnation = TreeIncarnationId.random();
  const request = EffectRequest.create({ ...requestConfig, incarnationId: incarnation });
  const attempt = EffectAttemptId.random();
  const replay = request.withAttempt(attempt);
  assert.ok(replay.id.equals(request.id));
  assert.ok(replay.attemptId?.equals(attempt));
  assert.ok(replay.incarnationId?.equals(incarnation));
  assert.equal(request.attemptId, undefined);
});

test('effect requests reject invalid members with invalid_effect', () => {
  const other = ProcessRelation.root(ProcessId.parse('process:other'));
  assert.throws(() => EffectRequest.create({ ...requestConfig, relation: other }), invalidEffect);
  assert.throws(() => EffectRequest.create({ ...requestConfig, stepSequence: 0n }), invalidEffect);
  assert.throws(() => EffectRequest.create({ ...requestConfig, stepSequence: 2n ** 64n }), invalidEffect);
  assert.throws(() => EffectRequest.create({ ...requestConfig, stepSequence: 1 as unknown as bigint }), invalidEffect);
  assert.throws(() => EffectRequest.create({ ...requestConfig, batchIndex: -1 }), invalidEffect);
  assert.throws(() => EffectRequest.create({ ...requestConfig, batchIndex: 0.5 }), invalidEffect);
  assert.throws(() => EffectRequest.create({ ...requestConfig, batchIndex: 2 ** 32 }), invalidEffect);
  assert.throws(() => EffectRequest.create({ ...requestConfig, effect: {} as Effect }), invalidEffect);
  assert.throws(() => EffectRequest.create({ ...requestConfig, deploymentRef: {} as DeploymentRef }), invalidEffect);
  assert.throws(
    () => EffectRequest.create({ ...requestConfig, attemptId: 'attempt:x' as unknown as EffectAttemptId }),
    invalidEffect,
  );
  EffectRequest.create({ ...requestConfig, stepSequence: 2n ** 64n - 1n, batchIndex: 2 ** 32 - 1 });
});

test('the diagnostic JSON view omits the effect payload', () => {
  const request = EffectRequest.create(requestConfig);
  const text = JSON.stringify(request);
  assert.ok(!text.includes('secret'));
  const view = JSON.parse(text) as Record<string, unknown>;
  assert.equal(view.id, request.id.toString());
  assert.equal(view.stepSequence, '3');
  assert.equal(view.deploymentRef, ref.toString());
  assert.equal(view.target, 'dispatcher');
});
