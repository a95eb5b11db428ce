import type { HeadVersion } from '../store/redis/head-versions.js';
import type { StoredHead } from '../store/redis/redis-committer.js';
import type { RedisWaitIndex, StoredWaitEntry } from '../store/redis/wait-index.js';
import type { Json, WaitQuery, WaitView } from './host.js';
import { openWaitsOf } from './open-waits.js';
import type { DescribeWait } from './wait-index-writer.js';

export interface IndexedInboxOptions {
  readonly index: RedisWaitIndex;
  readonly headVersions: (roots: readonly string[]) => Promise<(HeadVersion | undefined)[]>;
  readonly loadHead: (root: string) => Promise<StoredHead | undefined>;
  readonly describe: DescribeWait;
  /** Heads whose open waits are kept parsed (default 100,000 trees). */
  readonly cachedHeads?: number;
}

/** A head's open waits as listed (everything but `since`), by `<process> <wait>`. */
interface HeadReading {
  readonly digest: string;
  readonly waits: ReadonlyMap<string, Omit<WaitView, 'since' | 'answerSchema' | 'description'> & { answerSchema: Json | null | undefined; description: string | null | undefined }>;
}

/** Head loads in flight at once while verifying. */
const loadConcurrency = 32;

/**
 * `GET /v1/waits` in Redis mode: the open-wait index (`store/redis/wait-index.ts`) read on any node,
 * each entry verified against the stored head it names, so the list is the same on every node,
 * after restarts, and for trees no node holds. An entry is listed only when its head has the wait
 * open (`open-waits.ts`); the view (kind, key, prompt, schema) comes from that head, `since` and the
 * descriptor's parts from the entry when this node cannot describe the wait itself.
 *
 * An entry the head does not confirm is skipped. It is removed (compare-and-delete) once it can
 * never come true: its head is gone, belongs to another writer, or is at or past the commit the
 * entry was written for. An entry ahead of its head is a commit that may still land: kept, unlisted.
 *
 * Parsed heads are cached by digest: a list reads every head's version (one small HMGET each) and
 * parses only the heads that changed.
 */
export class IndexedInbox {
  readonly #options: IndexedInboxOptions;
  readonly #heads = new Map<string, HeadReading>();
  readonly #cachedHeads: number;

  constructor(options: IndexedInboxOptions) {
    this.#options = options;
    this.#cachedHeads = options.cachedHeads ?? 100_000;
  }

  async list(query: Omit<WaitQuery, 'tenant'> = {}): Promise<WaitView[]> {
    const entries = await this.#options.index.entries(query.rootId);
    const roots = [...new Set(entries.map((entry) => entry.rootId))];
    const versions = await this.#options.headVersions(roots);
    const readings = new Map<string, { version: HeadVersion; reading: HeadReading }>();
    const stale: StoredWaitEntry[] = [];
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
      const reading = this.#read(head);
      this.#remember(root, reading);
      readings.set(root, { version: { digest: head.digest, incarnation: head.incarnationId.toString(), sequence: head.sequence }, reading });
    });

    const waits: WaitView[] = [];
    for (const entry of entries) {
      const read = readings.get(entry.rootId);
      const open = read?.reading.waits.get(`${entry.processId} ${entry.waitId}`);
      if (open !== undefined) {
        if (query.deployment !== undefined && open.deployment !== query.deployment) continue;
        waits.push({ ...open, since: entry.since, answerSchema: open.answerSchema === undefined ? parseSchema(entry.answerSchema) : open.answerSchema, description: open.description === undefined ? entry.description : open.description });
      } else if (read === undefined || mayNeverLand(entry, read.version)) {
        stale.push(entry);
      }
    }
    if (stale.length > 0) void this.#options.index.remove(stale).catch(() => undefined);
    return waits.sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : 0));
  }

  #read(head: StoredHead): HeadReading {
    const waits = new Map<string, HeadReading['waits'] extends ReadonlyMap<string, infer V> ? V : never>();
    const root = head.snapshot.rootId.toString();
    for (const { process, waitId } of openWaitsOf(head.snapshot)) {
      const wait = process.mailbox.wait(waitId);
      if (wait === undefined) continue;
      const current = this.#options.describe(process);
      const external = wait.kind === 'external';
      waits.set(`${process.processId.toString()} ${waitId.toString()}`, {
        processId: process.processId.toString(),
        rootId: root,
        waitId: waitId.toString(),
        waitKind: wait.kind,
        key: wait.key.toString(),
        deployment: process.deploymentRef.name,
        prompt: external ? (wait.prompt ?? null) : null,
        // Undefined: this node cannot describe the wait; the entry's copy (from its writer) stands in.
        answerSchema: current === undefined ? undefined : current.answerSchema === undefined ? null : (JSON.parse(current.answerSchema.json()) as Json),
        description: current === undefined ? undefined : (current.description ?? null),
      });
    }
    return { digest: head.digest, waits };
  }

  #remember(root: string, reading: HeadReading): void {
    this.#heads.delete(root);
    this.#heads.set(root, reading);
    if (this.#heads.size > this.#cachedHeads) this.#heads.delete(this.#heads.keys().next().value as string);
  }
}

/**
 * Whether an entry the head does not confirm can never come true: the head belongs to another
 * writer (the entry's commit is fenced), or it is at or past the sequence the entry was written
 * for (that commit landed, or was refused). Otherwise the commit may still be in flight.
 */
function mayNeverLand(entry: StoredWaitEntry, head: HeadVersion): boolean {
  return head.incarnation !== entry.incarnation || head.sequence >= BigInt(entry.sequence);
}

function parseSchema(text: string | null): Json | null {
  if (text === null) return null;
  try {
    return JSON.parse(text) as Json;
  } catch {
    return null;
  }
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
