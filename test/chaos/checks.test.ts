/**
 * The chaos checks catch what they claim to: each rule against a well-formed tree (no violation) and
 * against the one defect it exists for (exactly that violation).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkAcknowledged, checkCancels, checkChain, checkExecutions, checkFinal, checkReader, compareStreamIds } from '../../scripts/chaos/checks.js';
import { Ledger } from '../../scripts/chaos/ledger.js';
import type { StoredEntry, StoredTree } from '../../scripts/chaos/stored.js';

const root = 'process:00000000000000000000000000000001';
const effect = `effect:${'a'.repeat(64)}`;

function entry(id: string, previous: string, name: string, fields: Partial<StoredEntry> = {}): StoredEntry {
  return { id, previous, name, phase: 'committed', processId: root, incarnation: 'incarnation:1', signalId: undefined, ...fields };
}

/** A started approval, a note admitted, a restore under a new incarnation, the answer admitted. */
function goodTree(): StoredTree {
  return {
    rootId: root,
    headIncarnation: 'incarnation:2',
    executions: {},
    neverClaims: {},
    entries: [
      entry('10-0', '0', 'agent.process.started'),
      entry('11-0', '10-0', 'agent.step.started', { phase: 'attempt' }),
      entry('12-0', '11-0', 'agent.signal.accepted', { signalId: 'note' }),
      entry('13-0', '12-0', 'agent.delta', { phase: undefined, processId: undefined, incarnation: undefined }),
      entry('14-0', '13-0', 'agent.process.restored', { incarnation: 'incarnation:2' }),
      entry('15-0', '14-0', 'agent.signal.accepted', { signalId: 'answer', incarnation: 'incarnation:2' }),
    ],
  };
}

function ledgerOf(signalIds: string[], replayForbidden = false): Ledger {
  const ledger = new Ledger();
  ledger.starts.push({ trial: 0, kind: 'approval', rootId: root, status: 201, replayForbidden });
  for (const signalId of signalIds) ledger.signals.push({ rootId: root, processId: root, signalId, status: 200, accepted: true });
  return ledger;
}

const trees = (tree: StoredTree) => new Map([[tree.rootId, tree]]);

test('a well-formed tree passes every check', () => {
  const tree = goodTree();
  assert.deepEqual(checkAcknowledged(ledgerOf(['note', 'answer', 'answer']), trees(tree)), []);
  assert.deepEqual(checkExecutions(ledgerOf([]), trees({ ...tree, executions: { [effect]: 1 }, neverClaims: { [effect]: 'attempt:1' } })), []);
  assert.deepEqual(checkChain(tree), []);
  assert.deepEqual(checkReader({ rootId: root, ids: ['10-0', '11-0', '12-0', '14-0', '15-0'], committedIds: ['10-0', '12-0', '14-0', '15-0'] }, tree), []);
  assert.deepEqual(checkFinal([{ rootId: root, status: 'waiting', settled: 'parked', restorable: true }]), []);
});

test('an acknowledged signal that is missing, or admitted twice, is a violation', () => {
  const [missing] = checkAcknowledged(ledgerOf(['lost']), trees(goodTree()));
  assert.match(missing ?? '', /signal lost .* admitted 0 times/);
  const tree = goodTree();
  const twice = { ...tree, entries: [...tree.entries, entry('16-0', '15-0', 'agent.signal.accepted', { signalId: 'answer', incarnation: 'incarnation:2' })] };
  assert.match(checkAcknowledged(ledgerOf(['answer']), trees(twice)).join('\n'), /signal answer .* admitted 2 times/);
});

test('an acknowledged start with no stored head, or published twice, is a violation', () => {
  assert.match(checkAcknowledged(ledgerOf([]), new Map()).join('\n'), /no head is stored/);
  const tree = goodTree();
  const twice = { ...tree, entries: [...tree.entries, entry('16-0', '15-0', 'agent.process.started', { incarnation: 'incarnation:2' })] };
  assert.match(checkAcknowledged(ledgerOf([]), trees(twice)).join('\n'), /published 2 times/);
});

test('a never-replay effect executed twice is a violation, by its claim and by the trial that knows its policy', () => {
  const tree = { ...goodTree(), executions: { [effect]: 2 }, neverClaims: { [effect]: 'attempt:1' } };
  assert.match(checkExecutions(ledgerOf([]), trees(tree)).join('\n'), /never-replay effect .* executed 2 times/);
  const unclaimed = { ...goodTree(), executions: { [effect]: 2 } };
  assert.deepEqual(checkExecutions(ledgerOf([]), trees(unclaimed)), [], 'a same_identity effect may run again');
  assert.match(checkExecutions(ledgerOf([], true), trees(unclaimed)).join('\n'), /its one never-replay effect executed 2 times/);
});

