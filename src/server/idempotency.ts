import type { Redis } from 'ioredis';
import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeCanonical } from '../kernel/canonical-json.js';
import { ProcessId } from '../kernel/identity.js';
import { headKey, purgedKey } from '../store/redis/keys.js';
import type { RedisTreeCommitter } from '../store/redis/redis-committer.js';
import { invalidRequest, ServerErrorCode, serverError } from './errors.js';
import { runHostScript } from './redis-scripts.js';

/**
 * Idempotent starts. A start carrying an `Idempotency-Key` first claims the key
 * ({@link IdempotencyStore.claim}): either an earlier start already recorded a process under it, or
 * this start now holds the key's reservation and starts, passing `hostValues[idempotencyHostValue]`
 * ({@link IdempotencyIntent}) to `Engine.start`; the server's committer decorator turns it into the
 * record of the start commit. The record is the truth; everything else only finds it.
 *
 * - Redis mode: the record `<prefix>:{<root>}:record:idempotency` is written by the start commit's own
 *   Lua script (no record without the head, no head without the record). The pointer
 *   `<prefix>:idempotency:<sha256(key)>` makes the key at-most-once across every server sharing the
 *   Redis — see {@link RedisIdempotencyStore} for its states.
 * - Embedded mode: an in-memory map, set right after the synchronous memory commit; same-key starts
 *   inside the one server run one after the other (EngineHost), so a claim is a lookup.
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
  /**
   * Redis mode: the reservation this start holds on the key ({@link RedisIdempotencyStore.claim}). The
   * committer moves the pointer to `committing` (only while it is still this reservation) before the
   * start commit, and to the root once it landed. Without one (a committer used directly), the pointer
   * is simply set to the root before the commit.
   */
  readonly token?: string;
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
  const intent = { keyDigest: value.keyDigest, requestDigest: value.requestDigest, ttlMs: value.ttlMs };
  return typeof value.token === 'string' && tokenPattern.test(value.token) ? { ...intent, token: value.token } : intent;
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

/** What a claim found: an earlier start's record, or the key is now reserved for this start. */
export type IdempotencyClaim =
  | { readonly kind: 'existing'; readonly record: IdempotencyRecord }
  | { readonly kind: 'reserved'; readonly token: string | undefined };

/** Where records are looked up and keys reserved. */
export interface IdempotencyStore {
  lookup(keyDigest: string): Promise<IdempotencyRecord | undefined>;
  /**
   * The record of the start that already used the key, or a reservation for this start: at most one
   * start holds a key at a time. While another start holds it without a record yet, waits (bounded);
   * still unfinished then: `idempotency_key_in_progress`.
   */
  claim(keyDigest: string, signal?: AbortSignal): Promise<IdempotencyClaim>;
  /** Gives a reservation up after its start failed (only while it is still this start's). */
  release(keyDigest: string, token: string | undefined): Promise<void>;
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

  /** A lookup: same-key starts never overlap inside one server (the Host runs them one after the other). */
  async claim(keyDigest: string): Promise<IdempotencyClaim> {
    const record = await this.lookup(keyDigest);
    return record === undefined ? { kind: 'reserved', token: undefined } : { kind: 'existing', record };
  }

