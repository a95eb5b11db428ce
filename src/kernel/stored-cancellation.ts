import { TreeActivation } from './commit.js';
import { ErrorCode, KernelError } from './errors.js';
import { Event, eventNames, ProcessFinished } from './event.js';
import { Failure, validDiagnostic } from './failure.js';
import type { TreeIncarnationId } from './identity.js';
import { Payload } from './payload.js';
import { PendingControl, type ProcessSnapshot } from './process-snapshot.js';
import { formatUtcTimestamp } from './result.js';
import { Settlement } from './settlement.js';
import { admitTree } from './snapshot-admission.js';
import { resolveTermination } from './termination-matrix.js';
import type { Termination } from './termination.js';
import type { TreeSnapshot } from './tree-snapshot.js';

/**
 * Terminating Processes without their Definitions (kernel-contract §4.11). Termination never runs a
 * Step: the priority matrix resolves the recorded intents, a retained prepared batch stays as
 * evidence with its never-dispatched pending attempt made Unknown, and the terminal snapshot closes
 * the current wait and clears pending control. The tree runtime terminates its live Processes with
 * these, and {@link cancelStoredTree} cancels a stored tree no node can run (a superseded tree, whose
 * version no node holds: src/server/succession.ts).
 */

/** The diagnostic of a pending attempt that termination forbids to replay (its outcome is unknown). */
export function interruptedAttempt(): Failure {
  return Failure.create('external', 'engine.effect.recovery.invalid', 'dispatch was permitted before the writer stopped and replay is forbidden; the outcome is unknown');
}

/** `snapshot` with every pending attempt of its retained batch settled Unknown (planned tails never start). */
export function withPendingAttemptsUnknown(snapshot: ProcessSnapshot): ProcessSnapshot {
  let prepared = snapshot.prepared;
  if (prepared === undefined) return snapshot;
  for (const effect of prepared.effects()) {
    if (effect.phase === 'pending') prepared = prepared.withSettlement(effect.id, Settlement.of('unknown', Payload.emptyObject), interruptedAttempt());
  }
  return snapshot.with({ prepared });
}

/** The terminal snapshot of `snapshot` under `termination`: its wait closed, its control and pause cleared. */
export function terminalSnapshot(snapshot: ProcessSnapshot, termination: Termination, finishedAt: string, output: Payload | undefined): ProcessSnapshot {
  return snapshot.with({
    status: termination.status,
    termination,
    finishedAt,
    output: termination.status === 'completed' ? output : undefined,
    pendingControl: PendingControl.empty(),
    currentWaitId: undefined,
    pauseReason: undefined,
  });
}

/** A stored tree cancelled: the activation that installs it (fencing every earlier writer) and its events. */
export interface StoredCancellation {
  /** Installs the cancelled tree under `incarnationId` over exactly the head it was derived from. */
  readonly activation: TreeActivation;
  /** One committed `agent.process.finished` per Process it terminated, in canonical order. */
  readonly events: readonly Event[];
}

export interface StoredCancellationOptions {
  /** The root's host cancellation reason (a valid diagnostic). */
  readonly reason: string;
  /** The incarnation of the final writer (a new one: the activation fences the stored tree's). */
  readonly incarnationId: TreeIncarnationId;
  /** When the Processes finished. */
  readonly now: Date;
}

/**
 * Cancels every live Process of the stored tree `head` as the Engine would, without any Definition:
 * the root records host cancellation (`host_cancellation`) and each live descendant the intent its
 * parent's end cascades (`parent_cancellation` for a cancelled parent: kernel-contract §4.11); a
 * recorded kill or deadline still outranks them, and an intent already recorded keeps its reason
 * (the first of each kind wins). Terminal Processes stay as they are. Throws `process_finished` when
 * nothing is live (there is nothing to cancel), or what admission refuses.
 */
export function cancelStoredTree(head: TreeSnapshot, options: StoredCancellationOptions): StoredCancellation {
  if (!validDiagnostic(options.reason)) throw new KernelError(ErrorCode.invalidTermination, 'the cancellation reason must be a valid diagnostic');
  const finishedAt = formatUtcTimestamp(options.now);
  const ends = new Map<string, Termination>();
  const replaced: ProcessSnapshot[] = [];
  const events: Event[] = [];
  // Canonical order is by depth: every parent's end is known before its children's.
  for (const process of head.processSnapshots()) {
    const id = process.processId.toString();
    if (process.isTerminal) {
      ends.set(id, process.termination as Termination);
      continue;
    }
    const parentId = process.relation.parentId?.toString();
    const parentEnd = parentId === undefined ? undefined : ends.get(parentId);
    const control = withIntent(process.pendingControl, parentId === undefined ? { cancellation: { owner: 'host', reason: options.reason } } : cascaded(parentEnd));
    const interrupted = withPendingAttemptsUnknown(process);
    const termination = resolveTermination(control, { kind: 'none' }, interrupted.prepared?.unknownEffectIds() ?? []) as Termination;
    const next = terminalSnapshot(interrupted, termination, finishedAt, undefined);
    ends.set(id, termination);
    replaced.push(next);
    events.push(
      Event.create({
        // A new writer numbers its events from 1 (one event per Process here).
        processSequence: 1n,
        processId: next.processId,
        deploymentRef: next.deploymentRef,
        relation: next.relation,
        treeIncarnationId: options.incarnationId,
        name: eventNames.processFinished,
        occurredAt: options.now,
        payload: ProcessFinished.fromTermination(termination, next.usage()),
      }),
    );
  }
  if (replaced.length === 0) throw new KernelError(ErrorCode.processFinished, `tree ${head.rootId.toString()} has no live process to cancel`);
  const tree = head.withIncarnation(options.incarnationId).withProcesses(replaced);
  admitTree(tree);
  return { activation: TreeActivation.create({ previousIncarnationId: head.incarnationId, previousDigest: head.digest, snapshot: tree }), events };
}

type Intent = Partial<{ killReason: string; cancellation: { owner: 'host' | 'parent'; reason: string }; deadline: { owner: 'host' | 'parent'; reason: string } }>;

/** What a parent's end records on a live child (the tree runtime's cascade): kill, parent deadline, or parent cancellation. */
function cascaded(parentEnd: Termination | undefined): Intent {
  const cause = parentEnd?.cause;
  const reason = `the parent finished (${cause ?? 'terminal'})`;
  if (cause === 'engine_kill') return { killReason: reason };
  if (cause === 'host_deadline' || cause === 'parent_deadline') return { deadline: { owner: 'parent', reason } };
  return { cancellation: { owner: 'parent', reason } };
}

function withIntent(control: PendingControl, intent: Intent): PendingControl {
  return control.with({
    killReason: control.killReason ?? intent.killReason,
    cancellation: control.cancellation ?? intent.cancellation,
    deadline: control.deadline ?? intent.deadline,
  });
}
