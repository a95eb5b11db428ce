/**
 * The durable timer index (src/server/timers/): every timer Effect some commit left pending, by its
 * due instant, across trees — what a node's sweeper reads to wake hibernated or ownerless trees at
 * their instants. A hint, never a fact: the head that holds the pending Effect (and the timer record
 * its pending commit wrote beside it) is the truth, and a sweeper verifies each entry against it.
 */

/** One pending timer Effect of one tree. */
export interface TimerEntry {
  readonly rootId: string;
  readonly processId: string;
  readonly effectId: string;
  /** The absolute due instant, epoch milliseconds. */
  readonly dueMs: number;
}

export type TimerRef = Pick<TimerEntry, 'rootId' | 'processId' | 'effectId'>;

export interface TimerIndex {
  /** Adds (or moves) entries. */
  write(entries: readonly TimerEntry[]): Promise<void>;
  /** Removes entries (absent ones are ignored). */
  remove(refs: readonly TimerRef[]): Promise<void>;
  /** Entries due at or before `untilMs`, earliest first, at most `limit`. */
  dueBy(untilMs: number, limit: number): Promise<TimerEntry[]>;
}

export function timerMember(ref: TimerRef): string {
  return `${ref.rootId} ${ref.processId} ${ref.effectId}`;
}

export function parseTimerMember(member: string, dueMs: number): TimerEntry | undefined {
  const [rootId, processId, effectId, extra] = member.split(' ');
  if (rootId === undefined || processId === undefined || effectId === undefined || extra !== undefined || !Number.isFinite(dueMs)) return undefined;
  return { rootId, processId, effectId, dueMs };
}

/** Embedded mode: the index in this process's memory. */
export class MemoryTimerIndex implements TimerIndex {
  readonly #entries = new Map<string, TimerEntry>();

  async write(entries: readonly TimerEntry[]): Promise<void> {
    for (const entry of entries) this.#entries.set(timerMember(entry), entry);
  }

  async remove(refs: readonly TimerRef[]): Promise<void> {
    for (const ref of refs) this.#entries.delete(timerMember(ref));
  }

  async dueBy(untilMs: number, limit: number): Promise<TimerEntry[]> {
    return [...this.#entries.values()]
      .filter((entry) => entry.dueMs <= untilMs)
      .sort((a, b) => a.dueMs - b.dueMs)
      .slice(0, limit);
  }

  get size(): number {
    return this.#entries.size;
  }
}
