import type { Redis } from 'ioredis';
import { createHash } from 'node:crypto';
import { encodeCanonical } from '../kernel/canonical-json.js';
import { ProcessId } from '../kernel/identity.js';
import type { RedisTreeCommitter } from '../store/redis/redis-committer.js';
import { invalidRequest } from './errors.js';

/**
 * Idempotent starts. A start carrying an `Idempotency-Key` passes
 * `hostValues[idempotencyHostValue]` ({@link IdempotencyIntent}) to `Engine.start`; the server's
 * committer decorator turns it into the record of the start commit:
 *
 * - Redis mode: a record `<prefix>:{<root>}:record:idempotency` written by the start commit's own
 *   Lua script (no record without the head, no head without the record), plus a pointer
 *   `<prefix>:idempotency:<sha256(key)>` → root id, written just before that script. A pointer
 *   whose root has no record (the start commit failed) is ignored and later overwritten.
 * - Embedded mode: an in-memory map, set right after the synchronous memory commit.
 *
 * A lookup returns the record only when its key digest matches; the caller compares request
 * digests (same → the same process, other → `idempotency_key_conflict`).
 */

/** The `hostValues` member a start uses for its idempotency intent. */
export const idempotencyHostValue = 'idempotency';
/** The record suffix under the root (`<prefix>:{<root>}:record:<suffix>`). */
export const idempotencyRecordSuffix = 'idempotency';

/** What a start asks its commit to record. */
export interface IdempotencyIntent {
  readonly keyDigest: string;
  readonly requestDigest: string;
  readonly ttlMs: number;
}

/** A stored record. */
export interface IdempotencyRecord {
  readonly keyDigest: string;
  readonly requestDigest: string;
  readonly processId: string;
}

const keyPattern = /^[\x21-\x7e]{1,255}$/;

/** Checks an `Idempotency-Key` (1–255 visible ASCII characters) and returns its SHA-256 hex. */
export function idempotencyKeyDigest(key: string): string {
  if (typeof key !== 'string' || !keyPattern.test(key)) {
    throw invalidRequest('Idempotency-Key must be 1-255 visible ASCII characters');
  }
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** SHA-256 hex of the canonical JSON of a request body (member order and whitespace do not matter). */
export function requestDigest(body: unknown): string {
  let canonical: string;
  try {
    canonical = encodeCanonical(body);
  } catch (error) {
    throw invalidRequest(`the request body is not JSON: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

/** Reads an intent from a commit context's host values (undefined when absent or malformed). */
export function intentOf(hostValues: Readonly<Record<string, unknown>> | undefined): IdempotencyIntent | undefined {
  const value = hostValues?.[idempotencyHostValue] as Partial<IdempotencyIntent> | undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  if (typeof value.keyDigest !== 'string' || typeof value.requestDigest !== 'string' || typeof value.ttlMs !== 'number') return undefined;
  return { keyDigest: value.keyDigest, requestDigest: value.requestDigest, ttlMs: value.ttlMs };
}

export function encodeRecord(record: IdempotencyRecord): string {
  return JSON.stringify({ keyDigest: record.keyDigest, requestDigest: record.requestDigest, processId: record.processId });
}

export function decodeRecord(text: string): IdempotencyRecord | undefined {
  try {
    const value = JSON.parse(text) as Partial<IdempotencyRecord>;
    if (typeof value.keyDigest === 'string' && typeof value.requestDigest === 'string' && typeof value.processId === 'string') {
      return { keyDigest: value.keyDigest, requestDigest: value.requestDigest, processId: value.processId };
    }
  } catch {
    // fall through
  }
  return undefined;
}

/** Where records are looked up. */
export interface IdempotencyStore {
  lookup(keyDigest: string): Promise<IdempotencyRecord | undefined>;
}

/** Embedded mode: records in memory, expired lazily; at most `maxEntries` are kept (oldest dropped). */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #records = new Map<string, { record: IdempotencyRecord; expiresAt: number }>();
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: { maxEntries?: number; now?: () => number } = {}) {
    this.#maxEntries = options.maxEntries ?? 100_000;
    this.#now = options.now ?? Date.now;
  }

  async lookup(keyDigest: string): Promise<IdempotencyRecord | undefined> {
    const entry = this.#records.get(keyDigest);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#records.delete(keyDigest);
      return undefined;
    }
    return entry.record;
  }

  /** Called by the committer decorator right after the start commit is acknowledged. */
  set(intent: IdempotencyIntent, processId: string): void {
    this.#records.delete(intent.keyDigest);
    this.#records.set(intent.keyDigest, {
      record: { keyDigest: intent.keyDigest, requestDigest: intent.requestDigest, processId },
      expiresAt: this.#now() + intent.ttlMs,
    });
    // Insertion order is age order: drop the oldest beyond the bound.
    while (this.#records.size > this.#maxEntries) {
      const oldest = this.#records.keys().next().value as string;
      this.#records.delete(oldest);
    }
  }

  get size(): number {
    return this.#records.size;
  }
}

/** The pointer key of a key digest (outside any tree's hash tag: it only names a root). */
export function idempotencyPointerKey(prefix: string, keyDigest: string): string {
  return `${prefix}:idempotency:${keyDigest}`;
}

/** Redis mode: pointer → root, then the record the start commit wrote under that root. */
export class RedisIdempotencyStore implements IdempotencyStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #committer: RedisTreeCommitter;

  constructor(options: { redis: Redis; keyPrefix: string; committer: RedisTreeCommitter }) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#committer = options.committer;
  }

  async lookup(keyDigest: string): Promise<IdempotencyRecord | undefined> {
    const root = await this.#redis.get(idempotencyPointerKey(this.#prefix, keyDigest));
    if (root === null) return undefined;
    let rootId: ProcessId;
    try {
      rootId = ProcessId.parse(root);
    } catch {
      return undefined;
    }
    const text = await this.#committer.readRecord(rootId, idempotencyRecordSuffix);
    if (text === undefined) return undefined;
    const record = decodeRecord(text);
    return record?.keyDigest === keyDigest ? record : undefined;
  }
}
