import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EffectBoundary, TreeCheckpoint } from '../../src/kernel/commit.js';
import { Digest, type DeferredBytes } from '../../src/kernel/digest.js';
import { KernelError } from '../../src/kernel/errors.js';
import { ProcessSnapshot } from '../../src/kernel/process-snapshot.js';
import type { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { fixtureEffectId, rootWithPreparedEffect, runningRootTree, treeWithChildren } from '../../src/testing/snapshot-fixtures.js';

/** Bytes that count how often they are hashed and compared. */
class CountedBytes implements DeferredBytes {
  hashed = 0;
  compared = 0;
  constructor(readonly text: string, readonly comparable = true) {}
  sha256Hex(): string {
    this.hashed += 1;
    return Digest.of(this.text).hex;
  }
  sameBytes(other: DeferredBytes): boolean | undefined {
    this.compared += 1;
    return this.comparable && other instanceof CountedBytes ? other.text === this.text : undefined;
  }
}

describe('Digest.deferred', () => {
  test('hashes once, when the text is first read, and equals the eager digest of the same bytes', () => {
    const bytes = new CountedBytes('{"a":1}');
    const digest = Digest.deferred(bytes);
    assert.equal(bytes.hashed, 0);
    assert.ok(digest.equals(digest));
    assert.equal(bytes.hashed, 0, 'a digest is equal to itself without hashing');
    assert.equal(digest.toString(), Digest.of('{"a":1}').toString());
    assert.equal(digest.hex, Digest.of('{"a":1}').hex);
    assert.equal(JSON.stringify({ digest }), JSON.stringify({ digest: Digest.of('{"a":1}') }));
    assert.equal(bytes.hashed, 1);
    assert.ok(digest.equals(Digest.of('{"a":1}')));
    assert.ok(!digest.equals(Digest.of('{"a":2}')));
    assert.ok(!digest.equals(undefined));
    assert.equal(bytes.hashed, 1);
  });

  test('two digests still deferred are compared by their bytes, without hashing', () => {
    const a = new CountedBytes('same');
    const b = new CountedBytes('same');
    const c = new CountedBytes('other');
    assert.ok(Digest.deferred(a).equals(Digest.deferred(b)));
    assert.ok(!Digest.deferred(a).equals(Digest.deferred(c)));
    assert.deepEqual([a.hashed, b.hashed, c.hashed], [0, 0, 0]);
    assert.ok(a.compared > 0);
  });

  test('bytes that cannot tell, and a deferred digest against an eager one, fall back to the hash', () => {
    const a = new CountedBytes('x', false);
    const b = new CountedBytes('x', false);
    assert.ok(Digest.deferred(a).equals(Digest.deferred(b)));
    assert.deepEqual([a.hashed, b.hashed], [1, 1]);
    const c = new CountedBytes('y');
    assert.ok(!Digest.deferred(c).equals(Digest.of('x')));
    assert.equal(c.hashed, 1);
  });
});

describe('TreeSnapshot digests compared by bytes', () => {
  /** A copy of `process` that is another object with the same bytes. */
  const copyOf = (process: ProcessSnapshot): ProcessSnapshot => ProcessSnapshot.create(process.toFields());

  test('a derived tree with the same bytes has an equal digest; one with other bytes of the same size does not', () => {
    const tree = treeWithChildren({ processes: 5, fanout: 2 });
    const [root, child] = tree.processSnapshots() as [ProcessSnapshot, ProcessSnapshot];
    const same = tree.withProcesses([copyOf(root), copyOf(child)]);
    assert.notEqual(same, tree);
    assert.ok(same.digest.equals(tree.digest));
    // One more committed step, a number of the same length: other bytes of the same size.
    assert.equal(child.committedSteps, 1n);
    const changed = tree.withProcesses([child.with({ committedSteps: 2n })]);
    assert.equal(changed.encodedSize, tree.encodedSize);
    assert.ok(!changed.digest.equals(tree.digest));
    assert.ok(!tree.digest.equals(changed.digest));
    // The comparisons agree with the hashes, read only now.
    assert.equal(same.digest.toString(), tree.digest.toString());
    assert.notEqual(changed.digest.toString(), tree.digest.toString());
    assert.equal(changed.digest.toString(), Digest.of(changed.json()).toString());
  });

  test('the digest of a tree derived before or after its base was hashed is the sha256 of its bytes', () => {
    // Large enough for the resumable trail (32 KB): many children.
    const base = treeWithChildren({ processes: 60, fanout: 8, childSignals: 4 });
    assert.ok(base.encodedSize > 32 * 1024, `fixture of ${base.encodedSize} bytes is too small`);
    const last = base.processSnapshots().at(-1) as ProcessSnapshot;
    const before = base.withProcesses([last.with({ committedSteps: 7n })]);
    assert.equal(base.digest.toString(), Digest.of(base.json()).toString());
    const after = base.withProcesses([last.with({ committedSteps: 9n })]);
    assert.equal(before.digest.toString(), Digest.of(before.json()).toString());
    assert.equal(after.digest.toString(), Digest.of(after.json()).toString());
  });
});

describe('a commit must change the head', () => {
  const rejected = (run: () => unknown, fragment: string): void => {
    assert.throws(run, (error: unknown) => error instanceof KernelError && error.code === 'invalid_commit' && error.message.includes(fragment));
  };
  /** The head again: equal bytes, another object (what a runtime rebuilding an unchanged tree holds). */
  const again = (tree: TreeSnapshot): TreeSnapshot => tree.withProcesses(tree.processSnapshots().map((process) => ProcessSnapshot.create(process.toFields())));

  test('a checkpoint whose tree has the head\'s bytes is refused, whether the digests were hashed or not', () => {
    const head = runningRootTree({ committedSteps: 1n });
    rejected(() => TreeCheckpoint.create({ kind: 'signals', sequence: 2n, previous: head.digest, snapshot: again(head) }), 'must change the head');
    rejected(() => TreeCheckpoint.create({ kind: 'signals', sequence: 2n, previous: Digest.of(head.json()), snapshot: again(head) }), 'must change the head');
    const next = head.withProcesses([head.root.with({ committedSteps: 2n })]);
    assert.equal(TreeCheckpoint.create({ kind: 'progress', sequence: 2n, previous: head.digest, snapshot: next }).snapshot, next);
  });

  test('an effect boundary whose tree has the head\'s bytes is refused', () => {
    const head = rootWithPreparedEffect('pending');
    const effectId = fixtureEffectId(head.rootId, 0n);
    rejected(() => EffectBoundary.create({ sequence: 2n, resolution: false, processId: head.rootId, effectId, previous: head.digest, snapshot: again(head) }), 'must change the head');
    const before = rootWithPreparedEffect('planned');
    assert.equal(EffectBoundary.create({ sequence: 2n, resolution: false, processId: head.rootId, effectId, previous: before.digest, snapshot: head }).kind, 'pending');
  });
});
