import { ErrorCode, KernelError } from './errors.js';
import { maxDiagnosticBytes } from './failure.js';
import type { ProcessSnapshot } from './process-snapshot.js';
import type { TreeSnapshot } from './tree-snapshot.js';

/** Worst-case JSON escaping of one byte of text (`\u00xx`). */
const escapedBytesPerByte = 6;
/** The largest control string (a reason or a diagnostic), fully escaped. */
const maxEscapedText = maxDiagnosticBytes * escapedBytesPerByte;
/** Pending-control reasons a live Process may still record (kill, deadline, cancellation, pause, failure, pause reason). */
const controlStrings = 6;
/** Members a termination adds: status, cause, finish time, wrappers. */
const terminationOverhead = 512;
/** One unresolved effect id, quoted with its separator. */
const unresolvedIdBytes = 80;
/** Worst-case growth of one pending Effect when it settles Unknown (diagnostic + settlement envelope). */
const unknownSettlementBytes = maxEscapedText + 256;

/**
 * The bytes a live Process reserves beyond its encoded size: every control string it may still
 * record, a maximal failure diagnostic and termination, and an Unknown settlement for each Effect
 * of its prepared batch that is not yet definitely settled. Admitting a cut with these
 * reservations guarantees that the Process can still reach a terminal snapshot within the limits.
 */
export function liveReservation(process: ProcessSnapshot): number {
  if (process.isTerminal) return 0;
  const prepared = process.prepared;
  const open = prepared === undefined ? 0 : prepared.effects().filter((effect) => !effect.definite).length;
  const effects = prepared?.effectCount ?? 0;
  return controlStrings * maxEscapedText + maxEscapedText + terminationOverhead + effects * unresolvedIdBytes + open * unknownSettlementBytes;
}

/**
 * Snapshot byte admission (kernel-contract §4.12): each Process's encoded size plus its live
 * reservation must fit `max_process_snapshot_bytes`, and their sum `max_snapshot_bytes`.
 * Rejection is `resource_limit_exceeded`.
 */
export function admitTree(tree: TreeSnapshot): void {
  const limits = tree.treeLimits;
  if (limits.maxSnapshotBytes.unlimited && limits.maxProcessSnapshotBytes.unlimited) return;
  let total = 0n;
  for (const process of tree.processSnapshots()) {
    const size = BigInt(process.encodedSize + liveReservation(process));
    if (!limits.maxProcessSnapshotBytes.admits(size)) {
      throw new KernelError(
        ErrorCode.resourceLimitExceeded,
        `process ${process.processId} needs ${size} snapshot bytes (with reservations); max_process_snapshot_bytes is ${limits.maxProcessSnapshotBytes}`,
      );
    }
    total += size;
  }
  if (!limits.maxSnapshotBytes.admits(total)) {
    throw new KernelError(
      ErrorCode.resourceLimitExceeded,
      `the tree needs ${total} snapshot bytes (with reservations); max_snapshot_bytes is ${limits.maxSnapshotBytes}`,
    );
  }
}
