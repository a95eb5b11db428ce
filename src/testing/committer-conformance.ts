import { test } from 'node:test';
import { EffectBoundary, TreeActivation, TreeCheckpoint, type TreeCheckpointKind } from '../kernel/commit.js';
import type { Digest } from '../kernel/digest.js';
import { KernelError } from '../kernel/errors.js';
import { ProcessId, TreeIncarnationId, type EffectId } from '../kernel/identity.js';
import type { TreeStore } from '../kernel/tree-committer.js';
import type { TreeSnapshot } from '../kernel/tree-snapshot.js';
import { conformanceTrees, type ConformanceTrees } from './conformance-trees.js';
import { ConformanceFailure, type CommitterConformanceCase } from './conformance-failure.js';
import { childConformanceCases } from './child-conformance.js';
import { engineConformanceCases } from './engine-conformance.js';

export { ConformanceFailure, type CommitterConformanceCase } from './conformance-failure.js';

/**
 * The TreeCommitter conformance suite: black-box cases over the commit protocol (kernel-contract
 * §3), run against any store. Each case gets a fresh, empty, isolated store from the factory.
 * A store passes only if every case passes; the suite's own self-test proves each case fails,
 * with its named message, against a store that breaks the rule the case guards.
 */
export type TreeStoreFactory = () => TreeStore | Promise<TreeStore>;

/** A case that has not finished by then is stuck (a deadlock or a lost wake-up), which is a failure. */
const caseTimeoutMs = 10_000;

/** Registers every case as a node:test test named `<prefix> <case name>`. */
export function runTreeCommitterConformance(prefix: string, factory: TreeStoreFactory): void {
  for (const conformanceCase of [...committerConformanceCases, ...engineConformanceCases, ...childConformanceCases]) {
    test(`${prefix} ${conformanceCase.name}`, { timeout: caseTimeoutMs }, async () => {
      await runConformanceCase(conformanceCase, factory);
    });
  }
}

/** Runs one case against a fresh store; throws ConformanceFailure on a protocol violation. */
export async function runConformanceCase(conformanceCase: CommitterConformanceCase, factory: TreeStoreFactory): Promise<void> {
  const store = await factory();
  if (store === undefined || store === null) throw new ConformanceFailure('driver returned nil');
  await conformanceCase.run(store);
}

// ---------------------------------------------------------------------------------------------
// Expectations

async function expectAck(operation: Promise<void>, what: string): Promise<void> {
  try {
    await operation;
  } catch (error) {
    throw new ConformanceFailure(`${what} was rejected: ${error instanceof Error ? error.message : String(error)}`);
  }
}

async function expectRejection(operation: Promise<void>, codes: readonly string[], what: string): Promise<string> {
  try {
    await operation;
  } catch (error) {
    if (error instanceof KernelError && codes.includes(error.code)) return error.code;
    throw new ConformanceFailure(
      `${what} failed with ${error instanceof KernelError ? error.code : String(error)}, want ${codes.join(' or ')}`,
    );
  }
  throw new ConformanceFailure(`${what} returned success, want ${codes.join(' or ')}`);
}

async function expectHead(store: TreeStore, rootId: ProcessId, want: Digest | undefined, what: string): Promise<void> {
  const head = await store.loadTree(rootId);
  if (want === undefined) {
    if (head !== undefined) throw new ConformanceFailure(`${what}: head exists=true, want absent`);
    return;
  }
  if (head === undefined) throw new ConformanceFailure(`${what}: head exists=false`);
  if (!head.digest.equals(want)) {
    throw new ConformanceFailure(`${what}: acknowledged head digest mismatch (${head.digest} != ${want})`);
  }
  if (head.json() !== (await store.loadTree(rootId))?.json()) {
    throw new ConformanceFailure(`${what}: loadTree is not stable`);
  }
}

const commitConflict = ['commit_conflict'] as const;
const incarnationConflict = ['tree_incarnation_conflict'] as const;

// ---------------------------------------------------------------------------------------------
// A writer: the Engine's side of the protocol in miniature (sequence allocation, previous digest).

class Writer {
  sequence: bigint;
  head: TreeSnapshot;

  constructor(
    readonly store: TreeStore,
    head: TreeSnapshot,
    sequence: bigint,
  ) {
    this.head = head;
    this.sequence = sequence;
  }

