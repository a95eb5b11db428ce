import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EffectBoundary } from '../../../src/kernel/commit.js';
import { Effect } from '../../../src/kernel/effect.js';
import { Engine } from '../../../src/kernel/engine.js';
import { ErrorCode, KernelError } from '../../../src/kernel/errors.js';
import { EffectId, SignalId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import type { TreeCommitter } from '../../../src/kernel/tree-committer.js';
import type { TreeActivation, TreeCheckpoint } from '../../../src/kernel/commit.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { MapDeploymentResolver } from '../../../src/kernel/deployment.js';
import type { ProcessSnapshot } from '../../../src/kernel/process-snapshot.js';
import { childSpec, doneProgram, parentProgram } from './child-programs.js';
import { ScriptedDispatcher } from '../../../src/testing/scripted-dispatcher.js';
import { deferred, deploy } from './harness.js';
import { dispatchProgram } from './programs.js';

/**
 * A settled boundary whose settlement completes its batch adopts the batch itself (kernel-contract
 * §3.8: "each Step adoption that is not an Effect boundary" gets a checkpoint), so one dispatched
 * Effect costs the four serial commits the contract names — start, pending, settled, terminal —
 * and the EffectBoundary still says which Effect it settled and how.
 */

/** Keeps every commit object it acknowledged. */
class KeepingCommitter implements TreeCommitter {
  readonly inner = new MemoryTreeCommitter();
  readonly commits: Array<TreeCheckpoint | EffectBoundary | TreeActivation> = [];
  readonly #waiters: Array<{ count: number; resolve: () => void }> = [];
  /** Resolves once `count` commits were acknowledged. */
  reached(count: number): Promise<void> {
    return new Promise((resolve) => {
      this.#waiters.push({ count, resolve });
      this.#wake();
    });
  }
  #wake(): void {
    for (const waiter of this.#waiters) if (this.commits.length >= waiter.count) waiter.resolve();
  }
  async activateTree(activation: TreeActivation): Promise<void> {
    await this.inner.activateTree(activation);
    this.commits.push(activation);
    this.#wake();
  }
  async commitEffect(boundary: EffectBoundary): Promise<void> {
    await this.inner.commitEffect(boundary);
    this.commits.push(boundary);
    this.#wake();
  }
  async commitCheckpoint(checkpoint: TreeCheckpoint): Promise<void> {
    await this.inner.commitCheckpoint(checkpoint);
    this.commits.push(checkpoint);
    this.#wake();
  }
  kinds(): string[] {
    return this.commits.map((commit) => ('kind' in commit ? commit.kind : 'activation'));
  }
  boundaries(): EffectBoundary[] {
    return this.commits.filter((commit): commit is EffectBoundary => commit instanceof EffectBoundary);
  }
}

const isInvalidCommit = (error: unknown): boolean => error instanceof KernelError && error.code === ErrorCode.invalidCommit;

test('a settlement that completes its batch commits start, pending, settled, terminal: the settled boundary adopts the batch', async () => {
  const committer = new KeepingCommitter();
  const engine = new Engine({ committer });
  const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ settlement: { status: 'succeeded', payload: Payload.encode('pong') } }] });
  const result = await engine.run(deploy(dispatchProgram(), dispatcher), Payload.encode({}));
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { status: 'succeeded', payload: 'pong', settlements: ['succeeded'] });
  assert.deepEqual(committer.kinds(), ['start', 'pending', 'settled', 'terminal']);

  const [pending, settled] = committer.boundaries() as [EffectBoundary, EffectBoundary];
  const effectId = EffectId.derive(result.processId, 1n, 0);
  assert.ok(settled.effectId.equals(effectId));
  assert.notEqual(settled.adopts, undefined, 'the boundary names the batch it adopts');
  const root = settled.snapshot.root;
  assert.equal(root.prepared, undefined, 'the prospective tree holds the adopted batch');
  assert.equal(root.committedSteps, 1n);
  assert.notEqual(root.mailbox.indexOf(SignalId.settlement(effectId)), undefined, 'with the settlement delivered');
  // The boundary still tells a host which Effect it settled and how (dispatch permits, inbox clears).
  assert.equal(settled.effect()?.effect.target, 'dispatcher');
  assert.equal(settled.settlement()?.status, 'succeeded');
  assert.deepEqual(settled.settlement()?.payload.decode(), 'pong');
  const request = settled.request();
  assert.ok(request?.effect.payload.equals(pending.request()!.effect.payload));
  assert.equal(request?.stepSequence, 1n);
  assert.equal(request?.batchIndex, 0);

  // The same prospective tree is no settled boundary without the batch it adopts, nor a resolution.
  const config = { sequence: settled.sequence, processId: settled.processId, effectId, previous: settled.previous, snapshot: settled.snapshot };
  assert.throws(() => EffectBoundary.create({ ...config, resolution: false }), isInvalidCommit);
  assert.throws(() => EffectBoundary.create({ ...config, resolution: true, adopts: settled.adopts }), isInvalidCommit);
  // A tree that still holds the batch (the pending head) does not show an adoption.
  assert.throws(() => EffectBoundary.create({ ...config, snapshot: pending.snapshot, previous: settled.snapshot.digest, resolution: false, adopts: settled.adopts }), isInvalidCommit);
  // A tree without the batch but without its settlement delivered (the start head) shows no adoption either.
  const startHead = (committer.commits[0] as TreeCheckpoint).snapshot;
  assert.equal(startHead.root.prepared, undefined);
  assert.throws(() => EffectBoundary.create({ ...config, snapshot: startHead, previous: settled.snapshot.digest, resolution: false, adopts: settled.adopts }), isInvalidCommit);
  // A batch with an unsettled Effect completes nothing.
  assert.throws(() => EffectBoundary.create({ ...config, resolution: false, adopts: pending.snapshot.root.prepared }), isInvalidCommit);
  await engine.close();
});

