import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  commitConflict,
  treeIncarnationConflict,
  type EffectBoundary,
  type TreeActivation,
  type TreeCheckpoint,
} from '../../src/kernel/commit.js';
import { KernelError } from '../../src/kernel/errors.js';
import type { ProcessId } from '../../src/kernel/identity.js';
import type { TreeStore } from '../../src/kernel/tree-committer.js';
import type { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import {
  committerConformanceCases,
  ConformanceFailure,
  runConformanceCase,
  type TreeStoreFactory,
} from '../../src/testing/committer-conformance.js';
import { childConformanceCases } from '../../src/testing/child-conformance.js';

/**
 * The conformance suite must fail, with the named message, against stores that each break one rule
 * of the protocol (kernel-contract §5.4). Two families:
 * - wrappers around MemoryTreeCommitter that misbehave the way real adapters do (§5.4's table);
 * - `CheckedStore`, a second implementation of §3.6 in which each check can be switched off: with
 *   every check on it passes the whole suite, and with any one check off the suite catches it.
 *   This is the mutation test of the commit protocol's rules.
 */

async function failures(factory: TreeStoreFactory): Promise<Map<string, string>> {
  const failed = new Map<string, string>();
  for (const conformanceCase of committerConformanceCases) {
    try {
      await runConformanceCase(conformanceCase, factory);
    } catch (error) {
      failed.set(conformanceCase.name, error instanceof ConformanceFailure ? error.message : `unexpected: ${String(error)}`);
    }
  }
  return failed;
}

async function assertDetected(factory: TreeStoreFactory, caseName: string, message: RegExp): Promise<void> {
  const failed = await failures(factory);
  assert.ok(failed.has(caseName), `case "${caseName}" should fail; failures: ${JSON.stringify([...failed])}`);
  assert.match(failed.get(caseName) as string, message);
}

/** Runs one Engine-driven child case against `factory` and asserts it fails with `message`. */
async function assertChildCaseDetected(factory: TreeStoreFactory, caseName: string, message: RegExp): Promise<void> {
  const conformanceCase = childConformanceCases.find((candidate) => candidate.name === caseName);
  assert.ok(conformanceCase !== undefined, `no child case named "${caseName}"`);
  await assert.rejects(runConformanceCase(conformanceCase, factory), (error: unknown) => error instanceof ConformanceFailure && message.test(error.message));
}

class Wrapper implements TreeStore {
  constructor(readonly inner: TreeStore = new MemoryTreeCommitter()) {}
  activateTree(activation: TreeActivation): Promise<void> {
    return this.inner.activateTree(activation);
  }
  commitEffect(boundary: EffectBoundary): Promise<void> {
    return this.inner.commitEffect(boundary);
  }
  commitCheckpoint(checkpoint: TreeCheckpoint): Promise<void> {
    return this.inner.commitCheckpoint(checkpoint);
  }
  loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.inner.loadTree(rootId);
  }
}

const swallow = (code: string) => (error: unknown) => {
  if (error instanceof KernelError && error.code === code) return;
  throw error;
};

test('the reference memory committer fails no case', async () => {
  assert.deepEqual([...(await failures(() => new MemoryTreeCommitter()))], []);
});

test('self-test: a factory returning nothing', async () => {
  await assertDetected(() => undefined as unknown as TreeStore, 'start installs an absent head at sequence 1', /driver returned nil/);
});

test('self-test: missing_head (loadTree never finds a head)', async () => {
  class MissingHead extends Wrapper {
    override async loadTree(): Promise<TreeSnapshot | undefined> {
      return undefined;
    }
  }
  await assertDetected(() => new MissingHead(), 'start installs an absent head at sequence 1', /head exists=false/);
});

test('self-test: accepted_conflict (swallows commit_conflict)', async () => {
  class AcceptedConflict extends Wrapper {
    override commitEffect(boundary: EffectBoundary): Promise<void> {
      return super.commitEffect(boundary).catch(swallow('commit_conflict'));
    }
    override commitCheckpoint(checkpoint: TreeCheckpoint): Promise<void> {
      return super.commitCheckpoint(checkpoint).catch(swallow('commit_conflict'));
    }
  }
  await assertDetected(
    () => new AcceptedConflict(),
    'effect boundaries: one pending, settled and resolved per effect for the life of the tree',
    /stale duplicate pending boundary returned success/,
  );
  await assertDetected(() => new AcceptedConflict(), 'an identical retry is acknowledged only while its sequence is current', /stale duplicate/);
});

