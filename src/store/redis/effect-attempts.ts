import type { RedisClient } from './connection.js';
import {
  attemptKey,
  attemptKeyPrefix,
  checkKeyPrefix,
  currentClaimsKey,
  defaultKeyPrefix,
  dispatchPermitSuffix,
  effectInboxKey,
  executionsKey,
  headKey,
  neverClaimsKey,
  recordKey,
  settledEffectsKey,
  transportChannel,
} from './keys.js';
import { runScript } from './scripts.js';

/**
 * The effect transport's evidence in Redis (lua/transport/): which worker claimed an attempt (checked
 * against the dispatch permit the head's boundary wrote, see dispatch-permits.ts), its lease, and the
 * settlement it delivered to the effect's inbox. Every key is under
 * the tree's hash tag, so each check is one atomic script in the tree's slot. This is evidence for
 * the transport, never the record: the tree head stays the only record of an Effect's outcome.
 */

export type ReplayPolicyText = 'never' | 'same_identity';

export interface AttemptRef {
  readonly rootId: string;
  readonly attemptId: string;
  readonly effectId: string;
}

/** What a worker asks to claim: the attempt as its job names it. */
export interface ClaimRequest extends AttemptRef {
  readonly incarnationId: string;
  /** The worker's own dispatcher's answer for the effect. */
  readonly replayPolicy: ReplayPolicyText;
  readonly token: string;
  readonly workerId: string;
  readonly leaseMs: number;
}

export type ClaimRefusal = 'fenced' | 'taken' | 'unpermitted' | 'revoked' | 'settled' | 'never_claimed' | 'running';

export type ClaimResult = { readonly claimed: true } | { readonly claimed: false; readonly reason: ClaimRefusal };

/**
 * What the owner asks of an attempt: `look`, or decide what its own clock decided — `revoke` (the
 * claim window passed) or `expire` (the dispatch deadline passed).
 */
export type InspectMode = 'look' | 'revoke' | 'expire';

/** What the owner sees of an attempt; `waitMs` bounds how long nothing can change by time alone. */
export type AttemptView =
  | { readonly state: 'settled'; readonly json: string }
  | { readonly state: 'claimed'; readonly waitMs: number }
  | { readonly state: 'waiting' | 'unclaimed' | 'expired' | 'lapsed' | 'settling' };

/** What earlier attempts of an effect left (asked before a restored or replayed dispatch). */
export type PriorAttempt =
  | { readonly kind: 'adopt'; readonly attemptId: string; readonly json: string }
  | { readonly kind: 'running'; readonly attemptId: string; readonly waitMs: number }
  | { readonly kind: 'none' };

export interface EffectAttemptsOptions {
  readonly redis: RedisClient;
  readonly keyPrefix?: string;
  /** How long attempt records and inbox entries are kept (default one day). */
  readonly retentionMs?: number;
}

const claimRefusals: Readonly<Record<string, ClaimRefusal>> = {
  '-2': 'fenced',
  '-3': 'taken',
  '-4': 'unpermitted',
  '-5': 'revoked',
  '-6': 'settled',
  '-7': 'never_claimed',
  '-8': 'running',
};

/**
 * The longest inbox entry a settlement announcement carries (UTF-16 units, a bound on what every
 * subscribed node receives): with it, the awaiting owner reads the settlement without a round trip.
 */
export const inlineSettlementLimit = 4096;

/** A settlement announcement: which attempt, and its inbox entry when it was small enough to travel. */
export interface SettledMessage {
  readonly rootId: string;
  readonly attemptId: string;
  readonly json: string | undefined;
}

export function parseSettledMessage(message: string): SettledMessage | undefined {
  const first = message.indexOf(' ');
  if (first <= 0) return undefined;
  const second = message.indexOf(' ', first + 1);
  const rootId = message.slice(0, first);
  if (second < 0) return { rootId, attemptId: message.slice(first + 1), json: undefined };
  return { rootId, attemptId: message.slice(first + 1, second), json: message.slice(second + 1) };
}

export class RedisEffectAttempts {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #retentionMs: string;

  constructor(options: EffectAttemptsOptions) {
    this.#redis = options.redis;
    this.#prefix = checkKeyPrefix(options.keyPrefix ?? defaultKeyPrefix);
    this.#retentionMs = String(options.retentionMs ?? 86_400_000);
  }

