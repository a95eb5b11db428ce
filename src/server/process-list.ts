import { isStatus, statusValues } from '../kernel/index.js';
import { invalidRequest } from '../errors.js';
import { isRootIndexMember, rootOfMember, type RootIndex } from '../store/root-index.js';
import type { Page, ProcessListQuery, ProcessSummary } from './host.js';
import type { TreeResidency } from './residency.js';
import { storeCall } from './store-call.js';
import { summaryOf } from './views.js';
import { marksMatch, marksOf, type TreeMarks } from './tree-marks.js';

/** A root's summary with its tree's marks, read from the same head. */
interface Listed {
  readonly summary: Omit<ProcessSummary, keyof TreeMarks>;
  readonly marks: TreeMarks;
}

/**
 * `GET /v1/processes`: root processes newest first, from the root index (whole, or one deployment's
 * list), each summarised from its stored head (or, embedded, this runtime). A status filter is applied while
 * scanning, within a bounded number of index batches: a page may come back short (even empty) with a
 * cursor to continue. `nextCursor` is null exactly when the index holds nothing further. So are the
 * `hasUnknown` / `hasOpenGate` filters: each tree's marks (tree-marks.ts) are read off the same head as
 * its summary, so they hold on any node and after restarts, whether or not the tree is resident here.
 */

const pageSize = { fallback: 20, max: 100 } as const;
/** Index batches one page may scan for a status filter before it returns what it has. */
const scanBatches = 20;
/** Summaries of terminal stored roots cached (they never change). */
const cachedSummaries = 10_000;

/** Reads the versions (digests) of stored heads in one round trip (Redis mode). */
export type HeadDigests = (roots: readonly string[]) => Promise<(string | undefined)[]>;

export class ProcessList {
  readonly #roots: RootIndex;
  readonly #residency: TreeResidency;
  readonly #summaries = new Map<string, Listed>();
  /** Redis mode: summaries by the head digest they were read from. */
  readonly #byDigest = new Map<string, { digest: string; listed: Listed }>();
  readonly #headDigests: HeadDigests | undefined;

  readonly #tenantOf: (root: string) => Promise<string>;

  /**
   * With `headDigests` (Redis mode, where other nodes commit too) every root is summarised from its
   * stored head, never from this node's copy (which another node may have fenced and moved on), and a
   * head is parsed again only when its digest changed. Without it (one embedded node, whose copy is
   * the truth) a resident tree is summarised from memory.
   */
  constructor(roots: RootIndex, residency: TreeResidency, tenantOf: (root: string) => Promise<string>, headDigests?: HeadDigests) {
    this.#roots = roots;
    this.#residency = residency;
    this.#tenantOf = tenantOf;
    this.#headDigests = headDigests;
  }

  async page(query: ProcessListQuery): Promise<Page<ProcessSummary>> {
    const status = query.status;
    if (status !== undefined && !isStatus(status)) throw invalidRequest(`status must be one of ${statusValues.join(', ')}`);
    const limit = query.limit ?? pageSize.fallback;
    if (!Number.isInteger(limit) || limit < 1 || limit > pageSize.max) throw invalidRequest(`limit must be an integer in 1..${pageSize.max}`);
    let before: string | undefined;
    if (query.cursor !== undefined) {
      before = decodeCursor(query.cursor);
      if (before === undefined || !isRootIndexMember(before)) throw invalidRequest('cursor is not a cursor of this list');
    }
    const items: ProcessSummary[] = [];
    // One member more than the page needs tells whether anything follows it.
    const filtered =
      status !== undefined ||
      query.tenant !== undefined ||
      query.startedAfter !== undefined ||
      query.startedBefore !== undefined ||
      query.hasUnknown !== undefined ||
      query.hasOpenGate !== undefined;
    const batch = filtered ? Math.min(100, limit * 2) : limit + 1;
    for (let scanned = 0; scanned < scanBatches; scanned += 1) {
      const members = await storeCall('process list', () => this.#roots.page(before, batch, query.deployment));
      const summaries = await this.#summariesOf(members.map(rootOfMember));
      for (const [index, member] of members.entries()) {
        const root = rootOfMember(member);
        const listed = summaries[index];
        const summary = listed?.summary;
        const owned = query.tenant === undefined || summary === undefined || (await this.#tenantOf(root)) === query.tenant;
        if (listed !== undefined && summary !== undefined && owned && (status === undefined || summary.status === status) && startedWithin(summary, query) && marksMatch(listed.marks, query)) {
          if (items.length === limit) return { items, nextCursor: encodeCursor(before as string) };
          items.push({ ...summary, ...listed.marks });
        }
        before = member;
      }
      if (members.length < batch) return { items, nextCursor: null };
    }
    return { items, nextCursor: before === undefined ? null : encodeCursor(before) };
  }

  /** Forgets a cached summary (the tree was restored or purged). */
  forget(root: string): void {
    this.#summaries.delete(root);
    this.#byDigest.delete(root);
  }

  async #summariesOf(roots: readonly string[]): Promise<(Listed | undefined)[]> {
    const headDigests = this.#headDigests;
    if (headDigests === undefined) {
      const summaries: (Listed | undefined)[] = [];
      for (const root of roots) summaries.push(await this.#summary(root));
      return summaries;
    }
    const digests = await storeCall('process list', () => headDigests(roots));
    return Promise.all(
      roots.map(async (root, index) => {
        const digest = digests[index];
        if (digest === undefined) return undefined;
        const cached = this.#byDigest.get(root);
        if (cached !== undefined && cached.digest === digest) return cached.listed;
        const head = await this.#residency.loadHead(root);
        if (head === undefined) return undefined;
        const listed = { summary: summaryOf(head.root), marks: marksOf(head.processSnapshots()) };
        this.#byDigest.delete(root);
        this.#byDigest.set(root, { digest: head.digest.toString(), listed });
        if (this.#byDigest.size > cachedSummaries) this.#byDigest.delete(this.#byDigest.keys().next().value as string);
        return listed;
      }),
    );
  }

  async #summary(root: string): Promise<Listed | undefined> {
    const processes = this.#residency.inspectLocal(root)?.processes.map((process) => process.snapshot);
    const entry = processes?.find((process) => process.processId.toString() === root);
    if (processes !== undefined && entry !== undefined) return { summary: summaryOf(entry), marks: marksOf(processes) };
    const cached = this.#summaries.get(root);
    if (cached !== undefined) return cached;
    const head = await this.#residency.loadHead(root);
    if (head === undefined) return undefined;
    const summary = { summary: summaryOf(head.root), marks: marksOf(head.processSnapshots()) };
    // Only a tree none of whose processes can move again keeps its summary and marks for good.
    if (head.processSnapshots().every((process) => process.isTerminal)) {
      this.#summaries.set(root, summary);
      if (this.#summaries.size > cachedSummaries) this.#summaries.delete(this.#summaries.keys().next().value as string);
    }
    return summary;
  }
}

/** Whether a root's start falls inside the query's start-time bounds (absent bounds: any). */
function startedWithin(summary: Listed['summary'], query: ProcessListQuery): boolean {
  const started = Date.parse(summary.startedAt);
  if (query.startedAfter !== undefined && started < query.startedAfter) return false;
  return query.startedBefore === undefined || started < query.startedBefore;
}

function encodeCursor(member: string): string {
  return Buffer.from(member, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string | undefined {
  if (typeof cursor !== 'string' || !/^[A-Za-z0-9_-]{1,512}$/.test(cursor)) return undefined;
  return Buffer.from(cursor, 'base64url').toString('utf8');
}
