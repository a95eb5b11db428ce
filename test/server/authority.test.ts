import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import { Quota } from '../../src/kernel/quota.js';
import { TreeLimits } from '../../src/kernel/tree-limits.js';
import { excessOf, parseTreeLimits, type Grant } from '../../src/server/authority.js';

const grant: Grant = {
  budget: Budget.unlimited(),
  treeLimits: TreeLimits.of({ maxSnapshotBytes: Quota.of(1_000_000) }),
  capabilities: CapabilitySet.empty,
};

test('tree limits with quota members parse (finite and unlimited) and keep the rest of the base', () => {
  const limits = parseTreeLimits({ maxSnapshotBytes: { maximum: 10 }, maxChildren: { maximum: null }, maxPendingSignals: 5 }, '/treeLimits', grant.treeLimits);
  assert.equal(limits.maxSnapshotBytes.maximum, 10n);
  assert.equal(limits.maxChildren.unlimited, true);
  assert.equal(limits.maxPendingSignals, 5n);
  assert.equal(limits.maxDepth, grant.treeLimits.maxDepth);
  assert.deepEqual(excessOf(grant, { ...grant, treeLimits: limits }), []);
});

test('a quota limit above the grant is an excess', () => {
  const limits = parseTreeLimits({ maxSnapshotBytes: { maximum: null } }, '/treeLimits', grant.treeLimits);
  assert.equal(excessOf(grant, { ...grant, treeLimits: limits }).length, 1);
});