  /**
   * The channel settlements are announced on: `<root> <attempt>`, followed by ` <inbox entry>` when
   * the entry is at most {@link inlineSettlementLimit} long (read it with {@link parseSettledMessage}).
   */
  get settledChannel(): string {
    return transportChannel(this.#prefix, 'settled');
  }

  /** The channel cancellations are announced on (message: `<root> <attempt>`). */
  get cancelChannel(): string {
    return transportChannel(this.#prefix, 'cancel');
  }

  /** A worker's claim (claimAttempt.lua): granted, or why not — a refusal wrote nothing. */
  async claim(request: ClaimRequest): Promise<ClaimResult> {
    const { rootId, attemptId, effectId } = request;
    const p = this.#prefix;
    const reply = (await runScript(
      this.#redis,
      'claimAttempt',
      [
        attemptKey(p, rootId, attemptId),
        headKey(p, rootId),
        recordKey(p, rootId, dispatchPermitSuffix(effectId)),
        neverClaimsKey(p, rootId),
        settledEffectsKey(p, rootId),
        executionsKey(p, rootId),
        currentClaimsKey(p, rootId),
      ],
      [attemptId, request.token, request.workerId, String(request.leaseMs), request.incarnationId, effectId, request.replayPolicy, attemptKeyPrefix(p, rootId), this.#retentionMs],
    )) as number[];
    if (reply[0] === 1) return { claimed: true };
    const reason = claimRefusals[String(reply[0])];
    if (reason === undefined) throw new Error(`claimAttempt: unexpected reply ${JSON.stringify(reply)}`);
    return { claimed: false, reason };
  }

  /** The claimant's heartbeat: whether it still holds the claim, and whether the owner canceled. */
  async renew(attempt: AttemptRef, token: string, leaseMs: number): Promise<{ held: boolean; canceled: boolean }> {
    const reply = (await runScript(this.#redis, 'renewClaim', [attemptKey(this.#prefix, attempt.rootId, attempt.attemptId)], [token, String(leaseMs)])) as number[];
    return { held: reply[0] === 1, canceled: reply[1] === 1 };
  }

  /** Delivers `json` to the effect's inbox; false when the claim is no longer held (nothing written). */
  async settle(attempt: AttemptRef, token: string, json: string, definite: boolean): Promise<boolean> {
    const { rootId, attemptId, effectId } = attempt;
    const reply = await runScript(
      this.#redis,
      'settleAttempt',
      [attemptKey(this.#prefix, rootId, attemptId), effectInboxKey(this.#prefix, rootId, effectId), settledEffectsKey(this.#prefix, rootId)],
      [attemptId, token, json, definite ? '1' : '0', this.#retentionMs, this.settledChannel, `${rootId} ${attemptId}`, json.length <= inlineSettlementLimit ? '1' : '0'],
    );
    return reply === 1;
  }

  async inspect(attempt: AttemptRef, mode: InspectMode = 'look'): Promise<AttemptView> {
    const { rootId, attemptId, effectId } = attempt;
    const reply = (await runScript(
      this.#redis,
      'inspectAttempt',
      [attemptKey(this.#prefix, rootId, attemptId), effectInboxKey(this.#prefix, rootId, effectId)],
      [attemptId, mode, this.#retentionMs],
    )) as [string, (string | number)?];
    const [state, detail] = reply;
    if (state === 'settled') return { state, json: String(detail) };
    if (state === 'claimed') return { state, waitMs: Number(detail) };
    if (state === 'waiting' || state === 'unclaimed' || state === 'expired' || state === 'lapsed') return { state };
    // `settled` state without an inbox entry: the inbox was consumed or never written — a doubt.
    return { state: 'settling' };
  }

  /** What earlier attempts of `effectId` left: a definite settlement to adopt, or a live claim to wait for. */
  async prior(rootId: string, effectId: string): Promise<PriorAttempt> {
    const p = this.#prefix;
    const reply = (await runScript(
      this.#redis,
      'priorAttempt',
      [settledEffectsKey(p, rootId), currentClaimsKey(p, rootId), effectInboxKey(p, rootId, effectId)],
      [effectId, attemptKeyPrefix(p, rootId)],
    )) as [string, string?, (string | number)?];
    if (reply[0] === 'adopt') return { kind: 'adopt', attemptId: String(reply[1]), json: String(reply[2]) };
    if (reply[0] === 'running') return { kind: 'running', attemptId: String(reply[1]), waitMs: Number(reply[2]) };
    return { kind: 'none' };
  }

  /**
   * Raises the attempt's durable cancel flag and notifies the workers (`flagged`), or revokes an
   * attempt nobody claimed yet (`revoked`: it never ran and never will).
   */
  async cancel(attempt: AttemptRef): Promise<'flagged' | 'revoked'> {
    const reply = await runScript(this.#redis, 'cancelAttempt', [attemptKey(this.#prefix, attempt.rootId, attempt.attemptId)], [
      this.cancelChannel,
      `${attempt.rootId} ${attempt.attemptId}`,
      this.#retentionMs,
    ]);
    return reply === 1 ? 'flagged' : 'revoked';
  }

  /** An effect's inbox entries by attempt (diagnostics and tests). */
  async inbox(rootId: string, effectId: string): Promise<Record<string, string>> {
    return this.#redis.hgetall(effectInboxKey(this.#prefix, rootId, effectId));
  }

  /** The effect's dispatch permit: an incarnation id, `settled`, or null (diagnostics and tests). */
  async permit(rootId: string, effectId: string): Promise<string | null> {
    return this.#redis.get(recordKey(this.#prefix, rootId, dispatchPermitSuffix(effectId)));
  }

  /** Executions started for an effect (counted when a claim is granted). */
  async executions(rootId: string, effectId: string): Promise<number> {
    return Number((await this.#redis.hget(executionsKey(this.#prefix, rootId), effectId)) ?? 0);
  }

  /** The attempt record's fields (diagnostics and tests: which worker claimed it). */
  async record(attempt: AttemptRef): Promise<Record<string, string>> {
    return this.#redis.hgetall(attemptKey(this.#prefix, attempt.rootId, attempt.attemptId));
  }
}
