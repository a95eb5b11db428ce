import { randomBytes } from 'node:crypto';

/**
 * Where host-owned gates live (src/server/gates/host-gates.ts): gates an external system opens with
 * `POST /v1/gates`, bound to no wait. The store decides the three races a gate has — the cap at
 * creation, the first answer, the close — each atomically, and tells waiters when a gate moved.
 *
 * Redis: `<prefix>:{gate:<id>}:record` and `…:answer` (redis/host-gate-store.ts, Lua scripts in
 * redis/lua/gates/), the caps and the per-tenant index under `<prefix>:{gates}:…`; embedded: the maps
 * below. Times are milliseconds of the store's clock (Redis's `TIME` in Redis mode).
 */

export type HostGateKind = 'form' | 'open_url';
export type HostGateProvenance = 'human' | 'api';

/** What the opener asked for; fixed once the gate exists. */
export interface HostGateSpec {
  readonly id: string;
  readonly tenant: string;
  readonly kind: HostGateKind;
  readonly prompt: string | null;
  /** The answer schema as JSON text (`null`: any JSON value). */
  readonly answerSchema: string | null;
  readonly url: string | null;
  readonly actor: string | null;
  readonly requestId: string | null;
  /** Digest of the create request (a retry under the same request id must match it). */
  readonly requestDigest: string;
}

/** Who answered and when; the answer itself is kept apart, only while the gate is not closed. */
export interface HostGateAnswerMeta {
  readonly answeredAt: number;
  readonly provenance: HostGateProvenance;
  readonly actor: string | null;
  readonly requestId: string | null;
  /** sha256 of the answer's JSON text: what the log keeps of it after close. */
  readonly digest: string;
}

export interface HostGateRecord extends HostGateSpec {
  readonly createdAt: number;
  readonly expiresAt: number;
  /** `open` or `answered`; `closed` once closed (an expired gate keeps its stored state: readers compare `expiresAt`). */
  readonly state: 'open' | 'answered' | 'closed';
  readonly closedAt: number | null;
  readonly answerMeta: HostGateAnswerMeta | null;
  /** The answer's JSON text: present only while answered, not closed and not expired. */
  readonly answer: string | null;
  /** The one-time callback token was spent. */
  readonly tokenUsed: boolean;
}

export interface HostGateCaps {
  readonly perTenant: number;
  readonly cluster: number;
}

export type ReserveOutcome =
  | { readonly kind: 'reserved'; readonly createdAt: number; readonly expiresAt: number }
  /** The id was reserved before (same request id): its request digest and times. */
  | { readonly kind: 'existing'; readonly requestDigest: string; readonly createdAt: number; readonly expiresAt: number }
  | { readonly kind: 'capacity'; readonly scope: 'tenant' | 'cluster'; readonly retryAfterMs: number };

export interface AnswerInput {
  readonly answer: string;
  readonly digest: string;
  readonly provenance: HostGateProvenance;
  readonly actor: string | null;
  readonly requestId: string | null;
  /** Answered through the callback: the one-time token is spent with the answer, in one step. */
  readonly viaToken: boolean;
}

export type AnswerOutcome =
  | { readonly kind: 'answered' | 'same' | 'already' | 'closed' | 'expired' | 'token_used'; readonly record: HostGateRecord }
  | { readonly kind: 'missing' };

export interface HostGateStore {
  /** Counts the gate against both caps (expired and closed gates not counted) and indexes it, or refuses. */
  reserve(spec: { readonly id: string; readonly tenant: string; readonly requestDigest: string; readonly timeoutMs: number }, caps: HostGateCaps): Promise<ReserveOutcome>;
  /** Writes the record of a reserved gate unless it exists (a retry writes the identical record). */
  write(record: HostGateRecord): Promise<void>;
  read(id: string): Promise<HostGateRecord | undefined>;
  /** First answer wins; the outcome carries the record as it stands after the attempt. */
  answer(id: string, input: AnswerInput): Promise<AnswerOutcome>;
  /** Closes the gate (idempotent) and deletes its answer; undefined when there is no such gate. */
  close(id: string): Promise<HostGateRecord | undefined>;
  /** The tenant's gates still retained (open, answered, and closed ones for a while), any order. */
  list(tenant: string): Promise<HostGateRecord[]>;
  /** Calls `listener` when the gate is answered or closed; resolves once notifications will reach it. */
  watch(id: string, listener: () => void): Promise<() => void>;
  /** The store's clock (ms). */
  now(): number;
  /** The secret callback tokens are signed with: shared by every node of the store. */
  secret(): Promise<Buffer>;
  /** Stops notifications (shutdown). */
  shutdown(): Promise<void>;
}

/** How long a closed or expired gate's record (without its answer) stays readable. */
export const hostGateRetentionMs = 24 * 60 * 60 * 1000;

/** The cap refusal's wait: until the oldest counted gate expires, at most a minute (gates also close earlier). */
export function retryAfterOf(oldestExpiry: number | undefined, now: number): number {
  return Math.max(1_000, Math.min(60_000, (oldestExpiry ?? now) - now));
}