  async release(): Promise<void> {}

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

const tokenPattern = /^[0-9a-f-]{36}$/;

/** The states of a Redis idempotency pointer (see {@link RedisIdempotencyStore}). */
export type PointerState =
  | { readonly kind: 'root'; readonly root: string }
  | { readonly kind: 'reserved'; readonly token: string }
  | { readonly kind: 'committing'; readonly token: string; readonly sinceMs: number; readonly root: string }
  | { readonly kind: 'unknown' };

/** `reserved:<token>`: a start holds the key and has not reached its commit yet. */
export function reservedValue(token: string): string {
  return `reserved:${token}`;
}

export function parsePointer(value: string): PointerState {
  if (value.startsWith('process:')) return { kind: 'root', root: value };
  const reserved = /^reserved:([0-9a-f-]{36})$/.exec(value);
  if (reserved !== null) return { kind: 'reserved', token: reserved[1] as string };
  const committing = /^committing:([0-9a-f-]{36}):(\d{1,16}):(process:.+)$/.exec(value);
  if (committing !== null) {
    return { kind: 'committing', token: committing[1] as string, sinceMs: Number(committing[2]), root: committing[3] as string };
  }
  return { kind: 'unknown' };
}

export interface RedisIdempotencyOptions {
  readonly redis: Redis;
  readonly keyPrefix: string;
  readonly committer: RedisTreeCommitter;
  /** How long the pointer and records live (`SCOPE_IDEMPOTENCY_TTL_MS`, default a day); also the fence tombstone's TTL. */
  readonly ttlMs?: number;
  /** TTL of a reservation until its start reaches the commit (default 10 000 ms). */
  readonly reserveMs?: number;
  /**
   * How long a start may stay `committing` before a waiting start presumes its server gone, fences the
   * root and takes the key over (default 30 000 ms; far above any commit deadline).
   */
  readonly staleMs?: number;
  /** How long a claim waits for another start holding the key (default 5 000 ms). */
  readonly waitMs?: number;
}

export const idempotencyDefaults = { ttlMs: 86_400_000, reserveMs: 10_000, staleMs: 30_000, waitMs: 5_000 } as const;

function inProgress(): Error {
  return serverError(ServerErrorCode.idempotencyKeyInProgress, 'another start with this Idempotency-Key is still unfinished; retry shortly');
}

/**
 * Redis mode: the pointer `<prefix>:idempotency:<sha256(key)>` makes a key at-most-once across every
 * server sharing the Redis; the record under the root stays the truth. Pointer states:
 *
 * - `reserved:<token>` (TTL `reserveMs`): `SET NX` by the one start that claimed the key. Claims that
 *   find it wait (polling with backoff, at most `waitMs`), then answer `idempotency_key_in_progress`;
 *   a reservation whose server died expires, and the key is free again.
 * - `committing:<token>:<ms>:<root>` (TTL as the record): set by the committer right before the start
 *   commit, only while the reservation is still this start's (else the start aborts with
 *   `idempotency_key_in_progress`); `<ms>` is the Redis clock. A claim that finds it reads the record
 *   under `<root>`: there → that process; not yet → waits; older than `staleMs` → the start's server
 *   is presumed gone: the claim fences the root (the store's purge tombstone, written only while the
 *   root has no head, refuses its start commit for good), then takes the key over.
 * - `<root>`: the start commit landed (moved there after it, by the committer or by a claim that found
 *   the record). A pointer to a root without a record (legacy, or expired) is free to take over.
 *
 * Every move is a compare-and-set script on the pointer; a failed start gives its reservation up
 * ({@link release}): deleted while still `reserved` by it, or — once `committing` — after fencing its
 * root (if the commit landed after all, the pointer moves to the root instead).
 */
export class RedisIdempotencyStore implements IdempotencyStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #committer: RedisTreeCommitter;
  readonly #ttlMs: number;
  readonly #reserveMs: number;
  readonly #staleMs: number;
  readonly #waitMs: number;