  static async start(store: TreeStore, snapshot: TreeSnapshot): Promise<Writer> {
    await expectAck(store.commitCheckpoint(startCheckpoint(snapshot)), 'start checkpoint');
    return new Writer(store, snapshot, 1n);
  }

  checkpoint(kind: TreeCheckpointKind, snapshot: TreeSnapshot): TreeCheckpoint {
    return TreeCheckpoint.create({ kind, sequence: this.sequence + 1n, previous: this.head.digest, snapshot });
  }

  effect(effectId: EffectId, snapshot: TreeSnapshot, resolution = false): EffectBoundary {
    const processId = snapshot.rootId;
    return EffectBoundary.create({
      sequence: this.sequence + 1n,
      resolution,
      processId,
      effectId,
      previous: this.head.digest,
      snapshot,
    });
  }

  async commit(commit: TreeCheckpoint | EffectBoundary, what: string): Promise<void> {
    const operation =
      commit instanceof TreeCheckpoint ? this.store.commitCheckpoint(commit) : this.store.commitEffect(commit);
    await expectAck(operation, what);
    this.sequence = commit.sequence;
    this.head = commit.snapshot;
    await expectHead(this.store, commit.rootId, commit.snapshot.digest, what);
  }

  activation(incarnation = TreeIncarnationId.random()): TreeActivation {
    return TreeActivation.create({
      previousIncarnationId: this.head.incarnationId,
      previousDigest: this.head.digest,
      snapshot: this.head.withIncarnation(incarnation),
    });
  }
}

function startCheckpoint(snapshot: TreeSnapshot): TreeCheckpoint {
  return TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot });
}

function isolated(): ConformanceTrees {
  return conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
}

// ---------------------------------------------------------------------------------------------
// The cases

