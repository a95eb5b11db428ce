import type { Redis } from 'ioredis';
import {
  attemptKey,
  checkKeyPrefix,
  defaultKeyPrefix,
  executionsKey,
  headKey,
  inboxKey,
  neverClaimsKey,
  settledEffectsKey,
  transportChannel,
  workerRegistryKey,
} from './keys.js';
import { runScript } from './scripts.js';

/**
 * The effect transport's evidence in Redis (lua/transport/): which attempt the tree's owner offered,
 * which worker claimed it, and the settlement it delivered to the tree's inbox. Every key is under
 * the tree's hash tag, so each check is one atomic script in the tree's slot. This is evidence for
 * the transport, never the record: the tree head stays the only record of an Effect's outcome.
 */

export type ReplayPolicyText = 'never' | 'same_identity';

export interface AttemptRef {
  readonly rootId: string;
  readonly attemptId: string;
}

export interface OfferOptions extends AttemptRef {
  readonly incarnationId: string;
  readonly effectId: string;
  readonly replayPolicy: ReplayPolicyText;
  readonly claimWindowMs: number;
  readonly deadlineMs: number;
}

export type OfferResult = 'offered' | 'fenced' | 'duplicate';

export type ClaimResult =
  | { readonly claimed: true; readonly canceled: boolean }
  | { readonly claimed: false; readonly reason: 'missing' | 'fenced' | 'taken' | 'unclaimed' | 'settled' | 'never_claimed' };

/** What the owner sees of an attempt; `waitMs` bounds how long nothing can change by time alone. */
export type AttemptView =
  | { readonly state: 'settled'; readonly json: string }
  | { readonly state: 'offered' | 'claimed'; readonly waitMs: number }
  | { readonly state: 'unclaimed' | 'expired' | 'lapsed' | 'missing' | 'settling' };

export interface EffectAttemptsOptions {
  readonly redis: Redis;
  readonly keyPrefix?: string;
  /** How long attempt records and inbox entries are kept (default one day). */
  readonly retentionMs?: number;
}

const claimRefusals: Readonly<Record<string, Extract<ClaimResult, { claimed: false }>['reason']>> = {
  '-1': 'missing',
  '-2': 'fenced',
  '-3': 'taken',
  '-5': 'unclaimed',
  '-6': 'settled',
  '-7': 'never_claimed',
};

export class RedisEffectAttempts {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #retentionMs: string;

  constructor(options: EffectAttemptsOptions) {
    this.#redis = options.redis;
    this.#prefix = checkKeyPrefix(options.keyPrefix ?? defaultKeyPrefix);
    this.#retentionMs = String(options.retentionMs ?? 86_400_000);
  }

