import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { activeOn, Cluster, eventually, exited, json, leaseMs, ownerOf, post, processUrl, startProcess, treeUrl, waitingWaitId, type Node } from './nodes-cluster.js';

/**
 * Tree-wide control and fail-secure with several real `scope serve` nodes on one Redis (issue 16 over
 * issue 12's ownership): a bulk control reaches every tree on its owner, or restores an ownerless one
 * where it landed; the interrupt barrier outlives its owner; and a fault latched on the owner wakes a
 * long poll waiting on another node.
 */

async function statusOf(node: Node, id: string): Promise<string> {
  return (await json(await fetch(processUrl(node, id)))).status as string;
}

test('bulk cancel by filter from node B reaches trees owned by A, by B and by nobody: dry-run count = affected, all end canceled', { timeout: 240_000 }, async () => {
  const cluster = new Cluster();
  await cluster.start();
  try {
    const [a, b, c] = await Promise.all([cluster.node('a'), cluster.node('b'), cluster.node('c')]);
    const onA = await Promise.all(Array.from({ length: 3 }, () => startProcess(a, 'demo.sleep', { ms: 600_000 })));
    const onB = await Promise.all(Array.from({ length: 3 }, () => startProcess(b, 'demo.sleep', { ms: 600_000 })));
    // C's trees lose their owner: the one with work is taken over, the parked one waits for a command.
    const cSleep = await startProcess(c, 'demo.sleep', { ms: 600_000 });
    const cParked = await startProcess(c, 'demo.approval', { subject: 'ownerless' });
    await waitingWaitId(c, cParked);
    c.child.kill('SIGKILL');
    await exited(c.child);
    await eventually(async () => {
      const owner = await ownerOf(cluster, cSleep);
      return owner !== undefined && owner.node !== 'c' && (await activeOn([a, b], cSleep)).length === 1 ? true : undefined;
    }, 'the dead node\'s tree with work taken over', leaseMs + 10_000);
    assert.equal((await ownerOf(cluster, cParked))?.node, 'c', 'the parked tree still names its dead owner');
    const all = [...onA, ...onB, cSleep, cParked];

    const dry = await json(await post(`${b.url}/v1/processes:bulk`, { filter: {}, action: 'cancel', dryRun: true }));
    assert.equal(dry.matched, all.length, JSON.stringify(dry));
    assert.equal(dry.affected, 0);

    const response = await post(`${b.url}/v1/processes:bulk`, { filter: {}, action: 'cancel' });
    const real = await json(response);
    assert.equal(response.status, 200, JSON.stringify(real));
    assert.deepEqual(real.failed, [], 'no tree is left to another node');
    assert.equal(real.matched, dry.matched);
    assert.equal(real.affected, dry.matched, 'the dry run counted what the real run controlled, across nodes');
    for (const id of all) await eventually(async () => ((await statusOf(b, id)) === 'canceled' ? true : undefined), `${id} canceled`);
    // Each tree was controlled by its owner (forwarded, not taken): A's stay A's; the ownerless one was restored on B.
    for (const id of onA) assert.equal((await ownerOf(cluster, id))?.node, 'a');
    for (const id of onB) assert.equal((await ownerOf(cluster, id))?.node, 'b');
    assert.equal((await ownerOf(cluster, cParked))?.node, 'b', 'the ownerless tree was restored where the call landed');
    // Recorded as a bulk control on the owner that committed it.
    const view = await json(await fetch(`${a.url}/v1/trees/${encodeURIComponent(onA[0] as string)}`));
    assert.deepEqual(
      (view.controls as Array<{ scope: string; action: string }>).map(({ scope, action }) => ({ scope, action })),
      [{ scope: 'bulk', action: 'cancel' }],
    );
  } finally {
    await cluster.stop();
  }
});

