import type { HeadVersion } from '../store/redis/head-versions.js';
import type { StoredHead } from '../store/redis/redis-committer.js';
import type { RedisUnknownIndex, StoredUnknownEntry } from '../store/redis/unknown-index.js';
import { unknownRefsOf, type UnknownRef } from './tree-marks.js';

export interface IndexedUnknownsOptions {
  readonly index: RedisUnknownIndex;
  readonly headVersions: (roots: readonly string[]) => Promise<(HeadVersion | undefined)[]>;
  readonly loadHead: (root: string) => Promise<StoredHead | undefined>;
  /** Heads whose Unknowns are kept parsed (default 10,000 trees). */
  readonly cachedHeads?: number;
}

/** A head's Unknown effects by `<process> <effect>`. */
interface HeadReading {
  readonly digest: string;
  readonly unknown: ReadonlyMap<string, UnknownRef>;
}

/** Head loads in flight at once while verifying. */
const loadConcurrency = 32;

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
  readonly #options: IndexedUnknownsOptions;
  readonly #heads = new Map<string, HeadReading>();
  readonly #cachedHeads: number;

  constructor(options: IndexedUnknownsOptions) {
    this.#options = options;
    this.#cachedHeads = options.cachedHeads ?? 10_000;
  }

  async refs(): Promise<UnknownRef[]> {
    const entries = await this.#options.index.entries();
    const roots = [...new Set(entries.map((entry) => entry.rootId))];
    const versions = await this.#options.headVersions(roots);
    const readings = new Map<string, { version: HeadVersion; reading: HeadReading }>();
    const toLoad: string[] = [];
    roots.forEach((root, index) => {
      const version = versions[index];
      if (version === undefined) return;
      const cached = this.#heads.get(root);
      if (cached !== undefined && cached.digest === version.digest) readings.set(root, { version, reading: cached });
      else toLoad.push(root);
    });
    await inBatches(toLoad, loadConcurrency, async (root) => {
      const head = await this.#options.loadHead(root);
      if (head === undefined) return;
      const reading = { digest: head.digest, unknown: new Map(unknownRefsOf(root, head.snapshot.processSnapshots()).map((ref) => [`${ref.processId} ${ref.effectId}`, ref])) };
      this.#remember(root, reading);
      readings.set(root, { version: { digest: head.digest, incarnation: head.incarnationId.toString(), sequence: head.sequence }, reading });
    });
    const refs: UnknownRef[] = [];
    const stale: StoredUnknownEntry[] = [];
    for (const entry of entries) {
      const read = readings.get(entry.rootId);
      const ref = read?.reading.unknown.get(`${entry.processId} ${entry.effectId}`);
      if (ref !== undefined) refs.push(ref);
      else if (read === undefined || mayNeverLand(entry, read.version)) stale.push(entry);
    }
    if (stale.length > 0) void this.#options.index.remove(stale).catch(() => undefined);
    return refs;
  }

  #remember(root: string, reading: HeadReading): void {
    this.#heads.delete(root);
    this.#heads.set(root, reading);
    if (this.#heads.size > this.#cachedHeads) this.#heads.delete(this.#heads.keys().next().value as string);
  }
}

/**
 * Whether an entry its head does not confirm can never come true: the head belongs to another writer
 * (the entry's commit is fenced), or is at or past the sequence the entry was written for (that commit
 * landed and was resolved since, or was refused). Otherwise the commit may still be in flight.
 */
function mayNeverLand(entry: StoredUnknownEntry, head: HeadVersion): boolean {
  return head.incarnation !== entry.incarnation || head.sequence >= BigInt(entry.sequence);
}

async function inBatches<T>(items: readonly T[], concurrency: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next] as T;
      next += 1;
      await run(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
