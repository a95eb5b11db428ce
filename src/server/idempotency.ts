import { createHash } from 'node:crypto';
import { encodeCanonical } from '../kernel/index.js';
import { invalidRequest } from '../errors.js';
import type { IdempotencyIntent } from '../store/idempotency.js';

/**
 * The Host's side of idempotent starts: the `Idempotency-Key` and request digests a start is
 * recognised by, and how a start's intent travels to its commit (`hostValues[idempotencyHostValue]`,
 * turned into the record by the host committer). The records, reservations and pointers themselves
 * live in the stores (`src/store/idempotency.ts`).
 */

/** The `hostValues` member a start uses for its idempotency intent. */
export const idempotencyHostValue = 'idempotency';

const keyPattern = /^[\x21-\x7e]{1,255}$/;
const tokenPattern = /^[0-9a-f-]{36}$/;

/**
 * Checks an `Idempotency-Key` (1–255 visible ASCII characters) and returns its SHA-256 hex, scoped by
 * tenant when there is one (one tenant's key never finds another's start; a NUL, which no key holds,
 * separates them). Without a tenant the key alone is digested, as it always was.
 */
export function idempotencyKeyDigest(key: string, tenant?: string): string {
  if (typeof key !== 'string' || !keyPattern.test(key)) {
    throw invalidRequest('Idempotency-Key must be 1-255 visible ASCII characters');
  }
  return createHash('sha256').update(tenant === undefined ? key : `${tenant}\u0000${key}`, 'utf8').digest('hex');
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