test('SIGKILL of the owner during a tree interrupt: the new owner holds child starts too (engine.child.interrupt_pending)', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'scope-interrupt-'));
  const cluster = new Cluster();
  await cluster.start();
  try {
    const env = {
      SCOPE_DEPLOYMENTS: fileURLToPath(new URL('../fixtures/interrupt-deployments.ts', import.meta.url)),
      SCOPE_TEST_INTERRUPT_DIR: dir,
      SCOPE_INTERRUPT_RELEASE_MS: '60000',
    };
    const [a, b] = await Promise.all([cluster.node('a', env), cluster.node('b', env)]);
    const root = await startProcess(a, 'test.interrupt.gated', {});
    await eventually(async () => (existsSync(join(dir, `dispatching-${a.child.pid}`)) ? true : undefined), 'the dispatch in flight on A');
    // The dispatch is in flight: the pause is recorded pending, and the interrupt is in force.
    const paused = await post(treeUrl(a, root, '/pause'), { reason: 'interrupt' });
    assert.equal(paused.status, 202, await paused.clone().text());
    assert.ok((await cluster.redis.get(`${cluster.prefix}:{${root}}:record:interrupt`)) !== null, 'the barrier is recorded with the control');

    a.child.kill('SIGKILL');
    await exited(a.child);
    await eventually(async () => ((await ownerOf(cluster, root))?.node === 'b' && (await activeOn([b], root)).length === 1 ? true : undefined), 'B took the tree over', leaseMs + 10_000);
    // B dispatches again (same_identity); once it settles, the batch's child start reaches admission on B.
    await eventually(async () => (existsSync(join(dir, `dispatching-${b.child.pid}`)) ? true : undefined), 'the dispatch in flight on B');
    writeFileSync(join(dir, 'release'), '');
    await eventually(async () => ((await statusOf(b, root)) === 'paused' ? true : undefined), 'the pause applied on B');
    const tree = await json(await fetch(treeUrl(b, root)));
    assert.equal(tree.processes.length, 1, 'no child joined the tree during the interrupt');

    const resumed = await post(treeUrl(b, root, '/resume'));
    assert.equal(resumed.status, 202, await resumed.clone().text());
    assert.equal(await cluster.redis.get(`${cluster.prefix}:{${root}}:record:interrupt`), null, 'the resume ended the record with its commit');
    const result = await json(await fetch(processUrl(b, root, '/result?waitMs=20000')));
    assert.equal(result.status, 'completed', JSON.stringify(result));
    // What the parent read as its child start's settlement: a definite failure with the barrier's code.
    assert.match(JSON.stringify(result.output), /"code":"engine\.child\.interrupt_pending"/);
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a fault latched on the owner wakes a long poll on another node with 503 runtime_stopped', { timeout: 240_000 }, async () => {
  const cluster = new Cluster();
  await cluster.start();
  try {
    // Leases long enough to outlive the write stall: only the tree's commit misses its deadline.
    const env = { SCOPE_NODE_LEASE_MS: '30000', SCOPE_NODE_RENEW_MS: '1000' };
    const [a, b] = await Promise.all([cluster.node('a', env), cluster.node('b', env)]);
    const id = await startProcess(a, 'demo.approval', { subject: 'fault' });
    const waitId = await waitingWaitId(a, id);
    // B does not hold the tree: its poll waits on the tree's log.
    const poll = fetch(processUrl(b, id, '/result?waitMs=20000'));
    // Barrier: B's poll is following the tree's log (its shared tail blocks in XREAD) before writes stall.
    await eventually(async () => ((await cluster.redis.call('CLIENT', 'LIST')) as string).includes('cmd=xread') || undefined, 'B\'s poll tailing the log');
    // Writes stall past the 5 s storage deadline: the answer's commit fails on A and the tree latches.
    await cluster.redis.call('CLIENT', 'PAUSE', '6000', 'WRITE');
    const answer = await post(processUrl(a, id, '/signals'), { signals: [{ id: 'answer', waitId, payload: { approved: true } }] });
    assert.equal(answer.status, 503, await answer.clone().text());
    const response = await poll;
    const problem = await json(response);
    assert.equal(response.status, 503, JSON.stringify(problem));
    assert.equal(problem.code, 'runtime_stopped');
    assert.match(problem.detail, /stopped .* because a commit failed/);
  } finally {
    await cluster.stop();
  }
});