test('self-test: stale_checkpoint (accepts a historical checkpoint replay at an identical head)', async () => {
  class StaleCheckpoint extends Wrapper {
    override async commitCheckpoint(checkpoint: TreeCheckpoint): Promise<void> {
      try {
        await super.commitCheckpoint(checkpoint);
      } catch (error) {
        const head = await this.loadTree(checkpoint.rootId);
        if (error instanceof KernelError && error.code === 'commit_conflict' && head?.digest.equals(checkpoint.snapshot.digest)) return;
        throw error;
      }
    }
  }
  await assertDetected(() => new StaleCheckpoint(), 'repeated waiting pause resume never replays history', /historical waiting replay returned nil/);
});

test('self-test: missing_cas (swallows the activation conflict)', async () => {
  class MissingCas extends Wrapper {
    override activateTree(activation: TreeActivation): Promise<void> {
      return super.activateTree(activation).catch(swallow('tree_incarnation_conflict'));
    }
  }
  await assertDetected(() => new MissingCas(), 'concurrent restore fencing: exactly one activation wins', /winner with 0 conflicts/);
});

test('self-test: framework_requires_pending (rejects a settled boundary without a pending one)', async () => {
  class RequiresPending extends Wrapper {
    readonly #pending = new Set<string>();
    override async commitEffect(boundary: EffectBoundary): Promise<void> {
      if (boundary.kind === 'settled' && !this.#pending.has(boundary.effectId.toString())) {
        throw commitConflict('settled without pending');
      }
      await super.commitEffect(boundary);
      if (boundary.kind === 'pending') this.#pending.add(boundary.effectId.toString());
    }
  }
  await assertDetected(
    () => new RequiresPending(),
    'a tree-local settlement commits without a pending boundary',
    /settled boundary without pending was rejected/,
  );
  await assertChildCaseDetected(() => new RequiresPending(), 'framework child controls/signal', /writer stopped .*settled without pending/);
});

test('self-test: framework_missing_head (acknowledges a settled boundary without storing it)', async () => {
  class MissingSettledHead extends Wrapper {
    override async commitEffect(boundary: EffectBoundary): Promise<void> {
      if (boundary.kind === 'settled') return;
      await super.commitEffect(boundary);
    }
  }
  await assertDetected(
    () => new MissingSettledHead(),
    'a tree-local settlement commits without a pending boundary',
    /acknowledged head digest mismatch/,
  );
  await assertChildCaseDetected(() => new MissingSettledHead(), 'framework child controls/signal', /acknowledged head digest mismatch/);
});

// ---------------------------------------------------------------------------------------------
// Mutation tests: one rule of §3.6 switched off at a time.

type Check =
  | 'startFact'
  | 'startAbsentHead'
  | 'advanceHeadExists'
  | 'advanceWriter'
  | 'writerBeforeFact'
  | 'factContent'
  | 'factSequence'
  | 'factHead'
  | 'nextSequence'
  | 'previousDigest'
  | 'activationFact'
  | 'activationWriter'
  | 'activationHead';

class CheckedStore implements TreeStore {
  readonly #heads = new Map<string, { snapshot: TreeSnapshot; sequence: bigint }>();
  readonly #facts = new Map<string, string>();

  constructor(readonly off: Check | undefined) {}