  /** The channel settlements are announced on (message: `<root> <attempt>`). */
  get settledChannel(): string {
    return transportChannel(this.#prefix, 'settled');
  }

  /** The channel cancellations are announced on (message: `<root> <attempt>`). */
  get cancelChannel(): string {
    return transportChannel(this.#prefix, 'cancel');
  }

  async offer(options: OfferOptions): Promise<OfferResult> {
    const reply = await runScript(
      this.#redis,
      'offerAttempt',
      [attemptKey(this.#prefix, options.rootId, options.attemptId), headKey(this.#prefix, options.rootId)],
      [options.incarnationId, options.effectId, options.replayPolicy, String(options.claimWindowMs), String(options.deadlineMs), this.#retentionMs],
    );
    if (reply === 1) return 'offered';
    if (reply === -2) return 'fenced';
    if (reply === -3) return 'duplicate';
    throw new Error(`offerAttempt: unexpected reply ${JSON.stringify(reply)}`);
  }

  async claim(attempt: AttemptRef, token: string, workerId: string, leaseMs: number): Promise<ClaimResult> {
    const { rootId, attemptId } = attempt;
    const reply = (await runScript(
      this.#redis,
      'claimAttempt',
      [
        attemptKey(this.#prefix, rootId, attemptId),
        headKey(this.#prefix, rootId),
        neverClaimsKey(this.#prefix, rootId),
        settledEffectsKey(this.#prefix, rootId),
        executionsKey(this.#prefix, rootId),
      ],
      [attemptId, token, workerId, String(leaseMs)],
    )) as number[];
    if (reply[0] === 1) return { claimed: true, canceled: reply[1] === 1 };
    const reason = claimRefusals[String(reply[0])];
    if (reason === undefined) throw new Error(`claimAttempt: unexpected reply ${JSON.stringify(reply)}`);
    return { claimed: false, reason };
  }

  /** The claimant's heartbeat: whether it still holds the claim, and whether the owner canceled. */
  async renew(attempt: AttemptRef, token: string, leaseMs: number): Promise<{ held: boolean; canceled: boolean }> {
    const reply = (await runScript(this.#redis, 'renewClaim', [attemptKey(this.#prefix, attempt.rootId, attempt.attemptId)], [token, String(leaseMs)])) as number[];
    return { held: reply[0] === 1, canceled: reply[1] === 1 };
  }

  /** Delivers `json` to the inbox; false when the claim is no longer held (nothing written). */
  async settle(attempt: AttemptRef, token: string, json: string, definite: boolean): Promise<boolean> {
    const { rootId, attemptId } = attempt;
    const reply = await runScript(
      this.#redis,
      'settleAttempt',
      [attemptKey(this.#prefix, rootId, attemptId), inboxKey(this.#prefix, rootId), settledEffectsKey(this.#prefix, rootId)],
      [attemptId, token, json, definite ? '1' : '0', this.#retentionMs, this.settledChannel, `${rootId} ${attemptId}`],
    );
    return reply === 1;
  }

  async inspect(attempt: AttemptRef): Promise<AttemptView> {
    const { rootId, attemptId } = attempt;
    const reply = (await runScript(this.#redis, 'inspectAttempt', [attemptKey(this.#prefix, rootId, attemptId), inboxKey(this.#prefix, rootId)], [attemptId])) as [
      string,
      (string | number)?,
    ];
    const [state, detail] = reply;
    if (state === 'settled') return { state, json: String(detail) };
    if (state === 'offered' || state === 'claimed') return { state, waitMs: Number(detail) };
    if (state === 'unclaimed' || state === 'expired' || state === 'lapsed' || state === 'missing') return { state };
    // `settled` state without an inbox entry cannot outlive the settle script; anything else is a doubt.
    return { state: 'settling' };
  }

  /** Raises the attempt's durable cancel flag and notifies the workers; false when there is no attempt. */
  async cancel(attempt: AttemptRef): Promise<boolean> {
    const reply = await runScript(this.#redis, 'cancelAttempt', [attemptKey(this.#prefix, attempt.rootId, attempt.attemptId)], [
      this.cancelChannel,
      `${attempt.rootId} ${attempt.attemptId}`,
    ]);
    return reply === 1;
  }

  /** Executions started for an effect (counted when a claim is granted). */
  async executions(rootId: string, effectId: string): Promise<number> {
    return Number((await this.#redis.hget(executionsKey(this.#prefix, rootId), effectId)) ?? 0);
  }

  /** The attempt record's fields (diagnostics and tests: which worker claimed it). */
  async record(attempt: AttemptRef): Promise<Record<string, string>> {
    return this.#redis.hgetall(attemptKey(this.#prefix, attempt.rootId, attempt.attemptId));
  }

  /** Worker registry: `workerId` serves `refs` until `ttlMs` from now (a heartbeat). */
  async heartbeat(workerId: string, refs: readonly string[], ttlMs: number): Promise<void> {
    const key = workerRegistryKey(this.#prefix);
    const now = Date.now();
    await this.#redis.multi().zadd(key, now + ttlMs, `${workerId} ${refs.join(',')}`).zremrangebyscore(key, '-inf', now).exec();
  }

  /** Removes a worker from the registry (graceful shutdown). */
  async leave(workerId: string, refs: readonly string[]): Promise<void> {
    await this.#redis.zrem(workerRegistryKey(this.#prefix), `${workerId} ${refs.join(',')}`);
  }

  /** Live workers per DeploymentRef digest text. */
  async liveWorkers(): Promise<Map<string, number>> {
    const members = await this.#redis.zrangebyscore(workerRegistryKey(this.#prefix), Date.now(), '+inf');
    const counts = new Map<string, number>();
    for (const member of members) {
      for (const ref of member.split(' ')[1]?.split(',') ?? []) counts.set(ref, (counts.get(ref) ?? 0) + 1);
    }
    return counts;
  }
}
