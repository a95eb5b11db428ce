import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostGateRetentionMs, MemoryHostGateStore, type HostGateRecord } from '../../src/store/host-gates.js';

/**
 * The embedded store of host-owned gates on an injected clock: expiry closes a gate (its answer gone,
 * answers refused, not counted against the caps), close deletes the answer, and a gate is forgotten
 * after its retention — what Redis does with TTLs and server time, here without waiting.
 */

function record(id: string, reserved: { createdAt: number; expiresAt: number }): HostGateRecord {
  return { id, tenant: 't', kind: 'form', prompt: null, answerSchema: null, url: null, actor: null, requestId: null, requestDigest: 'd', ...reserved, state: 'open', closedAt: null, answerMeta: null, answer: null, tokenUsed: false };
}

async function open(store: MemoryHostGateStore, id: string, timeoutMs: number): Promise<void> {
  const reserved = await store.reserve({ id, tenant: 't', requestDigest: 'd', timeoutMs }, { perTenant: 1, cluster: 10 });
  assert.equal(reserved.kind, 'reserved');
  if (reserved.kind === 'reserved') await store.write(record(id, reserved));
}

const answer = { answer: '"yes"', digest: 'x', provenance: 'human' as const, actor: 'ada', requestId: 'r', viaToken: false };

test('expiry: the answer is gone, answers are refused, the gate no longer counts, and it is forgotten after the retention', async () => {
  let now = 1_000_000;
  const store = new MemoryHostGateStore(() => now);
  await open(store, 'g1', 1_000);
  assert.equal((await store.answer('g1', answer)).kind, 'answered');
  assert.equal((await store.read('g1'))?.answer, '"yes"');
  assert.equal((await store.reserve({ id: 'g2', tenant: 't', requestDigest: 'd', timeoutMs: 1_000 }, { perTenant: 1, cluster: 10 })).kind, 'capacity');
  now += 1_000;
  assert.equal((await store.read('g1'))?.answer, null, 'the answer is kept only until the gate closes, and expiry closes it');
  assert.equal((await store.answer('g1', { ...answer, requestId: 'other' })).kind, 'expired');
  await open(store, 'g2', 1_000);
  now += hostGateRetentionMs;
  assert.equal(await store.read('g1'), undefined, 'forgotten after the retention');
});

test('close deletes the answer and keeps who answered and its digest; a closed gate refuses answers and frees its place', async () => {
  const now = 5_000;
  const store = new MemoryHostGateStore(() => now);
  await open(store, 'g1', 60_000);
  await store.answer('g1', answer);
  const closed = await store.close('g1');
  assert.equal(closed?.state, 'closed');
  assert.equal(closed?.answer, null);
  assert.equal((await store.read('g1'))?.answer, null);
  assert.deepEqual(closed?.answerMeta, { answeredAt: now, provenance: 'human', actor: 'ada', requestId: 'r', digest: 'x' });
  assert.equal((await store.answer('g1', { ...answer, requestId: 'late' })).kind, 'closed');
  await open(store, 'g2', 60_000);
});

test('the first answer wins; the same request id with the same answer is `same`; a spent token is refused', async () => {
  const store = new MemoryHostGateStore(() => 0);
  await open(store, 'g1', 60_000);
  let woken = 0;
  const unwatch = await store.watch('g1', () => {
    woken += 1;
  });
  assert.equal((await store.answer('g1', { ...answer, viaToken: true, requestId: null })).kind, 'answered');
  assert.equal(woken, 1, 'watchers are told');
  assert.equal((await store.answer('g1', { ...answer, viaToken: true, requestId: null })).kind, 'token_used');
  assert.equal((await store.answer('g1', answer)).kind, 'already');
  unwatch();
  await store.close('g1');
  await open(store, 'g2', 60_000);
  assert.equal((await store.answer('g2', answer)).kind, 'answered');
  assert.equal((await store.answer('g2', answer)).kind, 'same');
  assert.equal((await store.answer('g2', { ...answer, digest: 'other' })).kind, 'already');
});
