import type { HeadVersion } from '../store/redis/head-versions.js';
import type { StoredHead } from '../store/redis/redis-committer.js';

export interface HeadReadingsOptions<R> {
  readonly headVersions: (roots: readonly string[]) => Promise<(HeadVersion | undefined)[]>;
  readonly loadHead: (root: string) => Promise<StoredHead | undefined>;
  /** What a reader keeps of a head (parsed once per digest). */
  readonly read: (head: StoredHead) => R;
  /** Heads whose readings are kept (least recently read go first). */
  readonly cachedHeads: number;
}

/** A root's current head version and what the reader took from that head. */
export interface HeadReadingOf<R> {
  readonly version: HeadVersion;
  readonly reading: R;
}

/** Head loads in flight at once while verifying. */
const loadConcurrency = 32;

/**
 * The stored heads an index reader verifies its entries against (the open-wait and Unknown indexes:
 * `indexed-inbox.ts`, `indexed-unknowns.ts`). Each call reads every root's head version (one small
 * HMGET each) and loads and reads again only the heads whose digest changed since it last read them.
 */
export class HeadReadings<R> {
  readonly #options: HeadReadingsOptions<R>;
  readonly #cache = new Map<string, { readonly digest: string; readonly reading: R }>();

  constructor(options: HeadReadingsOptions<R>) {
    this.#options = options;
  }

  /** The readings of `roots` that have a head (a root without one is absent from the map). */
  async of(roots: readonly string[]): Promise<Map<string, HeadReadingOf<R>>> {
    const versions = await this.#options.headVersions(roots);
    const readings = new Map<string, HeadReadingOf<R>>();
    const toLoad: string[] = [];
    roots.forEach((root, index) => {
      const version = versions[index];
      if (version === undefined) return;
      const cached = this.#cache.get(root);
      if (cached !== undefined && cached.digest === version.digest) readings.set(root, { version, reading: cached.reading });
      else toLoad.push(root);
    });
    await inBatches(toLoad, loadConcurrency, async (root) => {
      const head = await this.#options.loadHead(root);
      if (head === undefined) return;
      const reading = this.#options.read(head);
      this.#remember(root, head.digest, reading);
      readings.set(root, { version: { digest: head.digest, incarnation: head.incarnationId.toString(), sequence: head.sequence }, reading });
    });
    return readings;
  }

  #remember(root: string, digest: string, reading: R): void {
    this.#cache.delete(root);
    this.#cache.set(root, { digest, reading });
    if (this.#cache.size > this.#options.cachedHeads) this.#cache.delete(this.#cache.keys().next().value as string);
  }
}

/**
 * Whether an index entry its head does not confirm can never come true: the head belongs to another
 * writer (the entry's commit is fenced), or is at or past the sequence the entry was written for (that
 * commit landed, or was refused). Otherwise the commit may still be in flight: keep the entry.
 */
export function mayNeverLand(entry: { readonly incarnation: string; readonly sequence: string }, head: HeadVersion): boolean {
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
