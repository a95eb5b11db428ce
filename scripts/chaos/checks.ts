/**
 * The end-of-run checks, as pure functions of what was acknowledged (the ledger), what Redis holds
 * (stored trees), what the trees ended as, and what the SSE readers received. Each violation is one
 * sentence that names the tree and says what is wrong.
 */
import type { Ledger } from './ledger.js';
import type { StoredEntry, StoredTree } from './stored.js';

export interface FinalState {
  readonly rootId: string;
  /** The root's status at the end. */
  readonly status: string;
  /** Terminal, or parked (nothing runs: every process waits, is paused, blocked on an Unknown, or done). */
  readonly settled: 'terminal' | 'parked' | 'busy';
  /** A parked tree's restore was answered 200 and its head then loaded. */
  readonly restorable: boolean | undefined;
}

export interface ReaderLog {
  readonly rootId: string;
  /** Every message id received, in order (messages without an id left out). */
  readonly ids: readonly string[];
  /** The ids of committed events received, in order. */
  readonly committedIds: readonly string[];
  /** The stream said `scope.stream.end`. */
  readonly ended?: boolean;
}

const committed = (entry: StoredEntry) => entry.phase === 'committed';

/** Stream ids `<ms>-<seq>` compare numerically, part by part. */
export function compareStreamIds(left: string, right: string): number {
  const [leftMs = 0n, leftSeq = 0n] = left.split('-').map((part) => BigInt(part));
  const [rightMs = 0n, rightSeq = 0n] = right.split('-').map((part) => BigInt(part));
  if (leftMs !== rightMs) return leftMs < rightMs ? -1 : 1;
  if (leftSeq !== rightSeq) return leftSeq < rightSeq ? -1 : 1;
  return 0;
}

/** Every acknowledged start is one tree, published once; every acknowledged signal admitted once. */
export function checkAcknowledged(ledger: Ledger, trees: ReadonlyMap<string, StoredTree>): string[] {
  const violations: string[] = [];
  const roots = new Map<string, number>();
  for (const start of ledger.starts) roots.set(start.rootId, (roots.get(start.rootId) ?? 0) + 1);
  for (const [rootId, acknowledgements] of roots) {
    if (acknowledgements > 1) violations.push(`${rootId}: ${acknowledgements} different trials were acknowledged with the same tree`);
    const tree = trees.get(rootId);
    if (tree === undefined || tree.headIncarnation === undefined) {
      violations.push(`${rootId}: acknowledged start, but no head is stored`);
      continue;
    }
    const published = tree.entries.filter((entry) => committed(entry) && entry.name === 'agent.process.started' && entry.processId === rootId).length;
    if (published !== 1) violations.push(`${rootId}: the acknowledged start is published ${published} times in the log (expected once)`);
  }
  const signals = new Map<string, { rootId: string; processId: string; signalId: string }>();
  for (const signal of ledger.signals) signals.set(`${signal.processId} ${signal.signalId}`, signal);
  for (const { rootId, processId, signalId } of signals.values()) {
    const tree = trees.get(rootId);
    const admitted = (tree?.entries ?? []).filter(
      (entry) => committed(entry) && entry.name === 'agent.signal.accepted' && entry.processId === processId && entry.signalId === signalId,
    ).length;
    if (admitted !== 1) violations.push(`${rootId}: acknowledged signal ${signalId} to ${processId} is admitted ${admitted} times (expected once)`);
  }
  return violations;
}

/** No Effect that may not be replayed ran twice: by the claim-time counts, for `never` claims and for trees whose one Effect is `never`. */
export function checkExecutions(ledger: Ledger, trees: ReadonlyMap<string, StoredTree>): string[] {
  const violations: string[] = [];
  for (const tree of trees.values()) {
    for (const effectId of Object.keys(tree.neverClaims)) {
      const count = tree.executions[effectId] ?? 0;
      if (count > 1) violations.push(`${tree.rootId}: never-replay effect ${effectId} executed ${count} times`);
    }
  }
  for (const start of ledger.starts) {
    if (!start.replayForbidden) continue;
    const tree = trees.get(start.rootId);
    const total = Object.values(tree?.executions ?? {}).reduce((sum, count) => sum + count, 0);
    if (total > 1) violations.push(`${start.rootId}: its one never-replay effect executed ${total} times`);
  }
  return violations;
}

/**
 * No forked head: the log is one chain (each entry's `scope.prev` is the entry before it), the
 * committed entries' incarnations follow each other without an earlier one coming back (a fenced
 * writer never committed again), and the head's incarnation is the last one that committed.
 */