/** Embedded mode: one process, gates in memory, the same rules. */
export class MemoryHostGateStore implements HostGateStore {
  readonly #records = new Map<string, HostGateRecord>();
  readonly #reserved = new Map<string, { readonly tenant: string; readonly requestDigest: string; readonly createdAt: number; readonly expiresAt: number }>();
  readonly #listeners = new Map<string, Set<() => void>>();
  readonly #now: () => number;
  readonly #secret = randomBytes(32);

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  now(): number {
    return this.#now();
  }

  /** A process-lifetime secret: tokens die with the gates, which live in this process only. */
  async secret(): Promise<Buffer> {
    return this.#secret;
  }

  async shutdown(): Promise<void> {
    this.#listeners.clear();
  }

  async reserve(spec: { id: string; tenant: string; requestDigest: string; timeoutMs: number }, caps: HostGateCaps): Promise<ReserveOutcome> {
    const now = this.#now();
    this.#prune(now);
    const existing = this.#reserved.get(spec.id);
    if (existing !== undefined) return { kind: 'existing', requestDigest: existing.requestDigest, createdAt: existing.createdAt, expiresAt: existing.expiresAt };
    const counted = [...this.#reserved].filter(([id, entry]) => entry.expiresAt > now && this.#records.get(id)?.state !== 'closed');
    const tenants = counted.filter(([, entry]) => entry.tenant === spec.tenant);
    const oldest = (entries: typeof counted) => Math.min(...entries.map(([, entry]) => entry.expiresAt));
    if (tenants.length >= caps.perTenant) return { kind: 'capacity', scope: 'tenant', retryAfterMs: retryAfterOf(oldest(tenants), now) };
    if (counted.length >= caps.cluster) return { kind: 'capacity', scope: 'cluster', retryAfterMs: retryAfterOf(oldest(counted), now) };
    const entry = { tenant: spec.tenant, requestDigest: spec.requestDigest, createdAt: now, expiresAt: now + spec.timeoutMs };
    this.#reserved.set(spec.id, entry);
    return { kind: 'reserved', createdAt: entry.createdAt, expiresAt: entry.expiresAt };
  }

  async write(record: HostGateRecord): Promise<void> {
    if (!this.#records.has(record.id)) this.#records.set(record.id, record);
  }

  async read(id: string): Promise<HostGateRecord | undefined> {
    const now = this.#now();
    this.#prune(now);
    const record = this.#records.get(id);
    // The answer is kept only until the gate closes, and expiry closes it.
    return record !== undefined && record.answer !== null && record.expiresAt <= now ? this.#set({ ...record, answer: null }) : record;
  }

  async answer(id: string, input: AnswerInput): Promise<AnswerOutcome> {
    const record = await this.read(id);
    if (record === undefined) return { kind: 'missing' };
    const now = this.#now();
    if (input.viaToken && record.tokenUsed) return { kind: 'token_used', record };
    if (record.state === 'closed') return { kind: 'closed', record };
    if (record.expiresAt <= now) return { kind: 'expired', record };
    if (record.state === 'answered') {
      const same = !input.viaToken && input.requestId !== null && record.answerMeta?.requestId === input.requestId && record.answerMeta.digest === input.digest;
      return { kind: same ? 'same' : 'already', record };
    }
    const answered = this.#set({
      ...record,
      state: 'answered',
      answer: input.answer,
      tokenUsed: record.tokenUsed || input.viaToken,
      answerMeta: { answeredAt: now, provenance: input.provenance, actor: input.actor, requestId: input.requestId, digest: input.digest },
    });
    this.#notify(id);
    return { kind: 'answered', record: answered };
  }

  async close(id: string): Promise<HostGateRecord | undefined> {
    const record = await this.read(id);
    if (record === undefined) return undefined;
    if (record.state === 'closed') return record;
    const closed = this.#set({ ...record, state: 'closed', closedAt: this.#now(), answer: null });
    this.#notify(id);
    return closed;
  }

  async list(tenant: string): Promise<HostGateRecord[]> {
    this.#prune(this.#now());
    const records: HostGateRecord[] = [];
    for (const record of this.#records.values()) {
      if (record.tenant === tenant) records.push((await this.read(record.id)) as HostGateRecord);
    }
    return records;
  }

  async watch(id: string, listener: () => void): Promise<() => void> {
    const listeners = this.#listeners.get(id) ?? new Set();
    listeners.add(listener);
    this.#listeners.set(id, listeners);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.#listeners.get(id) === listeners) this.#listeners.delete(id);
    };
  }

  #set(record: HostGateRecord): HostGateRecord {
    this.#records.set(record.id, record);
    return record;
  }

  #notify(id: string): void {
    for (const listener of [...(this.#listeners.get(id) ?? [])]) listener();
  }

  /** Forgets gates past their retention (as Redis expires their keys). */
  #prune(now: number): void {
    for (const [id, entry] of this.#reserved) {
      const closedAt = this.#records.get(id)?.closedAt ?? null;
      const until = Math.min(entry.expiresAt, closedAt ?? Number.POSITIVE_INFINITY) + hostGateRetentionMs;
      if (until <= now) {
        this.#reserved.delete(id);
        this.#records.delete(id);
      }
    }
  }
}
