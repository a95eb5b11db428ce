import type { Redis } from 'ioredis';
import { timestampToDate } from '../kernel/result.js';

/**
 * The list of root processes behind `GET /v1/processes`, newest first. Each member is
 * `<start time in ms, 15 digits>:<root id>`, so byte order is start order (ties by root id); the
 * opaque list cursor is the last member returned. The index is a directory, not a fact: the store
 * head stays authoritative, so an entry whose head is missing (a start commit that failed after
 * the entry was written) is skipped by the reader.
 *
 * Redis: a sorted set `<prefix>:roots` (all scores 0, read with ZREVRANGEBYLEX), written just
 * before the start commit. Embedded: a sorted array, written after the memory commit.
 */
export interface RootIndex {
  add(rootId: string, startedAt: string): Promise<void>;
  remove(rootId: string, startedAt: string): Promise<void>;
  /** Up to `count` members older than `before` (all when undefined), newest first. */
  page(before: string | undefined, count: number): Promise<string[]>;
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

export class MemoryRootIndex implements RootIndex {
  readonly #members: string[] = [];

  async add(rootId: string, startedAt: string): Promise<void> {
    this.addNow(rootId, startedAt);
  }

  /** Synchronous add (the embedded committer calls it right after the memory commit). */
  addNow(rootId: string, startedAt: string): void {
    const member = rootIndexMember(rootId, startedAt);
    const at = this.#lowerBound(member);
    if (this.#members[at] !== member) this.#members.splice(at, 0, member);
  }

  async remove(rootId: string, startedAt: string): Promise<void> {
    const member = rootIndexMember(rootId, startedAt);
    const at = this.#lowerBound(member);
    if (this.#members[at] === member) this.#members.splice(at, 1);
  }

  async page(before: string | undefined, count: number): Promise<string[]> {
    const end = before === undefined ? this.#members.length : this.#lowerBound(before);
    const start = Math.max(0, end - count);
    return this.#members.slice(start, end).reverse();
  }

  get size(): number {
    return this.#members.length;
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

export function rootIndexKey(prefix: string): string {
  return `${prefix}:roots`;
}

export class RedisRootIndex implements RootIndex {
  readonly #redis: Redis;
  readonly #key: string;

  constructor(options: { redis: Redis; keyPrefix: string }) {
    this.#redis = options.redis;
    this.#key = rootIndexKey(options.keyPrefix);
  }

  async add(rootId: string, startedAt: string): Promise<void> {
    await this.#redis.zadd(this.#key, 0, rootIndexMember(rootId, startedAt));
  }

  async remove(rootId: string, startedAt: string): Promise<void> {
    await this.#redis.zrem(this.#key, rootIndexMember(rootId, startedAt));
  }

  async page(before: string | undefined, count: number): Promise<string[]> {
    const max = before === undefined ? '+' : `(${before}`;
    return this.#redis.zrevrangebylex(this.#key, max, '-', 'LIMIT', 0, count);
  }
}
