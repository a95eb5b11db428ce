import { timestampToDate } from '../kernel/index.js';

/**
 * The list of root processes behind `GET /v1/processes`, newest first, whole and per deployment
 * name (a root's deployment never changes, so `?deployment=` reads its own list instead of
 * filtering the whole one). Each member is `<start time in ms, 15 digits>:<root id>`, so byte order
 * is start order (ties by root id); the opaque list cursor is the last member returned. The index is
 * a directory, not a fact: the store head stays authoritative, so an entry whose head is missing (a
 * start commit that failed after the entry was written) is skipped by the reader.
 *
 * Redis: sorted sets (`redis/root-index.ts`), written just before the start commit. Embedded: the
 * sorted arrays below, written after the memory commit.
 */
export interface RootIndex {
  add(entry: RootIndexEntry): Promise<void>;
  remove(entry: RootIndexEntry): Promise<void>;
  /** Up to `count` members older than `before` (all when undefined), newest first; one deployment's when named. */
  page(before: string | undefined, count: number, deployment?: string): Promise<string[]>;
  /** How many roots the index lists (what exists, not what is resident in memory). */
  size(): Promise<number>;
}

export interface RootIndexEntry {
  readonly rootId: string;
  readonly startedAt: string;
  /** The deployment name. */
  readonly deployment: string;
}

export function rootIndexMember(rootId: string, startedAt: string): string {
  const ms = timestampToDate(startedAt).getTime();
  return `${String(Math.max(0, ms)).padStart(15, '0')}:${rootId}`;
}

/** The root id of a member. */
export function rootOfMember(member: string): string {
  return member.slice(16);
}

const memberPattern = /^\d{15}:[A-Za-z0-9._:-]{1,256}$/;

export function isRootIndexMember(text: string): boolean {
  return memberPattern.test(text);
}

/** One sorted list of members. */
class SortedMembers {
  readonly #members: string[] = [];

  get size(): number {
    return this.#members.length;
  }

  add(member: string): void {
    const at = this.#lowerBound(member);
    if (this.#members[at] !== member) this.#members.splice(at, 0, member);
  }

  remove(member: string): void {
    const at = this.#lowerBound(member);
    if (this.#members[at] === member) this.#members.splice(at, 1);
  }

  /** Up to `count` members below `before`, newest first. */
  before(before: string | undefined, count: number): string[] {
    const end = before === undefined ? this.#members.length : this.#lowerBound(before);
    return this.#members.slice(Math.max(0, end - count), end).reverse();
  }

  /** The first index whose member is >= `member`. */
  #lowerBound(member: string): number {
    let low = 0;
    let high = this.#members.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.#members[mid] as string) < member) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

export class MemoryRootIndex implements RootIndex {
  readonly #all = new SortedMembers();
  readonly #byDeployment = new Map<string, SortedMembers>();

  async add(entry: RootIndexEntry): Promise<void> {
    this.addNow(entry);
  }

  /** Synchronous add (the embedded committer calls it right after the memory commit). */
  addNow(entry: RootIndexEntry): void {
    const member = rootIndexMember(entry.rootId, entry.startedAt);
    this.#all.add(member);
    let list = this.#byDeployment.get(entry.deployment);
    if (list === undefined) {
      list = new SortedMembers();
      this.#byDeployment.set(entry.deployment, list);
    }
    list.add(member);
  }

  async remove(entry: RootIndexEntry): Promise<void> {
    const member = rootIndexMember(entry.rootId, entry.startedAt);
    this.#all.remove(member);
    this.#byDeployment.get(entry.deployment)?.remove(member);
  }

  async page(before: string | undefined, count: number, deployment?: string): Promise<string[]> {
    const list = deployment === undefined ? this.#all : this.#byDeployment.get(deployment);
    return list?.before(before, count) ?? [];
  }

  async size(): Promise<number> {
    return this.#all.size;
  }
}
