import { HeadReadings, mayNeverLand, type HeadReadingsOptions } from './head-readings.js';
import type { RedisUnknownIndex, StoredUnknownEntry } from '../store/redis/unknown-index.js';
import { unknownRefsOf, type UnknownRef } from './tree-marks.js';

export interface IndexedUnknownsOptions extends Pick<HeadReadingsOptions<unknown>, 'headVersions' | 'loadHead'> {
  readonly index: RedisUnknownIndex;
  /** Heads whose Unknowns are kept parsed (default 10,000 trees). */
  readonly cachedHeads?: number;
}

/** A head's Unknown effects by `<process> <effect>`. */
type HeadReading = ReadonlyMap<string, UnknownRef>;

/**
 * The Unknown effects of every tree in Redis mode, read from the Unknown-outcome index
 * (`store/redis/unknown-index.ts`) on any node, each entry verified against the stored head it names —
 * so the list is the same on every node, after restarts, and for trees no node holds. An entry is
 * listed only when its head holds the effect Unknown; one the head does not confirm is skipped, and
 * removed (compare-and-delete) once it can never come true: its head is gone, belongs to another
 * writer, or is at or past the commit the entry was written for.
 *
 * The whole index is read per call (like the inbox): Unknowns wait for a person, so there are few.
 * Parsed heads are cached by digest: only heads that changed are parsed again.
 */
export class IndexedUnknowns {
  readonly #index: RedisUnknownIndex;
  readonly #heads: HeadReadings<HeadReading>;

  constructor(options: IndexedUnknownsOptions) {
    this.#index = options.index;
    this.#heads = new HeadReadings({
      headVersions: options.headVersions,
      loadHead: options.loadHead,
      read: (head) => new Map(unknownRefsOf(head.snapshot.rootId.toString(), head.snapshot.processSnapshots()).map((ref) => [`${ref.processId} ${ref.effectId}`, ref])),
      cachedHeads: options.cachedHeads ?? 10_000,
    });
  }

  async refs(): Promise<UnknownRef[]> {
    const entries = await this.#index.entries();
    const readings = await this.#heads.of([...new Set(entries.map((entry) => entry.rootId))]);
    const refs: UnknownRef[] = [];
    const stale: StoredUnknownEntry[] = [];
    for (const entry of entries) {
      const read = readings.get(entry.rootId);
      const ref = read?.reading.get(`${entry.processId} ${entry.effectId}`);
      if (ref !== undefined) refs.push(ref);
      else if (read === undefined || mayNeverLand(entry, read.version)) stale.push(entry);
    }
    if (stale.length > 0) void this.#index.remove(stale).catch(() => undefined);
    return refs;
  }
}
