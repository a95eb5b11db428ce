import type { ChildWaitSpec } from './effect.js';
import type { ProcessId } from './identity.js';
import { childWaitSatisfiedPayload, MailboxRecord, type ChildOutcomeFacts, type UnresolvedEffect } from './mailbox.js';
import type { ProcessSnapshot } from './process-snapshot.js';

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
    let next = snapshot;
    for (const wait of snapshot.mailbox.openWaits()) {
      if (wait.kind !== 'children' || wait.answered || wait.spec === undefined) continue;
      const answered = atBoundary(lookup, wait.spec);
      if (answered.length < wait.spec.requiredCount) continue;
      const payload = childWaitSatisfiedPayload(wait.spec, answered.map((child) => outcomeOf(lookup, wait.spec as ChildWaitSpec, child)));
      const mailbox = next.mailbox.append(MailboxRecord.childWaitAnswer(wait.waitId, answered.map((child) => child.processId), payload));
      // The answer releases a parent waiting on exactly this wait; a pause still holds it.
      const releases = next.status === 'waiting' && next.waitId?.equals(wait.waitId) === true;
      next = next.with(releases ? { mailbox, status: 'running', currentWaitId: undefined } : { mailbox });
    }
    if (next !== snapshot) {
      byId.set(key, next);
      changed = true;
    }
  }
  return changed;
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
