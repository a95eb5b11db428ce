import type { ChildWaitSpec } from './effect.js';
import type { ProcessId } from './identity.js';
import { childWaitSatisfiedPayload, MailboxRecord, type ChildOutcomeFacts, type UnresolvedEffect } from './mailbox.js';
import type { ProcessSnapshot } from './process-snapshot.js';
import type { TreeSnapshot } from './tree-snapshot.js';

/**
 * Child-wait satisfaction (kernel-contract §4.15), as one pure pass over a prospective tree. It runs
 * on every commit's prospective tree, so an answer lands in the very commit that made its last
 * counted child reach the boundary (or that registered an already satisfied wait): the check is
 * atomic with the facts it reports, and no separate "wake the parent" commit can be lost.
 */

/** The tree as the pass sees it: snapshots by id and direct children by parent id. */
interface Lookup {
  readonly get: (id: ProcessId) => ProcessSnapshot | undefined;
  readonly childrenOf: (id: ProcessId) => readonly ProcessSnapshot[];
}

/**
 * Answers every open, unanswered child wait of a live Process that its children now satisfy.
 * Replaces the answered openers in `byId` (keyed by ProcessId string); returns whether any changed.
 */
export function satisfyChildWaits(byId: Map<string, ProcessSnapshot>): boolean {
  const children = new Map<string, ProcessSnapshot[]>();
  for (const snapshot of byId.values()) {
    const parent = snapshot.relation.parentId?.toString();
    if (parent === undefined) continue;
    const list = children.get(parent);
    if (list === undefined) children.set(parent, [snapshot]);
    else list.push(snapshot);
  }
  const lookup: Lookup = {
    get: (id) => byId.get(id.toString()),
    childrenOf: (id) => children.get(id.toString()) ?? [],
  };
  let changed = false;
  for (const [key, snapshot] of byId) {
    if (snapshot.isTerminal || !children.has(key)) continue;
    const next = answerWaits(lookup, snapshot);
    if (next !== snapshot) {
      byId.set(key, next);
      changed = true;
    }
  }
  return changed;
}

/**
 * The same pass over a tree whose earlier cut was already answered: only `changed` members and
 * their ancestors can newly satisfy a wait (an answer reads the opener and its children's
 * subtrees), so only they are visited. Returns the answered openers' next snapshots.
 */
export function answerChildWaitsAround(tree: TreeSnapshot, changed: Iterable<ProcessSnapshot>): ProcessSnapshot[] {
  const lookup: Lookup = { get: (id) => tree.process(id), childrenOf: (id) => tree.children(id) };
  const visited = new Set<string>();
  const answered: ProcessSnapshot[] = [];
  for (const member of changed) {
    for (let opener = tree.process(member.processId); opener !== undefined; ) {
      const key = opener.processId.toString();
      if (visited.has(key)) break;
      visited.add(key);
      if (!opener.isTerminal && opener.mailbox.openWaits().some((wait) => wait.kind === 'children') && tree.children(opener.processId).length > 0) {
        const next = answerWaits(lookup, opener);
        if (next !== opener) answered.push(next);
      }
      const parent: ProcessId | undefined = opener.relation.parentId;
      opener = parent === undefined ? undefined : tree.process(parent);
    }
  }
  return answered;
}

/** `snapshot` with every open child wait its children now satisfy answered (itself when none). */
function answerWaits(lookup: Lookup, snapshot: ProcessSnapshot): ProcessSnapshot {
  let next = snapshot;
  for (const wait of snapshot.mailbox.openWaits()) {
    if (wait.kind !== 'children' || wait.answered || wait.spec === undefined) continue;
    const answered = atBoundary(lookup, wait.spec);
    if (answered.length < wait.spec.requiredCount) continue;
    const payload = childWaitSatisfiedPayload(wait.spec, answered.map((child) => outcomeOf(lookup, wait.spec as ChildWaitSpec, child)));
    const mailbox = next.mailbox.append(MailboxRecord.childWaitAnswer(wait.waitId, answered.map((child) => child.processId), payload));
    // The answer releases a parent waiting on exactly this wait. A pause still holds it, but the
    // answered wait no longer does: it stops being current (as a signal answering it would), so a
    // resume continues the parent instead of waiting again.
    const current = next.waitId?.equals(wait.waitId) === true;
    next = next.with(!current ? { mailbox } : next.status === 'waiting' ? { mailbox, status: 'running', currentWaitId: undefined } : { mailbox, currentWaitId: undefined });
  }
  return next;
}

/** Every awaited child at the wait's boundary, in request order (all of them, not only a quorum). */
function atBoundary(lookup: Lookup, spec: ChildWaitSpec): ProcessSnapshot[] {
  const reached: ProcessSnapshot[] = [];
  for (const id of spec.children) {
    const child = lookup.get(id);
    if (child === undefined || !child.isTerminal) continue;
    if (spec.boundary === 'subtree_drained' && !drained(lookup, child)) continue;
    reached.push(child);
  }
  return reached;
}

/** A subtree is drained when every member of it is terminal (terminal members own no work). */
function drained(lookup: Lookup, root: ProcessSnapshot): boolean {
  const stack = [root];
  for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
    if (!member.isTerminal) return false;
    stack.push(...lookup.childrenOf(member.processId));
  }
  return true;
}

function outcomeOf(lookup: Lookup, spec: ChildWaitSpec, child: ProcessSnapshot): ChildOutcomeFacts {
  const result = child.result();
  if (result === undefined) throw new Error(`child ${child.processId.toString()} has no terminal result`);
  if (spec.boundary === 'terminal_result') return { result };
  const unresolved: UnresolvedEffect[] = [];
  const stack = [child];
  for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
    for (const effectId of member.termination?.unresolvedEffectIds ?? []) unresolved.push({ processId: member.processId, effectId });
    stack.push(...lookup.childrenOf(member.processId));
  }
  return { result, subtreeUnresolved: unresolved };
}
