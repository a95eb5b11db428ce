import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KernelError } from '../../src/kernel/errors.js';
import { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { spawnDefaults } from '../../src/server/control-config.js';
import type { EngineHost } from '../../src/server/engine-host.js';
import type { StartRequest } from '../../src/server/host.js';
import { embeddedHost } from './harness.js';

/**
 * Spawn limits that default safe (issue 16): a start that names no child depth, active-children,
 * lifetime-children or tree-process limit gets a finite server default (never the grant's unlimited);
 * unlimited is had only by asking for it, and only where the grant allows it (else `authority_exceeded`).
 */

async function limitsOf(host: EngineHost, request: Partial<StartRequest> = {}) {
  const { process } = await host.startProcess({ deployment: 'demo.echo', input: { value: 'x' }, ...request });
  return TreeSnapshot.parse((await host.snapshot(process.rootId)).json).treeLimits;
}

async function withHost<T>(env: Record<string, string>, body: (host: EngineHost) => Promise<T>): Promise<T> {
  const host = embeddedHost({ env });
  try {
    return await body(host);
  } finally {
    await host.close(300);
  }
}

test('an omitted spawn limit takes the finite server default, even where the grant is unlimited', async () => {
  await withHost({}, async (host) => {
    const limits = await limitsOf(host);
    assert.equal(limits.maxDepth, spawnDefaults.maxDepth);
    assert.equal(limits.maxActiveChildren, spawnDefaults.maxActiveChildren);
    assert.equal(limits.maxChildren.maximum, BigInt(spawnDefaults.maxChildren));
    assert.equal(limits.maxTreeProcesses.maximum, BigInt(spawnDefaults.maxTreeProcesses));
    // Naming one member leaves the others at their defaults.
    const partial = await limitsOf(host, { treeLimits: { maxDepth: 3 } });
    assert.equal(partial.maxDepth, 3);
    assert.equal(partial.maxChildren.maximum, BigInt(spawnDefaults.maxChildren));
    assert.equal(partial.maxTreeProcesses.maximum, BigInt(spawnDefaults.maxTreeProcesses));
  });
});

test('the defaults come from the environment, and never exceed a narrower grant', async () => {
  const env = { SCOPE_DEFAULT_MAX_DEPTH: '5', SCOPE_DEFAULT_MAX_ACTIVE_CHILDREN: '4', SCOPE_DEFAULT_MAX_CHILDREN: '7', SCOPE_DEFAULT_MAX_TREE_PROCESSES: '50' };
  await withHost(env, async (host) => {
    const limits = await limitsOf(host);
    assert.deepEqual([limits.maxDepth, limits.maxActiveChildren, limits.maxChildren.maximum, limits.maxTreeProcesses.maximum], [5, 4, 7n, 50n]);
  });
  await withHost({ SCOPE_GRANTS: JSON.stringify({ treeLimits: { maxChildren: { maximum: 3 }, maxTreeProcesses: { maximum: 20 } } }) }, async (host) => {
    const limits = await limitsOf(host);
    assert.deepEqual([limits.maxChildren.maximum, limits.maxTreeProcesses.maximum], [3n, 20n]);
  });
});

test('unlimited children and tree processes are had only by asking, where the grant allows it', async () => {
  const unlimited = { maxChildren: { maximum: null }, maxTreeProcesses: { maximum: null } };
  await withHost({}, async (host) => {
    const limits = await limitsOf(host, { treeLimits: unlimited });
    assert.equal(limits.maxChildren.unlimited, true);
    assert.equal(limits.maxTreeProcesses.unlimited, true);
  });
  await withHost({ SCOPE_GRANTS: JSON.stringify({ treeLimits: { maxChildren: { maximum: 100 } } }) }, async (host) => {
    await assert.rejects(limitsOf(host, { treeLimits: { maxChildren: { maximum: null } } }), (error: unknown) => error instanceof KernelError && error.code === 'authority_exceeded');
    // What the grant allows is still granted when asked for.
    assert.equal((await limitsOf(host, { treeLimits: { maxTreeProcesses: { maximum: null } } })).maxTreeProcesses.unlimited, true);
  });
});

test('a bad default is a configuration error', async () => {
  assert.throws(() => embeddedHost({ env: { SCOPE_DEFAULT_MAX_ACTIVE_CHILDREN: '0' } }), /SCOPE_DEFAULT_MAX_ACTIVE_CHILDREN/);
});