test('a broken log link, an old incarnation committing again, or a head no entry names is a fork', () => {
  const tree = goodTree();
  const relinked = { ...tree, entries: tree.entries.map((item) => (item.id === '12-0' ? { ...item, previous: '10-0' } : item)) };
  assert.match(checkChain(relinked).join('\n'), /12-0 links to 10-0, but follows 11-0/);
  const fenced = { ...tree, entries: [...tree.entries, entry('16-0', '15-0', 'agent.step.committed', { incarnation: 'incarnation:1' })] };
  assert.match(checkChain(fenced).join('\n'), /under incarnation incarnation:1, after incarnation:2 replaced it: a fork/);
  assert.match(checkChain({ ...tree, headIncarnation: 'incarnation:9' }).join('\n'), /incarnation:9, which no log entry names/);
});

test('a reader that missed, repeated or reordered a committed event is a violation', () => {
  const tree = goodTree();
  assert.match(checkReader({ rootId: root, ids: ['10-0', '14-0', '15-0'], committedIds: ['10-0', '14-0', '15-0'] }, tree).join('\n'), /#2 is 12-0 in the log but 14-0/);
  // A stream ends with the root's finish: a restore of the finished tree appends restored events it cannot see.
  const finished: StoredTree = {
    ...tree,
    entries: [
      entry('10-0', '0', 'agent.process.started'),
      entry('11-0', '10-0', 'agent.process.finished'),
      entry('12-0', '11-0', 'agent.process.restored', { incarnation: 'incarnation:2' }),
    ],
  };
  assert.deepEqual(checkReader({ rootId: root, ids: ['10-0', '11-0'], committedIds: ['10-0', '11-0'], ended: true }, finished), []);
  assert.match(checkReader({ rootId: root, ids: ['10-0', '11-0'], committedIds: ['10-0', '11-0'] }, finished).join('\n'), /#3 is 12-0 in the log but absent/, 'a stream that did not end owes it');
  const appended: StoredTree = { ...finished, entries: [...finished.entries, entry('13-0', '12-0', 'agent.signal.accepted', { signalId: 'late' })] };
  assert.match(checkReader({ rootId: root, ids: ['10-0', '11-0'], committedIds: ['10-0', '11-0'], ended: true }, appended).join('\n'), /#3 is 12-0 in the log but absent/, 'anything but restored events after the finish still counts');
  assert.match(checkReader({ rootId: root, ids: ['10-0'], committedIds: ['10-0'], ended: true }, finished).join('\n'), /#2 is 11-0 in the log but absent/, 'the finish itself is owed');
  assert.match(checkReader({ rootId: root, ids: ['10-0', '12-0', '12-0'], committedIds: ['10-0', '12-0', '12-0'] }, tree).join('\n'), /got message 12-0 twice/);
  assert.match(checkReader({ rootId: root, ids: ['12-0', '10-0'], committedIds: ['12-0', '10-0'] }, tree).join('\n'), /got 10-0 after 12-0/);
});

test('a tree still busy, or parked and not restorable, is a violation', () => {
  assert.match(checkFinal([{ rootId: root, status: 'running', settled: 'busy', restorable: undefined }]).join('\n'), /still running/);
  assert.match(checkFinal([{ rootId: root, status: 'waiting', settled: 'parked', restorable: false }]).join('\n'), /restore failed/);
});

test('an acknowledged cancel whose process did not end is a violation', () => {
  const ledger = ledgerOf([]);
  ledger.controls.push({ rootId: root, processId: root, action: 'cancel', status: 202 });
  assert.deepEqual(checkCancels(ledger, [{ rootId: root, status: 'canceled', settled: 'terminal', restorable: undefined }]), []);
  assert.match(checkCancels(ledger, [{ rootId: root, status: 'running', settled: 'parked', restorable: true }]).join('\n'), /acknowledged cancel, yet the process ended running/);
});

test('stream ids compare numerically', () => {
  assert.equal(compareStreamIds('9-0', '10-0'), -1);
  assert.equal(compareStreamIds('10-2', '10-10'), -1);
  assert.equal(compareStreamIds('10-1', '10-1'), 0);
});
