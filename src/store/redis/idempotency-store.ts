import type { RedisClient } from './connection.js';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { codedError, HostErrorCode } from '../../errors.js';
import { ProcessId } from '../../kernel/index.js';
import {
  decodeRecord,
  idempotencyRecordSuffix,
  type IdempotencyClaim,
  type IdempotencyIntent,
  type IdempotencyRecord,
  type IdempotencyStore,
} from '../idempotency.js';
import { committerUnavailable, describeReply, mapFlagReply } from './errors.js';
import { headKey, idempotencyPointerKey, purgedKey } from './keys.js';
import type { RedisTreeCommitter } from './redis-committer.js';
import { runScript } from './scripts.js';

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
  readonly redis: RedisClient;
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
  return codedError(HostErrorCode.idempotencyKeyInProgress, 'another start with this Idempotency-Key is still unfinished; retry shortly');
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
  readonly #redis: RedisClient;
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
      const [taken, value, nowMs] = readClaimReply(await runScript(this.#redis, 'idempotencyClaim', [key], [mine, String(this.#reserveMs)]));
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
      mapFlagReply('idempotency release', await runScript(this.#redis, 'idempotencyRelease', [key], [value]));
    } else if (state.kind === 'committing' && state.token === token) {
      // The start commit may have landed although the start failed (a lost acknowledgement): settle it first.
      if ((await this.#fence(state.root)) === 'committed') await this.#replace(key, value, state.root, this.#ttlMs);
      else mapFlagReply('idempotency release', await runScript(this.#redis, 'idempotencyRelease', [key], [value]));
    }
  }

  /**
   * Right before a start commit: the pointer names the root the commit is about to create, only while
   * the reservation is still this start's (false: another start took the key over). An intent without a
   * token (a committer used directly, not through `claim`) simply points the key at the root.
   */
  async markCommitting(intent: IdempotencyIntent, root: string): Promise<boolean> {
    const key = idempotencyPointerKey(this.#prefix, intent.keyDigest);
    if (intent.token === undefined) {
      await this.#redis.set(key, root, 'PX', intent.ttlMs);
      return true;
    }
    return mapFlagReply('idempotency committing', await runScript(this.#redis, 'idempotencyCommitting', [key], [intent.token, root, String(intent.ttlMs)]));
  }

  /**
   * After the start commit landed with its record: the pointer names the root alone. A claim that finds
   * the record through the `committing` pointer finishes this step itself, so a failure here is harmless.
   */
  async promote(intent: IdempotencyIntent, root: string): Promise<void> {
    if (intent.token === undefined) return;
    const key = idempotencyPointerKey(this.#prefix, intent.keyDigest);
    mapFlagReply('idempotency promote', await runScript(this.#redis, 'idempotencyPromote', [key], [intent.token, root, String(intent.ttlMs)]));
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
    return mapFlagReply('idempotency replace', await runScript(this.#redis, 'idempotencyReplace', [key], [expected, next, String(ttlMs)]));
  }

  /** Settles a root's start commit: `committed` (it has a head, or had one), or `fenced` (it never will). */
  async #fence(root: string): Promise<'committed' | 'fenced'> {
    const keys = [headKey(this.#prefix, root), purgedKey(this.#prefix, root)];
    const committed = mapFlagReply('start fence', await runScript(this.#redis, 'fenceStart', keys, ['fenced by an idempotent start', String(this.#ttlMs)]));
    return committed ? 'committed' : 'fenced';
  }
}

/** The claim script's reply: `{taken, value, nowMs}` (idempotencyClaim-1.lua). */
function readClaimReply(reply: unknown): [number, string, number] {
  if (Array.isArray(reply) && reply.length === 3 && (reply[0] === 0 || reply[0] === 1) && typeof reply[1] === 'string' && typeof reply[2] === 'number') {
    return reply as [number, string, number];
  }
  throw committerUnavailable('idempotency claim', `unexpected reply ${describeReply(reply)}`);
}
