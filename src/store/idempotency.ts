/**
 * Idempotent starts, as the stores keep them. A start carrying an `Idempotency-Key` first claims the
 * key ({@link IdempotencyStore.claim}): either an earlier start already recorded a process under it,
 * or this start now holds the key's reservation and starts; its start commit writes the record
 * ({@link IdempotencyRecord}) in the same atomic step as the head. The record is the truth;
 * everything else only finds it. Memory: `memory-idempotency.ts`; Redis: `redis/idempotency-store.ts`.
 */

/** The record suffix under the root (`<prefix>:{<root>}:record:<suffix>` in Redis). */
export const idempotencyRecordSuffix = 'idempotency';

/** What a start asks its commit to record. */
export interface IdempotencyIntent {
  readonly keyDigest: string;
  readonly requestDigest: string;
  readonly ttlMs: number;
  /**
   * Redis mode: the reservation this start holds on the key (`RedisIdempotencyStore.claim`). The
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