/** The protocol cases that drive the store directly (no Engine). */
export const committerConformanceCases: readonly CommitterConformanceCase[] = [
  {
    name: 'start installs an absent head at sequence 1',
    async run(store) {
      const trees = isolated();
      await expectHead(store, trees.rootId, undefined, 'before start');
      const writer = await Writer.start(store, trees.running(0));
      await expectHead(store, trees.rootId, trees.running(0).digest, 'after start');
      const loaded = await store.loadTree(trees.rootId);
      if (loaded?.json() !== trees.running(0).json()) throw new ConformanceFailure('loaded head bytes differ from the committed snapshot');
      // Sequence 1 is proven by the only successor the store accepts.
      await writer.commit(writer.checkpoint('progress', trees.running(1)), 'progress at sequence 2');
    },
  },
  {
    name: 'start requires an absent head',
    async run(store) {
      const trees = isolated();
      await Writer.start(store, trees.running(0));
      const rival = conformanceTrees(trees.rootId, TreeIncarnationId.random());
      await expectRejection(store.commitCheckpoint(startCheckpoint(rival.running(0))), incarnationConflict, 'a second start under another writer');
      const sameWriter = startCheckpoint(trees.runningWithPendingInput());
      await expectRejection(store.commitCheckpoint(sameWriter), commitConflict, 'a start reusing the identity with other content');
      await expectHead(store, trees.rootId, trees.running(0).digest, 'after rejected starts');
    },
  },
  {
    name: 'an identical retry is acknowledged only while its sequence is current',
    async run(store) {
      const trees = isolated();
      const writer = await Writer.start(store, trees.running(0));
      await expectAck(store.commitCheckpoint(startCheckpoint(trees.running(0))), 'identical start retry while current');
      const progress = writer.checkpoint('progress', trees.running(1));
      await writer.commit(progress, 'progress');
      await expectAck(store.commitCheckpoint(progress), 'identical progress retry while current');
      await writer.commit(writer.checkpoint('progress', trees.running(2)), 'second progress');
      await expectRejection(store.commitCheckpoint(progress), commitConflict, 'stale duplicate of an earlier progress');
      await expectRejection(store.commitCheckpoint(startCheckpoint(trees.running(0))), commitConflict, 'stale duplicate of the start');
      await expectHead(store, trees.rootId, trees.running(2).digest, 'after stale duplicates');
    },
  },
  {
    name: 'an advance requires exactly the next sequence',
    async run(store) {
      const trees = isolated();
      const writer = await Writer.start(store, trees.running(0));
      const skipped = TreeCheckpoint.create({ kind: 'progress', sequence: 3n, previous: writer.head.digest, snapshot: trees.running(1) });
      await expectRejection(store.commitCheckpoint(skipped), incarnationConflict, 'an advance that skips a sequence');
      const repeated = TreeCheckpoint.create({ kind: 'progress', sequence: 1n, previous: writer.head.digest, snapshot: trees.running(1) });
      await expectRejection(store.commitCheckpoint(repeated), commitConflict, 'an advance reusing the current sequence');
      await expectHead(store, trees.rootId, trees.running(0).digest, 'after rejected advances');
      await writer.commit(writer.checkpoint('progress', trees.running(1)), 'the real successor');
    },
  },
  {
    name: 'an advance requires the current head as its predecessor',
    async run(store) {
      const trees = isolated();
      const writer = await Writer.start(store, trees.running(0));
      await writer.commit(writer.checkpoint('progress', trees.running(1)), 'progress');
      const stale = TreeCheckpoint.create({ kind: 'progress', sequence: 3n, previous: trees.running(0).digest, snapshot: trees.running(2) });
      await expectRejection(store.commitCheckpoint(stale), incarnationConflict, 'an advance from a stale predecessor');
      await expectHead(store, trees.rootId, trees.running(1).digest, 'after a stale predecessor');
    },
  },
  {
    name: 'an advance requires an existing head owned by its writer',
    async run(store) {
      const trees = isolated();
      const orphan = TreeCheckpoint.create({ kind: 'progress', sequence: 2n, previous: trees.running(0).digest, snapshot: trees.running(1) });
      await expectRejection(store.commitCheckpoint(orphan), incarnationConflict, 'an advance on an absent head');
      await expectHead(store, trees.rootId, undefined, 'after an orphan advance');
      const writer = await Writer.start(store, trees.running(0));
      const intruder = conformanceTrees(trees.rootId, TreeIncarnationId.random());
      const foreign = TreeCheckpoint.create({ kind: 'progress', sequence: 2n, previous: writer.head.digest, snapshot: intruder.running(1) });
      await expectRejection(store.commitCheckpoint(foreign), incarnationConflict, 'an advance by another writer');
      await expectHead(store, trees.rootId, trees.running(0).digest, 'after a foreign advance');
    },
  },
  {
    name: 'repeated waiting pause resume never replays history',
    async run(store) {
      const trees = isolated();
      const writer = await Writer.start(store, trees.running(0));
      const waiting = writer.checkpoint('parked', trees.waiting());
      await writer.commit(waiting, 'waiting');
      const history: TreeCheckpoint[] = [waiting];
      for (let cycle = 0; cycle < 3; cycle += 1) {
        const pause = writer.checkpoint('parked', trees.pausedWhileWaiting());
        await writer.commit(pause, `pause ${cycle}`);
        const resume = writer.checkpoint('parked', trees.waiting());
        await writer.commit(resume, `resume ${cycle}`);
        if (resume.sequence !== waiting.sequence + 2n * BigInt(cycle) + 2n) throw new ConformanceFailure('unexpected resume sequence');
        history.push(pause, resume);
      }
      // The head now holds the same bytes as the original waiting checkpoint: a store that
      // deduplicates by content and head digest alone would wrongly accept these replays.
      for (const old of history.slice(0, -1)) {
        await expectRejection(store.commitCheckpoint(old), commitConflict, `historical ${old.snapshot.processSnapshots()[0]?.status} replay (sequence ${old.sequence})`).catch(
          (failure: unknown) => {
            if (failure instanceof ConformanceFailure && failure.message.endsWith('returned success, want commit_conflict')) {
              throw new ConformanceFailure(`historical waiting replay returned nil (sequence ${old.sequence})`);
            }
            throw failure;
          },
        );
      }
      await expectHead(store, trees.rootId, trees.waiting().digest, 'after historical replays');
    },
  },
  {
    name: 'effect boundaries: one pending, settled and resolved per effect for the life of the tree',
    async run(store) {
      const trees = isolated();
      const effectId = trees.effectId;
      const writer = await Writer.start(store, trees.running(0));
      const pending = writer.effect(effectId, trees.effect('pending'));
      await writer.commit(pending, 'pending boundary');
      const settled = writer.effect(effectId, trees.effect('settled', 'unknown'));
      await writer.commit(settled, 'settled Unknown boundary');
      const resolved = writer.effect(effectId, trees.effect('settled', 'succeeded'), true);
      await writer.commit(resolved, 'resolved boundary');
      await writer.commit(writer.checkpoint('terminal', trees.completed()), 'terminal checkpoint');
      const kinds = [pending.kind, settled.kind, resolved.kind].join(',');
      if (kinds !== 'pending,settled,resolved') throw new ConformanceFailure(`boundary kinds ${kinds}`);
      for (const stale of [pending, settled, resolved]) {
        await expectRejection(store.commitEffect(stale), commitConflict, `stale duplicate ${stale.kind} boundary`);
      }
      // A competing history for the same effect (same ids and kinds, other snapshots) from a new
      // writer: the facts outlive the incarnation, so nothing lands.
      const head = writer.head;
      const successor = new Writer(store, head, 0n);
      const activation = successor.activation();
      await expectAck(store.activateTree(activation), 'activation of a new writer');
      successor.head = activation.snapshot;
      const rivalTrees = conformanceTrees(trees.rootId, activation.incarnationId);
      const rivalPending = successor.effect(effectId, rivalTrees.competingEffect('pending'));
      await expectRejection(store.commitEffect(rivalPending), [...commitConflict, ...incarnationConflict], 'a second pending boundary for the same effect');
      await expectHead(store, trees.rootId, activation.snapshot.digest, 'after competing boundaries');
    },
  },
  {
    name: 'a tree-local settlement commits without a pending boundary',
    async run(store) {
      const trees = isolated();
      const writer = await Writer.start(store, trees.running(0));
      const settled = writer.effect(trees.effectId, trees.effect('settled', 'succeeded'));
      await writer.commit(settled, 'settled boundary without pending');
      if (settled.kind !== 'settled') throw new ConformanceFailure(`boundary kind ${settled.kind}`);
    },
  },
  {
    name: 'activation fences the previous writer',
    async run(store) {
      const trees = isolated();
      const original = await Writer.start(store, trees.running(0));
      const waiting = original.checkpoint('parked', trees.waiting());
      await original.commit(waiting, 'waiting');
      const restored = new Writer(store, original.head, 0n);
      const activation = restored.activation();
      await expectAck(store.activateTree(activation), 'activation');
      restored.head = activation.snapshot;
      await expectHead(store, trees.rootId, activation.snapshot.digest, 'after activation');
      await expectAck(store.activateTree(activation), 'identical activation retry while current');
      // The fenced writer cannot advance, nor replay its own acknowledged commits; the writer
      // check comes before the fact lookup, so it learns that it was fenced.
      const fenced = original.checkpoint('parked', trees.pausedWhileWaiting());
      await expectRejection(store.commitCheckpoint(fenced), incarnationConflict, 'the fenced writer advancing');
      await expectRejection(store.commitCheckpoint(waiting), incarnationConflict, 'the fenced writer retrying its last commit');
      // The new writer continues at sequence 1.
      const next = new Writer(store, restored.head, 0n);
      await next.commit(next.checkpoint('parked', conformanceTrees(trees.rootId, activation.incarnationId).pausedWhileWaiting()), 'new writer at sequence 1');
      // The head is at sequence 1 again, under another writer: the old start's fact, content and
      // sequence all match, so only the head digest tells the replay apart.
      await expectRejection(store.commitCheckpoint(startCheckpoint(trees.running(0))), commitConflict, 'the fenced writer replaying its start at sequence 1');
      await expectRejection(store.activateTree(activation), commitConflict, 'stale duplicate activation');
      // A later activation resets the sequence to 0 again: the earlier activation stays historical.
      const third = next.activation();
      await expectAck(store.activateTree(third), 'a second activation');
      await expectRejection(store.activateTree(activation), commitConflict, 'an earlier activation replayed at sequence 0');
      await expectHead(store, trees.rootId, third.snapshot.digest, 'after historical activations');
    },
  },
  {
    name: 'activation requires the current writer and head',
    async run(store) {
      const trees = isolated();
      const absent = TreeActivation.create({
        previousIncarnationId: trees.incarnationId,
        previousDigest: trees.running(0).digest,
        snapshot: trees.running(0).withIncarnation(TreeIncarnationId.random()),
      });
      await expectRejection(store.activateTree(absent), incarnationConflict, 'activation of an absent head');
      const writer = await Writer.start(store, trees.running(0));
      await writer.commit(writer.checkpoint('parked', trees.waiting()), 'waiting');
      const staleDigest = TreeActivation.create({
        previousIncarnationId: trees.incarnationId,
        previousDigest: trees.running(0).digest,
        snapshot: trees.running(0).withIncarnation(TreeIncarnationId.random()),
      });
      await expectRejection(store.activateTree(staleDigest), incarnationConflict, 'activation from a stale head');
      const wrongWriter = TreeActivation.create({
        previousIncarnationId: TreeIncarnationId.random(),
        previousDigest: writer.head.digest,
        snapshot: writer.head.withIncarnation(TreeIncarnationId.random()),
      });
      await expectRejection(store.activateTree(wrongWriter), incarnationConflict, 'activation naming another previous writer');
      await expectHead(store, trees.rootId, trees.waiting().digest, 'after rejected activations');
      const incarnation = TreeIncarnationId.random();
      const changedPrecondition = TreeActivation.create({
        previousIncarnationId: trees.incarnationId,
        previousDigest: writer.head.digest,
        snapshot: writer.head.withIncarnation(incarnation),
      });
      await expectAck(store.activateTree(changedPrecondition), 'activation from the current head');
      const sameIdentityOtherContent = TreeActivation.create({
        previousIncarnationId: trees.incarnationId,
        previousDigest: trees.running(0).digest,
        snapshot: writer.head.withIncarnation(incarnation),
      });
      await expectRejection(store.activateTree(sameIdentityOtherContent), commitConflict, 'an activation identity reused with another precondition');
    },
  },
  {
    name: 'concurrent restore fencing: exactly one activation wins',
    async run(store) {
      const trees = isolated();
      const writer = await Writer.start(store, trees.running(0));
      await writer.commit(writer.checkpoint('parked', trees.pausedWhileWaiting()), 'parked');
      const contenders = [writer.activation(), writer.activation()];
      const outcomes = await Promise.allSettled(contenders.map((activation) => store.activateTree(activation)));
      const winners = outcomes.filter((outcome) => outcome.status === 'fulfilled').length;
      const conflicts = outcomes.filter(
        (outcome) => outcome.status === 'rejected' && outcome.reason instanceof KernelError && outcome.reason.code === 'tree_incarnation_conflict',
      ).length;
      if (winners !== 1 || conflicts !== 1) {
        throw new ConformanceFailure(`winner with ${conflicts} conflicts (${winners} activations acknowledged)`);
      }
      const winner = contenders[outcomes.findIndex((outcome) => outcome.status === 'fulfilled')];
      await expectHead(store, trees.rootId, winner?.snapshot.digest, 'after racing activations');
    },
  },
  {
    name: 'concurrent advances: exactly one successor lands',
    async run(store) {
      const trees = isolated();
      const writer = await Writer.start(store, trees.running(0));
      const contenders = [writer.checkpoint('progress', trees.running(1)), writer.checkpoint('progress', trees.running(2))];
      const outcomes = await Promise.allSettled(contenders.map((checkpoint) => store.commitCheckpoint(checkpoint)));
      const winners = outcomes.filter((outcome) => outcome.status === 'fulfilled').length;
      if (winners !== 1) throw new ConformanceFailure(`${winners} competing successors acknowledged`);
      const loser = outcomes.find((outcome) => outcome.status === 'rejected');
      if (!(loser?.status === 'rejected' && loser.reason instanceof KernelError && ['commit_conflict', 'tree_incarnation_conflict'].includes(loser.reason.code))) {
        throw new ConformanceFailure('the losing successor did not fail with a protocol conflict');
      }
      const winner = contenders[outcomes.findIndex((outcome) => outcome.status === 'fulfilled')];
      await expectHead(store, trees.rootId, winner?.snapshot.digest, 'after racing successors');
    },
  },
  {
    name: 'trees are isolated and loadTree never activates',
    async run(store) {
      const first = isolated();
      const second = isolated();
      const writer = await Writer.start(store, first.running(0));
      await expectHead(store, second.rootId, undefined, 'an untouched tree');
      await Writer.start(store, second.running(0));
      await writer.commit(writer.checkpoint('progress', first.running(1)), 'progress of the first tree');
      await expectHead(store, second.rootId, second.running(0).digest, 'the second tree after the first advanced');
      const loaded = await store.loadTree(first.rootId);
      if (loaded === undefined || !loaded.incarnationId.equals(first.incarnationId)) {
        throw new ConformanceFailure('loadTree changed the writer');
      }
      await writer.commit(writer.checkpoint('progress', first.running(2)), 'the writer after loadTree');
    },
  },
];

