import { randomBytes } from 'node:crypto';
import type { AnswerInput, AnswerOutcome, HostGateCaps, HostGateRecord, HostGateSpec, HostGateStore, ReserveOutcome } from '../host-gates.js';
import { hostGateRetentionMs, retryAfterOf } from '../host-gates.js';
import { duplicateRedis, type RedisClient } from './connection.js';
import { gateTokenSecretKey, hostGateAnswerKey, hostGateChannel, hostGateIndexKey, hostGateKey, hostGateLiveKey, hostGateRequestsKey, hostGateTenantLiveKey } from './keys.js';
import { runScript } from './scripts.js';

/**
 * Host-owned gates in Redis (key layout in keys.ts). The reservation counts a gate against both caps
 * in the `{gates}` slot (`hostGateReserve-4.lua`); the gate's record, its answer and the first-answer
 * race live in the gate's own slot (`hostGateWrite-1`, `hostGateAnswer-2`, `hostGateClose-2`), so
 * gates spread over a cluster. Answers and closes are published on one channel, which each node
 * subscribes to once, on its first long poll, to wake its own waiters.
 */
export class RedisHostGateStore implements HostGateStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #listeners = new Map<string, Set<() => void>>();
  #subscriber: RedisClient | undefined;
  #subscribed: Promise<void> | undefined;

  constructor(options: { readonly redis: RedisClient; readonly keyPrefix: string }) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
  }

  now(): number {
    return Date.now();
  }

  /** The secret every node on this Redis signs callback tokens with: created once (SET NX), then read. */
  async secret(): Promise<Buffer> {
    const key = gateTokenSecretKey(this.#prefix);
    await this.#redis.set(key, randomBytes(32).toString('hex'), 'NX');
    const value = await this.#redis.get(key);
    if (value === null || !/^[0-9a-f]{64}$/.test(value)) throw new Error(`${key} is missing or malformed`);
    return Buffer.from(value, 'hex');
  }

  async reserve(spec: { id: string; tenant: string; requestDigest: string; timeoutMs: number }, caps: HostGateCaps): Promise<ReserveOutcome> {
    const keys = [hostGateLiveKey(this.#prefix), hostGateTenantLiveKey(this.#prefix, spec.tenant), hostGateIndexKey(this.#prefix, spec.tenant), hostGateRequestsKey(this.#prefix, spec.tenant)];
    const args = [spec.id, spec.requestDigest, String(spec.timeoutMs), String(hostGateRetentionMs), String(caps.perTenant), String(caps.cluster)];
    const reply = (await runScript(this.#redis, 'hostGateReserve', keys, args)) as [number, ...Array<string | number>];
    switch (reply[0]) {
      case 1:
        return { kind: 'reserved', createdAt: Number(reply[1]), expiresAt: Number(reply[2]) };
      case 2:
        return { kind: 'existing', requestDigest: String(reply[1]), createdAt: Number(reply[2]), expiresAt: Number(reply[3]) };
      case 0:
        return { kind: 'capacity', scope: reply[1] === 'tenant' ? 'tenant' : 'cluster', retryAfterMs: retryAfterOf(Number(reply[2]), Number(reply[3])) };
      default:
        throw new Error(`hostGateReserve refused its arguments: ${String(reply[1])}`);
    }
  }

  async write(record: HostGateRecord): Promise<void> {
    const spec: HostGateSpec = {
      id: record.id,
      tenant: record.tenant,
      kind: record.kind,
      prompt: record.prompt,
      answerSchema: record.answerSchema,
      url: record.url,
      actor: record.actor,
      requestId: record.requestId,
      requestDigest: record.requestDigest,
    };
    const args = [JSON.stringify(spec), String(record.createdAt), String(record.expiresAt), String(record.expiresAt + hostGateRetentionMs)];
    await runScript(this.#redis, 'hostGateWrite', [hostGateKey(this.#prefix, record.id)], args);
  }

  async read(id: string): Promise<HostGateRecord | undefined> {
    // One slot: both reads in one transaction see the same moment.
    const replies = await this.#redis.multi().hgetall(hostGateKey(this.#prefix, id)).get(hostGateAnswerKey(this.#prefix, id)).exec();
    const [hash, answer] = (replies ?? []).map(([error, value]) => {
      if (error !== null) throw error;
      return value;
    });
    return recordOf(hash as Record<string, string>, (answer as string | null) ?? null);
  }

  async answer(id: string, input: AnswerInput): Promise<AnswerOutcome> {
    const keys = [hostGateKey(this.#prefix, id), hostGateAnswerKey(this.#prefix, id)];
    const args = [input.answer, input.digest, input.provenance, input.actor ?? '', input.requestId ?? '', input.viaToken ? '1' : '0', hostGateChannel(this.#prefix), id];
    const reply = (await runScript(this.#redis, 'hostGateAnswer', keys, args)) as [string, string[]?, (string | null)?];
    if (reply[0] === 'missing') return { kind: 'missing' };
    const record = recordOf(pairs(reply[1] ?? []), reply[2] ?? null);
    if (record === undefined) return { kind: 'missing' };
    return { kind: reply[0] as Exclude<AnswerOutcome['kind'], 'missing'>, record };
  }

  async close(id: string): Promise<HostGateRecord | undefined> {
    const keys = [hostGateKey(this.#prefix, id), hostGateAnswerKey(this.#prefix, id)];
    const reply = (await runScript(this.#redis, 'hostGateClose', keys, [String(hostGateRetentionMs), hostGateChannel(this.#prefix), id])) as [string, string[]?];
    const record = reply[0] === 'missing' ? undefined : recordOf(pairs(reply[1] ?? []), null);
    if (record === undefined) return undefined;
    // A closed gate no longer counts against the caps, and leaves the listing after the retention.
    // Best effort: if this fails, the entries lapse at the gate's expiry.
    const closedAt = record.closedAt ?? this.now();
    await this.#redis
      .multi()
      .zrem(hostGateLiveKey(this.#prefix), id)
      .zrem(hostGateTenantLiveKey(this.#prefix, record.tenant), id)
      .zadd(hostGateIndexKey(this.#prefix, record.tenant), 'XX', 'LT', closedAt + hostGateRetentionMs, id)
      .exec()
      .catch(() => undefined);
    return record;
  }

  async list(tenant: string): Promise<HostGateRecord[]> {
    const ids = await this.#redis.zrangebyscore(hostGateIndexKey(this.#prefix, tenant), this.now(), '+inf');
    const records = await Promise.all(ids.map((id) => this.read(id)));
    return records.filter((record): record is HostGateRecord => record !== undefined && record.tenant === tenant);
  }

  async watch(id: string, listener: () => void): Promise<() => void> {
    const listeners = this.#listeners.get(id) ?? new Set();
    listeners.add(listener);
    this.#listeners.set(id, listeners);
    const unwatch = () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.#listeners.get(id) === listeners) this.#listeners.delete(id);
    };
    try {
      await this.#subscribe();
    } catch (error) {
      unwatch();
      throw error;
    }
    return unwatch;
  }

  async shutdown(): Promise<void> {
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    if (subscriber !== undefined) subscriber.disconnect();
  }

  #subscribe(): Promise<void> {
    this.#subscribed ??= (async () => {
      const subscriber = duplicateRedis(this.#redis);
      subscriber.on('error', () => undefined);
      subscriber.on('message', (_channel: string, id: string) => {
        for (const listener of [...(this.#listeners.get(id) ?? [])]) listener();
      });
      this.#subscriber = subscriber;
      await subscriber.subscribe(hostGateChannel(this.#prefix));
    })().catch((error: unknown) => {
      this.#subscribed = undefined;
      throw error;
    });
    return this.#subscribed;
  }
}

function pairs(flat: readonly string[]): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let index = 0; index + 1 < flat.length; index += 2) hash[flat[index] as string] = flat[index + 1] as string;
  return hash;
}

/** Undefined for an absent (or foreign) hash. */
function recordOf(hash: Record<string, string> | null | undefined, answer: string | null): HostGateRecord | undefined {
  if (hash === null || hash === undefined || typeof hash.spec !== 'string') return undefined;
  let spec: HostGateSpec;
  try {
    spec = JSON.parse(hash.spec) as HostGateSpec;
  } catch {
    return undefined;
  }
  const state = hash.state === 'answered' || hash.state === 'closed' ? hash.state : 'open';
  const answered = hash.answeredAt !== undefined && (hash.provenance === 'human' || hash.provenance === 'api');
  return {
    ...spec,
    createdAt: Number(hash.createdAt),
    expiresAt: Number(hash.expiresAt),
    state,
    closedAt: hash.closedAt === undefined ? null : Number(hash.closedAt),
    answerMeta: answered
      ? {
          answeredAt: Number(hash.answeredAt),
          provenance: hash.provenance as 'human' | 'api',
          actor: hash.answerActor === undefined || hash.answerActor === '' ? null : hash.answerActor,
          requestId: hash.answerRequestId === undefined || hash.answerRequestId === '' ? null : hash.answerRequestId,
          digest: hash.answerDigest ?? '',
        }
      : null,
    answer: state === 'answered' ? answer : null,
    tokenUsed: hash.tokenUsed === '1',
  };
}
