import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet, parseCapability } from '../../src/kernel/capability.js';
import { KernelError } from '../../src/kernel/errors.js';
import { Quota } from '../../src/kernel/quota.js';
import { defaultTreeLimits, TreeLimits } from '../../src/kernel/tree-limits.js';
import { Usage } from '../../src/kernel/usage.js';

const hasCode = (code: string) => (error: unknown) => error instanceof KernelError && error.code === code;

test('quota: null is unlimited, a number is finite, zero is a real limit', () => {
  assert.equal(Quota.unlimited().json(), '{"maximum":null}');
  assert.equal(Quota.of(0).json(), '{"maximum":0}');
  assert.equal(Quota.parse('{"maximum":null}').unlimited, true);
  const zero = Quota.parse('{"maximum":0}');
  assert.equal(zero.unlimited, false);
  assert.equal(zero.maximum, 0n);
  assert.equal(zero.admits(0n), true);
  assert.equal(zero.admits(1n), false);
  assert.equal(Quota.unlimited().admits(10n ** 30n), true);
  assert.equal(Quota.of(5).remaining(7n), 0n);
  assert.equal(Quota.unlimited().remaining(7n), undefined);
});

test('quota: uint64 range is exact and the member is required', () => {
  assert.equal(Quota.parse('{"maximum":18446744073709551615}').maximum, 2n ** 64n - 1n);
  for (const bad of ['{"maximum":18446744073709551616}', '{"maximum":-1}', '{"maximum":1.5}', '{"maximum":1e3}', '{}', '{"maximum":"1"}', '{"maximum":1,"x":1}', 'null', '[]']) {
    assert.throws(() => Quota.parse(bad), hasCode('invalid_quota'), bad);
  }
  assert.throws(() => Quota.of(-1), hasCode('invalid_quota'));
  assert.throws(() => Quota.of(0.5), hasCode('invalid_quota'));
  assert.throws(() => Quota.of(2n ** 64n), hasCode('invalid_quota'));
});

test('quota: a finite quota never covers an unlimited grant', () => {
  assert.equal(Quota.unlimited().covers(Quota.unlimited()), true);
  assert.equal(Quota.unlimited().covers(Quota.of(3)), true);
  assert.equal(Quota.of(3).covers(Quota.unlimited()), false);
  assert.equal(Quota.of(3).covers(Quota.of(3)), true);
  assert.equal(Quota.of(3).covers(Quota.of(4)), false);
});

test('budget: all three dimensions required, canonical regardless of input order', () => {
  const text = '{"signals":{"maximum":2},"steps":{"maximum":3},"effects":{"maximum":null}}';
  const budget = Budget.parse(text);
  assert.equal(budget.json(), '{"effects":{"maximum":null},"signals":{"maximum":2},"steps":{"maximum":3}}');
  assert.equal(Budget.parse(budget.json()).equals(budget), true);
  assert.throws(() => Budget.parse('{"steps":{"maximum":3},"effects":{"maximum":1}}'), hasCode('invalid_budget'));
  assert.throws(
    () => Budget.parse('{"steps":{"maximum":3},"effects":{"maximum":1},"signals":{"maximum":1},"extra":1}'),
    hasCode('invalid_budget'),
  );
  const unlimited = Budget.unlimited();
  assert.equal(unlimited.covers(budget), true);
  assert.equal(budget.covers(unlimited), false);
});

test('capabilities: construction normalises a set, decoding rejects unsorted or duplicate input', () => {
  const set = CapabilitySet.of(['net.fetch', 'fs.read', 'net.fetch']);
  assert.deepEqual(set.values(), ['fs.read', 'net.fetch']);
  assert.equal(set.json(), '["fs.read","net.fetch"]');
  assert.equal(CapabilitySet.empty.json(), '[]');
  assert.equal(CapabilitySet.parse('[]').size, 0);
  assert.equal(CapabilitySet.parse('["a","b"]').equals(CapabilitySet.of(['b', 'a'])), true);
  for (const bad of ['["b","a"]', '["a","a"]', 'null', '{}', '["A"]', '[1]', '["a b"]']) {
    assert.throws(() => CapabilitySet.parse(bad), hasCode('invalid_capability'), bad);
  }
  assert.throws(() => CapabilitySet.of(['Bad']), hasCode('invalid_capability'));
  assert.throws(() => parseCapability(''), hasCode('invalid_capability'));
});

