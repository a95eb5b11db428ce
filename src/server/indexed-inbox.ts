import { HeadReadings, mayNeverLand, type HeadReadingsOptions } from './head-readings.js';
import type { StoredHead } from '../store/redis/redis-committer.js';
import type { RedisWaitIndex, StoredWaitEntry } from '../store/redis/wait-index.js';
import type { Json, WaitQuery, WaitView } from './host.js';
import { openWaitsOf } from './open-waits.js';
import type { DescribeWait } from './wait-index-writer.js';

export interface IndexedInboxOptions extends Pick<HeadReadingsOptions<unknown>, 'headVersions' | 'loadHead'> {
  readonly index: RedisWaitIndex;
  readonly describe: DescribeWait;
  /** Heads whose open waits are kept parsed (default 100,000 trees). */
  readonly cachedHeads?: number;
}

/** A head's open waits as listed (everything but `since`), by `<process> <wait>`. */
type OpenWait = Omit<WaitView, 'since' | 'answerSchema' | 'description'> & { answerSchema: Json | null | undefined; description: string | null | undefined };
type HeadReading = ReadonlyMap<string, OpenWait>;

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
  readonly #heads: HeadReadings<HeadReading>;

  constructor(options: IndexedInboxOptions) {
    this.#options = options;
    this.#heads = new HeadReadings({ headVersions: options.headVersions, loadHead: options.loadHead, read: (head) => this.#read(head), cachedHeads: options.cachedHeads ?? 100_000 });
  }

  async list(query: Omit<WaitQuery, 'tenant'> = {}): Promise<WaitView[]> {
    const entries = await this.#options.index.entries(query.rootId);
    const readings = await this.#heads.of([...new Set(entries.map((entry) => entry.rootId))]);
    const stale: StoredWaitEntry[] = [];
    const waits: WaitView[] = [];
    for (const entry of entries) {
      const read = readings.get(entry.rootId);
      const open = read?.reading.get(`${entry.processId} ${entry.waitId}`);
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
    const waits = new Map<string, OpenWait>();
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
    return waits;
  }
}

function parseSchema(text: string | null): Json | null {
  if (text === null) return null;
  try {
    return JSON.parse(text) as Json;
  } catch {
    return null;
  }
}