  #on(check: Check): boolean {
    return this.off !== check;
  }

  async loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.#heads.get(rootId.toString())?.snapshot;
  }

  #dedup(identity: string, content: string, sequence: bigint, prospective: TreeSnapshot, root: string): 'ack' | 'new' {
    const fact = this.#facts.get(identity);
    if (fact === undefined) return 'new';
    const head = this.#heads.get(root);
    const contentOk = !this.#on('factContent') || fact === content;
    const sequenceOk = !this.#on('factSequence') || head?.sequence === sequence;
    const headOk = !this.#on('factHead') || head?.snapshot.digest.equals(prospective.digest) === true;
    if (contentOk && sequenceOk && headOk) return 'ack';
    throw commitConflict();
  }

  async commitCheckpoint(checkpoint: TreeCheckpoint): Promise<void> {
    const root = checkpoint.rootId.toString();
    if (checkpoint.kind !== 'start') return this.#advance(checkpoint);
    if (this.#on('startFact') && this.#dedup(checkpoint.identity(), checkpoint.contentDigest().toString(), 1n, checkpoint.snapshot, root) === 'ack') return;
    if (this.#on('startAbsentHead') && this.#heads.has(root)) throw treeIncarnationConflict();
    this.#facts.set(checkpoint.identity(), checkpoint.contentDigest().toString());
    this.#heads.set(root, { snapshot: checkpoint.snapshot, sequence: 1n });
  }

  async commitEffect(boundary: EffectBoundary): Promise<void> {
    return this.#advance(boundary);
  }

  async #advance(commit: TreeCheckpoint | EffectBoundary): Promise<void> {
    const root = commit.rootId.toString();
    const writerCheck = () => {
      const head = this.#heads.get(root);
      if (this.#on('advanceHeadExists') && head === undefined) throw treeIncarnationConflict();
      if (this.#on('advanceWriter') && head !== undefined && !head.snapshot.incarnationId.equals(commit.snapshot.incarnationId)) {
        throw treeIncarnationConflict();
      }
    };
    if (this.#on('writerBeforeFact')) writerCheck();
    if (this.#dedup(commit.identity(), commit.contentDigest().toString(), commit.sequence, commit.snapshot, root) === 'ack') return;
    if (!this.#on('writerBeforeFact')) writerCheck();
    const head = this.#heads.get(root);
    if (this.#on('nextSequence') && head !== undefined && commit.sequence !== head.sequence + 1n) throw treeIncarnationConflict();
    if (this.#on('previousDigest') && head !== undefined && !head.snapshot.digest.equals(commit.previous)) throw treeIncarnationConflict();
    this.#facts.set(commit.identity(), commit.contentDigest().toString());
    this.#heads.set(root, { snapshot: commit.snapshot, sequence: commit.sequence });
  }

  async activateTree(activation: TreeActivation): Promise<void> {
    const root = activation.rootId.toString();
    if (this.#on('activationFact') && this.#dedup(activation.identity(), activation.contentDigest().toString(), 0n, activation.snapshot, root) === 'ack') return;
    const head = this.#heads.get(root);
    if (head === undefined) throw treeIncarnationConflict();
    if (this.#on('activationWriter') && !head.snapshot.incarnationId.equals(activation.previousIncarnationId)) throw treeIncarnationConflict();
    if (this.#on('activationHead') && !head.snapshot.digest.equals(activation.previousDigest)) throw treeIncarnationConflict();
    this.#facts.set(activation.identity(), activation.contentDigest().toString());
    this.#heads.set(root, { snapshot: activation.snapshot, sequence: 0n });
  }
}

test('mutation: the checked store with every check on passes the whole suite', async () => {
  assert.deepEqual([...(await failures(() => new CheckedStore(undefined)))], []);
});

const mutations: Record<Check, RegExp> = {
  startFact: /a start reusing the identity with other content failed with tree_incarnation_conflict, want commit_conflict|identical start retry/,
  startAbsentHead: /a second start under another writer returned success/,
  advanceHeadExists: /an advance on an absent head/,
  advanceWriter: /an advance by another writer returned success|the fenced writer advancing returned success/,
  writerBeforeFact: /the fenced writer retrying its last commit failed with commit_conflict/,
  factContent: /returned success/,
  factSequence: /historical waiting replay returned nil|stale duplicate/,
  factHead: /returned success|returned nil/,
  nextSequence: /an advance that skips a sequence returned success/,
  previousDigest: /an advance from a stale predecessor returned success/,
  activationFact: /identical activation retry while current was rejected|stale duplicate activation/,
  activationWriter: /activation naming another previous writer returned success/,
  activationHead: /activation from a stale head returned success/,
};

for (const [check, message] of Object.entries(mutations) as [Check, RegExp][]) {
  test(`mutation: the suite catches a store without the ${check} check`, async () => {
    const failed = await failures(() => new CheckedStore(check));
    assert.ok(failed.size > 0, `no case failed with ${check} off`);
    assert.ok(
      [...failed.values()].some((text) => message.test(text)),
      `expected a failure matching ${message}; got ${JSON.stringify([...failed])}`,
    );
  });
}
