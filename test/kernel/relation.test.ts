import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { ChildKey, ProcessId } from '../../src/kernel/identity.js';
import { ProcessRelation } from '../../src/kernel/relation.js';

const invalid = (error: unknown) => error instanceof KernelError && error.code === ErrorCode.invalidProcessRelation;

const root = ProcessId.parse('process:root');
const child = ProcessId.parse('process:child');
const grandchild = ProcessId.parse('process:grandchild');
const key = ChildKey.parse('worker.1');

test('a root is its own root at depth 0 with no parent or key', () => {
  const relation = ProcessRelation.root(root);
  assert.ok(relation.processId.equals(root));
  assert.ok(relation.rootId.equals(root));
  assert.equal(relation.parentId, undefined);
  assert.equal(relation.childKey, undefined);
  assert.equal(relation.depth, 0);
  assert.equal(relation.isRoot, true);
  assert.equal(relation.json(), '{"depth":0,"root_id":"process:root"}');
  assert.ok(Object.isFrozen(relation));
});

test('a child inherits the root, names its parent and key, and is one level deeper', () => {
  const parent = ProcessRelation.root(root);
  const first = ProcessRelation.child(child, parent, key);
  assert.ok(first.rootId.equals(root));
  assert.ok(first.parentId?.equals(root));
  assert.ok(first.childKey?.equals(key));
  assert.equal(first.depth, 1);
  assert.equal(first.isRoot, false);
  assert.equal(first.json(), '{"child_key":"worker.1","depth":1,"parent_id":"process:root","root_id":"process:root"}');

  const second = ProcessRelation.child(grandchild, first, ChildKey.parse('leaf'));
  assert.equal(second.depth, 2);
  assert.ok(second.parentId?.equals(child));
  assert.ok(second.rootId.equals(root));
});

test('a child can be neither the root nor its own parent', () => {
  const parent = ProcessRelation.root(root);
  assert.throws(() => ProcessRelation.child(root, parent, key), invalid);
  const first = ProcessRelation.child(child, parent, key);
  assert.throws(() => ProcessRelation.child(child, first, key), invalid);
  assert.throws(() => ProcessRelation.child(root, first, key), invalid);
});

test('factories reject values of the wrong type', () => {
  assert.throws(() => ProcessRelation.root('process:root' as unknown as ProcessId), invalid);
  const parent = ProcessRelation.root(root);
  assert.throws(() => ProcessRelation.child(child, parent, 'worker' as unknown as ChildKey), invalid);
  assert.throws(() => ProcessRelation.child(child, {} as ProcessRelation, key), invalid);
});

test('relations round trip through the wire form for their process', () => {
  const rootRelation = ProcessRelation.root(root);
  const first = ProcessRelation.child(child, rootRelation, key);
  const second = ProcessRelation.child(grandchild, first, ChildKey.parse('leaf'));
  for (const relation of [rootRelation, first, second]) {
    const parsed = ProcessRelation.parse(relation.json(), relation.processId);
    assert.ok(parsed.equals(relation));
    assert.equal(parsed.json(), relation.json());
  }
  const shuffled = '{ "root_id": "process:root", "parent_id": "process:root", "depth": 1, "child_key": "worker.1" }';
  assert.equal(ProcessRelation.parse(shuffled, child).json(), first.json());
});

test('equality compares every member', () => {
  const rootRelation = ProcessRelation.root(root);
  const a = ProcessRelation.child(child, rootRelation, key);
  assert.ok(a.equals(ProcessRelation.child(child, rootRelation, ChildKey.parse('worker.1'))));
  assert.ok(!a.equals(ProcessRelation.child(child, rootRelation, ChildKey.parse('worker.2'))));
  assert.ok(!a.equals(ProcessRelation.child(grandchild, rootRelation, key)));
  assert.ok(!a.equals(rootRelation));
  assert.ok(!a.equals(undefined));
});

test('decoding a root: depth 0 requires process == root and no parent or key', () => {
  ProcessRelation.parse('{"depth":0,"root_id":"process:root"}', root);
  assert.throws(() => ProcessRelation.parse('{"depth":0,"root_id":"process:root"}', child), invalid);
  assert.throws(
    () => ProcessRelation.parse('{"depth":0,"parent_id":"process:other","root_id":"process:root"}', root),
    invalid,
  );
  assert.throws(() => ProcessRelation.parse('{"child_key":"k","depth":0,"root_id":"process:root"}', root), invalid);
});

test('decoding a child: parent and key required, depth rules, never the root or its own parent', () => {
  const ok = '{"child_key":"k","depth":1,"parent_id":"process:root","root_id":"process:root"}';
  ProcessRelation.parse(ok, child);
  const cases: Array<[string, ProcessId]> = [
    ['{"child_key":"k","depth":1,"root_id":"process:root"}', child], // no parent
    ['{"depth":1,"parent_id":"process:root","root_id":"process:root"}', child], // no key
    [ok, root], // the root as a child
    ['{"child_key":"k","depth":2,"parent_id":"process:child","root_id":"process:grandchild"}', grandchild], // root below depth 0
    ['{"child_key":"k","depth":2,"parent_id":"process:child","root_id":"process:root"}', child], // own parent
    ['{"child_key":"k","depth":1,"parent_id":"process:other","root_id":"process:root"}', child], // depth 1, parent not root
    ['{"child_key":"k","depth":2,"parent_id":"process:root","root_id":"process:root"}', grandchild], // root's child at depth 2
  ];
  for (const [text, id] of cases) assert.throws(() => ProcessRelation.parse(text, id), invalid, text);
  ProcessRelation.parse('{"child_key":"k","depth":2,"parent_id":"process:child","root_id":"process:root"}', grandchild);
});

test('decoding rejects unknown members, bad identities and non-uint32 depths', () => {
  const bad = [
    '{"depth":0,"root_id":"process:root","extra":1}',
    '{"depth":0,"process_id":"process:root","root_id":"process:root"}',
    '{"depth":0,"root_id":"process root"}',
    '{"depth":0}',
    '{"root_id":"process:root"}',
    '{"depth":-1,"root_id":"process:root"}',
    '{"depth":1.5,"root_id":"process:root"}',
    '{"depth":"0","root_id":"process:root"}',
    '{"child_key":"k","depth":4294967296,"parent_id":"process:child","root_id":"process:root"}',
    '{"child_key":"bad key","depth":1,"parent_id":"process:root","root_id":"process:root"}',
    '{"child_key":"k","depth":1,"parent_id":null,"root_id":"process:root"}',
    '[]',
  ];
  for (const text of bad) assert.throws(() => ProcessRelation.parse(text, text.includes('"depth":0') ? root : grandchild), invalid, text);
  ProcessRelation.parse('{"child_key":"k","depth":4294967295,"parent_id":"process:child","root_id":"process:root"}', grandchild);
});

test('a child below the deepest uint32 depth cannot be created', () => {
  const deepest = ProcessRelation.parse(
    '{"child_key":"k","depth":4294967295,"parent_id":"process:child","root_id":"process:root"}',
    grandchild,
  );
  assert.throws(() => ProcessRelation.child(ProcessId.parse('process:deeper'), deepest, key), invalid);
});
