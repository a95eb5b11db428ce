import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Effect, EffectRequest } from '../../../src/kernel/effect.js';
import { ErrorCode, KernelError } from '../../../src/kernel/errors.js';
import { EffectAttemptId, ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { ProcessRelation } from '../../../src/kernel/relation.js';
import { echoDefinition, echoDispatcher } from '../../../src/testing/example-definitions.js';
import { claimableOf, decodeInboxEntry, encodeInboxEntry, jobDataOf, requestOf, requestOfClaimable } from '../../../src/transport/bullmq/job-data.js';
import { Settlement } from '../../../src/kernel/settlement.js';

/** A job's data rebuilds the exact request; every member is validated, the deployment ref too (also once seen). */

const deployment = Deployment.create({ definition: echoDefinition, dispatcher: echoDispatcher, implementationDigest: Digest.of('job-data'), configurationDigest: Digest.of('job-data') });

let made = 0;
function request(): EffectRequest {
  made += 1;
  const processId = ProcessId.parse(`process:job-data-${made}`);
  return EffectRequest.create({
    processId,
    relation: ProcessRelation.root(processId),
    deploymentRef: deployment.ref,
    stepSequence: 3n,
    batchIndex: 1,
    effect: Effect.dispatcher(Payload.encode({ value: 'x' })),
    incarnationId: TreeIncarnationId.random(),
    attemptId: EffectAttemptId.random(),
  });
}

test('job data: a request survives its job data exactly, and the same ref text rebuilds an equal ref', () => {
  const first = request();
  const second = request();
  const rebuilt = [first, second].map((original) => requestOf(jobDataOf(original)));
  assert.deepEqual(jobDataOf(rebuilt[0] as EffectRequest), jobDataOf(first));
  assert.deepEqual(jobDataOf(rebuilt[1] as EffectRequest), jobDataOf(second));
  assert.ok(rebuilt[0]?.effect.equals(first.effect));
  assert.ok(rebuilt[1]?.deploymentRef.equals(deployment.ref));
});

test('job data: a malformed deployment ref is refused every time, not only the first', () => {
  const data = jobDataOf(request());
  const broken = { ...data, deploymentRef: data.deploymentRef.replace(/"name":"[^"]*"/, '"name":""') };
  assert.notEqual(broken.deploymentRef, data.deploymentRef);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    assert.throws(() => requestOf(broken), (error: unknown) => error instanceof KernelError && error.code === ErrorCode.invalidDeploymentRef);
  }
  assert.ok(requestOf(data).deploymentRef.equals(deployment.ref), 'the valid text still rebuilds');
});

test('job data: what a claim names is checked first (step position, attempt), the rest after (relation, root)', () => {
  const data = jobDataOf(request());
  assert.ok(claimableOf(data).effectId.equals(requestOf(data).id), 'the claim names the effect the request carries');
  for (const broken of [
    { ...data, stepSequence: '0' },
    { ...data, stepSequence: '01' },
    { ...data, stepSequence: '18446744073709551616' },
    { ...data, attemptId: 'attempt:not-hex' },
  ]) {
    assert.throws(() => claimableOf(broken), JSON.stringify(broken));
  }
  const other = ProcessId.parse('process:job-data-elsewhere').toString();
  const claimable = claimableOf({ ...data, rootId: other });
  assert.throws(() => requestOfClaimable({ ...data, rootId: other }, claimable), /not its relation's/);
  assert.throws(() => requestOfClaimable({ ...data, relation: '{}' }, claimableOf(data)), (error: unknown) => error instanceof KernelError);
});

test('inbox entries: a settlement survives exactly, an unknown outcome stays unknown, and a malformed entry is refused', () => {
  for (const settlement of [
    Settlement.of('succeeded', Payload.encode({ value: 'a "quoted" </tag> & more' })),
    Settlement.of('failed', Payload.encode({ code: 'x', nested: { list: [1, 2.5, null] } })),
    Settlement.of('unknown', Payload.emptyObject),
  ]) {
    const entry = decodeInboxEntry(encodeInboxEntry({ outcome: 'settled', settlement }));
    assert.equal(entry.outcome, 'settled');
    assert.equal(entry.outcome === 'settled' && entry.settlement.json(), settlement.json());
  }
  assert.deepEqual(decodeInboxEntry(encodeInboxEntry({ outcome: 'unknown', reason: 'the dispatcher threw' })), { outcome: 'unknown', reason: 'the dispatcher threw' });
  // Same members, other order or spacing: still read, and read as the same settlement.
  const settlement = Settlement.of('succeeded', Payload.encode({ value: 1 }));
  const reordered = `{ "settlement": ${settlement.json()}, "outcome": "settled" }`;
  assert.equal((decodeInboxEntry(reordered) as { settlement: Settlement }).settlement.json(), settlement.json());
  for (const bad of [
    '{"outcome":"settled","settlement":{"status":"maybe"}}',
    `{"outcome":"settled","settlement":${settlement.json()},"x":}`,
    '{"outcome":"settled","settlement":}',
    '{"outcome":"lost"}',
    'null',
  ]) {
    assert.throws(() => decodeInboxEntry(bad), Error, bad);
  }
});
