import type { TreeSnapshot } from '../../kernel/index.js';
import type { TimerEntry, TimerIndex } from '../../store/timer-index.js';
import { decodeTimerRecord, pendingTimersOf, type TimerKindOfProcess, timerRecordSuffix } from './timer-effects.js';

/** A commit as the timer writer sees it. */
export interface TimerCommit {
  readonly snapshot: TreeSnapshot;
  /** A restore or takeover: every pending timer is adopted from its record (this node knew none). */
  readonly activation: boolean;
  /** The Effect a pending boundary makes pending: its due instant is fixed by this commit. */
  readonly pendingEffectId?: string;
}

/** A record the commit carries in its write set (the due instant, under the tree's hash tag). */
export interface TimerRecordWrite {
  readonly suffix: string;
  readonly value: string;
  readonly ttlMs: number;
}

/** What a commit leaves pending, prepared before it; applied once the commit is acknowledged. */
export interface TimerPlan {
  readonly root: string;
  readonly pending: ReadonlyMap<string, TimerEntry>;
  /** Records to write with the commit (timers whose instant this commit fixes). */
  readonly records: readonly TimerRecordWrite[];
}

export interface TimerWriterOptions {
  readonly index: TimerIndex;
  readonly kindOf: TimerKindOfProcess;
  /** A record of the tree (the timer records a pending commit wrote). */
  readonly readRecord: (root: string, suffix: string) => Promise<string | undefined>;
  /** Best-effort deletion of a settled timer's record (absent: records expire by their TTL). */
  readonly deleteRecord?: (root: string, suffix: string) => Promise<void>;
  /** Wall-clock epoch ms: the only place a relative duration becomes an instant. */
  readonly now: () => number;
}

/** A timer record outlives its due instant by this long (then a restore would treat it as lost: due at once). */
const recordGraceMs = 7 * 24 * 3_600_000;

/**
 * Keeps the durable timers of the trees this node commits (docs/host.md "Durable timers"):
 *
 * 1. A commit that makes a timer Effect pending fixes its due instant (`TimerKind.dueOf` at the
 *    Host's clock) and carries it as a record in its own write set, atomically with the head: the
 *    head holds the pending Effect iff its record exists. Its index entry is written just before the
 *    commit (failing that, nothing is committed), so the index is a superset of the truth.
 * 2. An activation (restore, takeover, wake) adopts each pending timer's instant from its record
 *    (never recomputing a relative duration, which would end the wait late) and rewrites the entry.
 * 3. Once a commit that no longer holds a timer pending is acknowledged (settled, Unknown, or the
 *    process terminated), its entry and record go (best-effort; sweepers drop what a crash leaves).
 *
 * What this node wrote is remembered per tree, so the timer dispatcher reads each instant from
 * memory and a commit that changes no timer writes nothing.
 */
export class TimerWriter {
  readonly #index: TimerIndex;
  readonly #kindOf: TimerKindOfProcess;
  readonly #readRecord: TimerWriterOptions['readRecord'];
  readonly #deleteRecord: TimerWriterOptions['deleteRecord'];
  readonly #now: () => number;
  /** root → (`<process> <effect>` → entry), for trees with pending timers. */
  readonly #indexed = new Map<string, ReadonlyMap<string, TimerEntry>>();

  constructor(options: TimerWriterOptions) {
    this.#index = options.index;
    this.#kindOf = options.kindOf;
    this.#readRecord = options.readRecord;
    this.#deleteRecord = options.deleteRecord;
    this.#now = options.now;
  }

  /** Writes the index entries a commit needs before it may be sent; returns the records it must carry. */
  async prepare(commit: TimerCommit): Promise<TimerPlan> {
    const root = commit.snapshot.rootId.toString();
    const known = commit.activation ? undefined : this.#indexed.get(root);
    const pending = new Map<string, TimerEntry>();
    const fresh: TimerEntry[] = [];
    const records: TimerRecordWrite[] = [];
    for (const timer of pendingTimersOf(commit.snapshot, this.#kindOf)) {
      const key = `${timer.processId} ${timer.effectId}`;
      const held = known?.get(key);
      if (held !== undefined) {
        pending.set(key, held);
        continue;
      }
      const now = this.#now();
      // Fixed by this commit, or adopted from the record the commit that fixed it wrote.
      const stored = timer.effectId === commit.pendingEffectId ? undefined : decodeTimerRecord(await this.#readRecord(root, timerRecordSuffix(timer.effectId)));
      const dueMs = stored ?? timer.kind.dueOf(timer.effect, now) ?? now;
      const entry: TimerEntry = { rootId: root, processId: timer.processId, effectId: timer.effectId, dueMs };
      if (stored === undefined) records.push({ suffix: timerRecordSuffix(timer.effectId), value: String(dueMs), ttlMs: Math.max(dueMs - now, 0) + recordGraceMs });
      pending.set(key, entry);
      fresh.push(entry);
    }
    if (fresh.length > 0) await this.#index.write(fresh);
    return { root, pending, records };
  }

  /** The commit was acknowledged: remember what it left pending; drop the entries and records of the rest. */
  async acknowledged(plan: TimerPlan): Promise<void> {
    const before = this.#indexed.get(plan.root);
    if (plan.pending.size === 0) this.#indexed.delete(plan.root);
    else this.#indexed.set(plan.root, plan.pending);
    if (before === undefined) return;
    const gone = [...before].filter(([key]) => !plan.pending.has(key)).map(([, entry]) => entry);
    if (gone.length === 0) return;
    await this.#index.remove(gone).catch(() => undefined);
    if (this.#deleteRecord !== undefined) {
      await Promise.all(gone.map((entry) => this.#deleteRecord?.(plan.root, timerRecordSuffix(entry.effectId)).catch(() => undefined)));
    }
  }

  /** The due instant this node fixed or adopted for a pending timer (undefined: not known here). */
  dueOf(root: string, processId: string, effectId: string): number | undefined {
    return this.#indexed.get(root)?.get(`${processId} ${effectId}`)?.dueMs;
  }

  /** A released or purged tree: its instants are read again from the records by its next activation. */
  forget(root: string): void {
    this.#indexed.delete(root);
  }
}