test('an earlier settlement of a batch commits alone: only the one that completes the batch adopts it', async () => {
  const committer = new KeepingCommitter();
  const engine = new Engine({ committer });
  const dispatcher = new ScriptedDispatcher({
    replayPolicy: 'never',
    calls: [{ settlement: { status: 'succeeded', payload: Payload.encode(1) } }, { settlement: { status: 'failed', payload: Payload.encode(2) } }],
  });
  const effects = [1, 2].map((n) => Effect.dispatcher(Payload.encode({ n })));
  const result = await engine.run(deploy(dispatchProgram({ effects }), dispatcher), Payload.encode({}));
  assert.equal(result.status, 'completed');
  assert.deepEqual(committer.kinds(), ['start', 'pending', 'settled', 'pending', 'settled', 'terminal']);
  const [, first, , last] = committer.boundaries() as EffectBoundary[];
  assert.equal(first?.adopts, undefined);
  assert.equal(first?.snapshot.root.prepared?.effect(first.effectId)?.phase, 'settled', 'the first settlement is retained in its batch');
  assert.notEqual(last?.adopts, undefined);
  assert.equal(last?.snapshot.root.mailbox.pendingCount, 2, 'both settlements delivered by the adopting boundary');
  await engine.close();
});

test('an Unknown settlement commits alone and keeps its batch: nothing is adopted past an Unknown', async () => {
  const committer = new KeepingCommitter();
  const engine = new Engine({ committer });
  const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ settlement: { status: 'unknown', payload: Payload.emptyObject } }] });
  const process = await engine.start(deploy(dispatchProgram(), dispatcher), Payload.encode({}));
  await committer.reached(3);
  const settled = committer.boundaries().at(-1) as EffectBoundary;
  assert.equal(settled.kind, 'settled');
  assert.equal(settled.adopts, undefined);
  assert.equal(settled.snapshot.root.prepared?.effect(settled.effectId)?.unknown, true);
  assert.equal(settled.snapshot.root.committedSteps, 0n);
  await process.kill('done');
  await engine.close();
});

test('a terminal intent that arrives during the dispatch keeps the settled batch unadopted, as evidence', async () => {
  const committer = new KeepingCommitter();
  const engine = new Engine({ committer });
  const gate = deferred();
  const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ settlement: { status: 'succeeded', payload: Payload.encode('pong') }, gate: gate.promise }] });
  const process = await engine.start(deploy(dispatchProgram(), dispatcher), Payload.encode({}));
  await committer.reached(2);
  await process.requestCancellation('no longer needed');
  gate.resolve();
  const result = await process.await();
  assert.equal(result.status, 'canceled');
  // The accepted cancellation rides a progress checkpoint while the Effect is in flight.
  assert.deepEqual(committer.kinds(), ['start', 'pending', 'progress', 'settled', 'terminal']);
  const settled = committer.boundaries().at(-1) as EffectBoundary;
  assert.equal(settled.adopts, undefined, 'the settled boundary did not adopt under terminal intent');
  const terminal = committer.commits.at(-1) as TreeCheckpoint;
  assert.equal(terminal.snapshot.root.prepared?.effect(settled.effectId)?.settlement?.status, 'succeeded', 'the settlement stays as evidence');
  assert.equal(terminal.snapshot.root.committedSteps, 0n, 'the candidate was not adopted');
  await engine.close();
});

test('a child start that completes its parent\'s batch adopts it in the child_start checkpoint; an earlier start does not', async () => {
  const done = deploy(doneProgram(), undefined, 'folded-done');
  const committer = new KeepingCommitter();
  const engine = new Engine({ committer, deploymentResolver: new MapDeploymentResolver([done]) });
  const parent = deploy(parentProgram({ children: [childSpec('a', done), childSpec('b', done)] }));
  const result = await engine.run(parent, Payload.encode({}));
  assert.equal(result.status, 'completed');
  const starts = committer.commits.filter((commit): commit is TreeCheckpoint => 'kind' in commit && commit.kind === 'child_start');
  assert.equal(starts.length, 2);
  const [first, second] = starts.map((commit) => commit.snapshot.process(result.processId)) as [ProcessSnapshot, ProcessSnapshot];
  assert.notEqual(first.prepared, undefined, 'the first start leaves the batch open');
  assert.equal(first.committedSteps, 0n);
  assert.equal(second.prepared, undefined, 'the second start adopts it');
  assert.equal(second.committedSteps, 1n);
  assert.equal(second.mailbox.pendingCount, 2, 'with both start results delivered');
  // The Step is adopted by that checkpoint, not by a later one of its own.
  const adoptedBy = committer.commits.find((commit) => !(commit instanceof EffectBoundary) && 'kind' in commit && commit.snapshot.process(result.processId)?.committedSteps === 1n);
  assert.equal(adoptedBy, starts[1]);
  await engine.close();
});
