import type { TreeSnapshot } from '../kernel/index.js';
import type { HostRecord } from '../store/redis/host-writes.js';

/**
 * The interrupt barrier's durable half (interrupt-barrier.ts holds child starts in memory on the owner):
 * a tree-wide pause, cancel or kill writes the record `interrupt` beside the tree's head in the very
 * commit that records the control (its host write set), carrying the action and the barrier's release
 * deadline; its TTL is that deadline too. A node that restores the tree — a takeover after the owner
 * died, a wake from hibernation — reads it before the new incarnation runs anything and holds child
 * starts again until the tree settles or the deadline passes. A tree-wide resume deletes it in its own
 * commit, and so does a process resume in a tree whose barrier is no longer held (the interrupt is
 * over, so a later restore must not revive it); a purge deletes it with the tree.
 *
 * A barrier that lifts because the tree settled leaves the record to its TTL: a settled tree (every
 * process paused or ended) moves again only through a resume, which deletes the record, and a restore
 * of a settled head arms nothing.
 */
export const interruptRecordSuffix = 'interrupt';

/** What the record holds. */
export interface InterruptRecord {
  readonly action: 'pause' | 'cancel' | 'kill';
  /** The release deadline, in milliseconds since the epoch (`SCOPE_INTERRUPT_RELEASE_MS` after the control). */
  readonly until: number;
}

const hostValueKey = 'scope.interrupt';

type Carried = { readonly hold: InterruptRecord } | { readonly release: true };

/** The host values of a tree-wide control that starts an interrupt (pause, cancel, kill) or ends it (resume). */
export function interruptHostValues(action: 'pause' | 'resume' | 'cancel' | 'kill', releaseMs: number, now: number): Readonly<Record<string, unknown>> {
  const carried: Carried = action === 'resume' ? { release: true } : { hold: { action, until: now + releaseMs } };
  return { [hostValueKey]: carried };
}

/** The host values of a control that ends an interrupt no longer in force (a process resume). */
export function interruptReleaseHostValues(): Readonly<Record<string, unknown>> {
  return { [hostValueKey]: { release: true } satisfies Carried };
}

/** The record write a commit carries for its control (none for a commit that records none). */
export function interruptRecordWrite(hostValues: Readonly<Record<string, unknown>> | undefined, now: number): HostRecord | undefined {
  const carried = hostValues?.[hostValueKey] as Carried | undefined;
  if (carried === undefined) return undefined;
  if ('release' in carried) return { suffix: interruptRecordSuffix, value: '', remove: true };
  // Already past its deadline (a commit that took that long): nothing to keep.
  const ttlMs = Math.max(1, Math.ceil(carried.hold.until - now));
  return { suffix: interruptRecordSuffix, value: JSON.stringify(carried.hold), ttlMs };
}

/** The record as stored, or undefined when absent or unreadable. */
export function decodeInterruptRecord(text: string | undefined): InterruptRecord | undefined {
  if (text === undefined || text === '') return undefined;
  try {
    const value = JSON.parse(text) as Partial<InterruptRecord>;
    if ((value.action === 'pause' || value.action === 'cancel' || value.action === 'kill') && typeof value.until === 'number' && Number.isFinite(value.until)) {
      return { action: value.action, until: value.until };
    }
  } catch {
    // Unreadable: no barrier (the record's TTL removes it).
  }
  return undefined;
}

/** Whether a head has settled: every process paused or ended (an interrupt then holds nothing back). */
export function headSettled(head: TreeSnapshot): boolean {
  return head.processSnapshots().every((process) => process.isTerminal || process.status === 'paused');
}