export function checkChain(tree: StoredTree): string[] {
  const violations: string[] = [];
  let previous = '0';
  for (const entry of tree.entries) {
    if (entry.previous !== previous) {
      violations.push(`${tree.rootId}: log entry ${entry.id} links to ${entry.previous ?? 'nothing'}, but follows ${previous}`);
      break;
    }
    previous = entry.id;
  }
  const seen = new Set<string>();
  let current: string | undefined;
  for (const entry of tree.entries.filter(committed)) {
    if (entry.incarnation === current) continue;
    if (entry.incarnation === undefined || seen.has(entry.incarnation)) {
      violations.push(`${tree.rootId}: committed entry ${entry.id} (${entry.name}) is under incarnation ${entry.incarnation}, after ${current} replaced it: a fork`);
      break;
    }
    if (current !== undefined) seen.add(current);
    current = entry.incarnation;
  }
  if (current !== undefined && tree.headIncarnation !== undefined && current !== tree.headIncarnation) {
    // A restore's activation commits no kernel event of its own only if it has none to carry.
    const activated = tree.entries.some((entry) => entry.incarnation === tree.headIncarnation);
    if (!activated) violations.push(`${tree.rootId}: the head is under incarnation ${tree.headIncarnation}, which no log entry names (last committed: ${current})`);
  }
  return violations;
}

/** Every tree ends terminal, or parked and restorable. */
export function checkFinal(states: readonly FinalState[]): string[] {
  const violations: string[] = [];
  for (const state of states) {
    if (state.settled === 'busy') violations.push(`${state.rootId}: still ${state.status} with work in progress at the end (neither terminal nor parked)`);
    if (state.settled === 'parked' && state.restorable !== true) violations.push(`${state.rootId}: parked (${state.status}) but its restore failed`);
  }
  return violations;
}

/** An acknowledged cancel (202: the intent is in the head) ends its process, whatever crashed since. */
export function checkCancels(ledger: Ledger, states: readonly FinalState[]): string[] {
  const byRoot = new Map(states.map((state) => [state.rootId, state]));
  return ledger.controls
    .filter((control) => byRoot.get(control.rootId)?.settled !== 'terminal')
    .map((control) => `${control.rootId}: an acknowledged cancel, yet the process ended ${byRoot.get(control.rootId)?.status ?? 'unread'}, not terminal`);
}

/**
 * The committed entries a reader can have got. A stream ends with the root's finish, so it cannot see
 * what is appended after it, and only one thing is: restoring a finished tree (a new incarnation's
 * `agent.process.restored` events). The operator restores only unfinished trees, but its look and its
 * restore race the tree finishing on another node. Anything else after the finish still counts.
 */
function readableBy(reader: ReaderLog, entries: readonly StoredEntry[]): readonly StoredEntry[] {
  if (reader.ended !== true) return entries;
  const finish = entries.findIndex((entry) => entry.name === 'agent.process.finished' && entry.processId === reader.rootId);
  if (finish < 0) return entries;
  const after = entries.slice(finish + 1);
  return after.every((entry) => entry.name === 'agent.process.restored') ? entries.slice(0, finish + 1) : entries;
}

/** An SSE reader got every committed event once, in the log's order, and no message twice. */
export function checkReader(reader: ReaderLog, tree: StoredTree | undefined): string[] {
  const violations: string[] = [];
  const seen = new Set<string>();
  let last: string | undefined;
  for (const id of reader.ids) {
    if (seen.has(id)) {
      violations.push(`${reader.rootId}: the SSE reader got message ${id} twice`);
      break;
    }
    if (last !== undefined && compareStreamIds(id, last) <= 0) {
      violations.push(`${reader.rootId}: the SSE reader got ${id} after ${last} (out of order)`);
      break;
    }
    seen.add(id);
    last = id;
  }
  const entries = readableBy(reader, (tree?.entries ?? []).filter(committed));
  const stored = entries.map((entry) => entry.id);
  const got = reader.committedIds;
  const length = Math.max(stored.length, got.length);
  for (let index = 0; index < length; index += 1) {
    if (stored[index] !== got[index]) {
      const missed = entries.slice(index, index + 8).map((entry) => `${entry.id} ${entry.name}`).join(', ');
      violations.push(
        `${reader.rootId}: committed event #${index + 1} is ${stored[index] ?? 'absent'} in the log but ${got[index] ?? 'absent'} on the SSE reader ` +
          `(${stored.length} committed in the log, ${got.length} received${reader.ended ? ', the stream had ended' : ''}; the log from there: ${missed || 'nothing'})`,
      );
      break;
    }
  }
  return violations;
}