test('capabilities: allows is subset, contains is membership', () => {
  const held = CapabilitySet.of(['a', 'b']);
  assert.equal(held.allows(CapabilitySet.of(['a'])), true);
  assert.equal(held.allows(CapabilitySet.empty), true);
  assert.equal(held.allows(CapabilitySet.of(['a', 'c'])), false);
  assert.equal(CapabilitySet.empty.allows(CapabilitySet.of(['a'])), false);
  assert.equal(held.contains('b'), true);
  assert.equal(held.contains('c'), false);
  const values = held.values();
  values.push('z');
  assert.deepEqual(held.values(), ['a', 'b'], 'values() returns a copy');
});

test('tree limits: defaults are bounded structure and unlimited totals', () => {
  const limits = defaultTreeLimits();
  assert.equal(limits.maxDepth, 16);
  assert.equal(limits.maxActiveChildren, 16);
  assert.equal(limits.maxPendingSignals, 10_000n);
  assert.equal(limits.maxChildren.unlimited, true);
  assert.equal(limits.maxTreeProcesses.unlimited, true);
  assert.equal(limits.maxSnapshotBytes.unlimited, true);
  assert.equal(limits.maxProcessSnapshotBytes.unlimited, true);
  assert.equal(TreeLimits.parse(limits.json()).equals(limits), true);
  assert.equal(
    limits.json(),
    '{"max_active_children":16,"max_children":{"maximum":null},"max_depth":16,"max_pending_signals":10000,' +
      '"max_process_snapshot_bytes":{"maximum":null},"max_snapshot_bytes":{"maximum":null},"max_tree_processes":{"maximum":null}}',
  );
});

test('tree limits: configuration zeros inherit defaults, decoding inherits nothing', () => {
  const configured = TreeLimits.of({ maxDepth: 0, maxActiveChildren: 0, maxPendingSignals: 0n, maxChildren: Quota.of(0) });
  assert.equal(configured.maxDepth, 16);
  assert.equal(configured.maxActiveChildren, 16);
  assert.equal(configured.maxPendingSignals, 10_000n);
  assert.equal(configured.maxChildren.maximum, 0n, 'a finite zero quota is kept');
  const wire = JSON.parse(defaultTreeLimits().json());
  assert.throws(() => TreeLimits.parse(JSON.stringify({ ...wire, max_active_children: 0 })), hasCode('invalid_tree_limits'));
  assert.throws(() => TreeLimits.parse(JSON.stringify({ ...wire, max_pending_signals: 0 })), hasCode('invalid_tree_limits'));
  assert.throws(() => TreeLimits.parse(JSON.stringify({ ...wire, max_pending_signals: 2 ** 32 })), hasCode('invalid_tree_limits'));
  assert.throws(() => TreeLimits.parse(JSON.stringify({ ...wire, max_tree_processes: { maximum: 0 } })), hasCode('invalid_tree_limits'));
  assert.throws(() => TreeLimits.parse(JSON.stringify({ ...wire, extra: true })), hasCode('invalid_tree_limits'));
  const { max_depth: _omitted, ...missing } = wire;
  assert.throws(() => TreeLimits.parse(JSON.stringify(missing)), hasCode('invalid_tree_limits'));
  assert.equal(TreeLimits.parse(JSON.stringify({ ...wire, max_depth: 0 })).maxDepth, 0, 'a captured zero depth survives');
});

test('usage: four uint64 counters, strict', () => {
  const usage = Usage.of({ committedSteps: 2n, preparedEffects: 1n, acceptedSignals: 1n });
  assert.equal(usage.json(), '{"accepted_signals":1,"committed_steps":2,"dropped_deltas":0,"prepared_effects":1}');
  assert.equal(Usage.parse(usage.json()).equals(usage), true);
  assert.throws(() => Usage.of({ committedSteps: -1n }), hasCode('invalid_usage'));
  assert.throws(() => Usage.parse('{"accepted_signals":1,"committed_steps":2,"dropped_deltas":0}'), hasCode('invalid_usage'));
  assert.throws(
    () => Usage.parse('{"accepted_signals":1,"committed_steps":2,"dropped_deltas":0,"prepared_effects":1,"x":0}'),
    hasCode('invalid_usage'),
  );
});