  constructor(options: RedisIdempotencyOptions) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#committer = options.committer;
    this.#ttlMs = options.ttlMs ?? idempotencyDefaults.ttlMs;
    this.#reserveMs = options.reserveMs ?? idempotencyDefaults.reserveMs;
    this.#staleMs = options.staleMs ?? idempotencyDefaults.staleMs;
    this.#waitMs = options.waitMs ?? idempotencyDefaults.waitMs;
    for (const [name, value] of [['ttlMs', this.#ttlMs], ['reserveMs', this.#reserveMs], ['staleMs', this.#staleMs]] as const) {
      if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`${name} must be a positive integer, got ${String(value)}`);
    }
    if (!Number.isSafeInteger(this.#waitMs) || this.#waitMs < 0) throw new TypeError(`waitMs must be a non-negative integer, got ${String(this.#waitMs)}`);
  }

  async lookup(keyDigest: string): Promise<IdempotencyRecord | undefined> {
    const value = await this.#redis.get(idempotencyPointerKey(this.#prefix, keyDigest));
    if (value === null) return undefined;
    const state = parsePointer(value);
    return state.kind === 'root' || state.kind === 'committing' ? this.#record(state.root, keyDigest) : undefined;
  }

  async claim(keyDigest: string, signal?: AbortSignal): Promise<IdempotencyClaim> {
    const key = idempotencyPointerKey(this.#prefix, keyDigest);
    const token = randomUUID();
    const mine = reservedValue(token);
    const deadline = performance.now() + this.#waitMs;
    let delayMs = 10;
    /** Roots this claim fenced and found committed: if their record is gone (expired), the key is free. */
    const settled = new Set<string>();
    for (;;) {
      signal?.throwIfAborted();
      const [taken, value, nowMs] = (await runHostScript(this.#redis, 'idempotencyClaim', [key], [mine, this.#reserveMs])) as [number, string, number];
      if (taken === 1) return { kind: 'reserved', token };
      const state = parsePointer(value);
      if (state.kind === 'root' || state.kind === 'committing') {
        const record = await this.#record(state.root, keyDigest);
        if (record !== undefined) {
          // The start committed; finish its last step for it if its server did not.
          if (state.kind === 'committing') await this.#replace(key, value, state.root, this.#ttlMs);
          return { kind: 'existing', record };
        }
        if (state.kind !== 'committing' || nowMs - state.sinceMs > this.#staleMs) {
          if (state.kind === 'committing' && !settled.has(state.root)) {
            settled.add(state.root);
            // Its server is presumed gone. It landed after all? The next round finds the record.
            if ((await this.#fence(state.root)) === 'committed') continue;
          }
          // A root without its record (expired, or a legacy pointer of a start that never committed), or a
          // fenced start that never will commit: the key is free.
          if (await this.#replace(key, value, mine, this.#reserveMs)) return { kind: 'reserved', token };
          continue;
        }
        // Its commit is in flight: wait for it.
      } else if (state.kind === 'unknown' && value !== '') {
        if (await this.#replace(key, value, mine, this.#reserveMs)) return { kind: 'reserved', token };
        continue;
      } else if (value === '') {
        continue; // released or expired between the two commands of the script: claim again
      }
      // Held by a start that has not committed yet.
      if (performance.now() + delayMs > deadline) throw inProgress();
      await sleep(delayMs);
      delayMs = Math.min(delayMs * 2, 200);
    }
  }

  async release(keyDigest: string, token: string | undefined): Promise<void> {
    if (token === undefined) return;
    const key = idempotencyPointerKey(this.#prefix, keyDigest);
    const value = await this.#redis.get(key);
    if (value === null) return;
    const state = parsePointer(value);
    if (state.kind === 'reserved' && state.token === token) {
      await runHostScript(this.#redis, 'idempotencyRelease', [key], [value]);
    } else if (state.kind === 'committing' && state.token === token) {
      // The start commit may have landed although the start failed (a lost acknowledgement): settle it first.
      if ((await this.#fence(state.root)) === 'committed') await this.#replace(key, value, state.root, this.#ttlMs);
      else await runHostScript(this.#redis, 'idempotencyRelease', [key], [value]);
    }
  }

  /** The record under `root` for this key digest, if the start commit wrote it. */
  async #record(root: string, keyDigest: string): Promise<IdempotencyRecord | undefined> {
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

  async #replace(key: string, expected: string, next: string, ttlMs: number): Promise<boolean> {
    return (await runHostScript(this.#redis, 'idempotencyReplace', [key], [expected, next, ttlMs])) === 1;
  }

  /** Settles a root's start commit: `committed` (it has a head, or had one), or `fenced` (it never will). */
  async #fence(root: string): Promise<'committed' | 'fenced'> {
    const keys = [headKey(this.#prefix, root), purgedKey(this.#prefix, root)];
    const reply = await runHostScript(this.#redis, 'fenceStart', keys, ['fenced by an idempotent start', this.#ttlMs]);
    return reply === 1 ? 'committed' : 'fenced';
  }
}
