import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { type DeltaEmitter, Deployment, type Dispatcher, type Effect, type EffectRequest, Payload, type ReplayPolicy, Settlement } from '../../kernel/index.js';
import { RedisEffectAttempts, type AttemptRef } from '../../store/redis/effect-attempts.js';
import { decodeInboxEntry, jobDataOf } from './job-data.js';
import { bullPrefixOf, jobIdOf, queueNameOf } from './names.js';
import { defaultTransportTiming, unclaimedCode, type TransportTiming } from './transport-options.js';

/**
 * The owner's side of the BullMQ transport: a Dispatcher per deployment that offers each attempt
 * (fenced by the tree head's incarnation), enqueues one job for it on the queue of its exact
 * DeploymentRef, and awaits the settlement from the tree's inbox — never from BullMQ's return
 * values, QueueEvents or `waitUntilFinished`, which are trimmed lazily and can hang.
 *
 * Every doubt throws, which the Engine records as an Unknown outcome: a claim whose lease lapsed
 * (worker crash, stall), a passed dispatch deadline, a worker that reported an unknown outcome, a
 * Redis error. An attempt no worker claimed within its window is revoked atomically and, having
 * provably never run, settles `failed` with `transport.unclaimed`.
 */

export interface BullmqTransportOptions {
  /** The client for the transport's scripts and BullMQ's queues (not closed by the transport). */
  readonly redis: Redis;
  readonly keyPrefix: string;
  readonly timing?: Partial<TransportTiming>;
  /** Re-inspect an attempt at least this often even without a notification (default 1000 ms). */
  readonly pollMs?: number;
}

/** A doubt about an attempt's outcome; thrown so the Engine records Unknown. */
export class TransportDoubt extends Error {
  readonly code = 'transport_doubt';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransportDoubt';
  }
}

export class BullmqTransport {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #timing: TransportTiming;
  readonly #pollMs: number;
  readonly #attempts: RedisEffectAttempts;
  readonly #queues = new Map<string, Queue>();
  readonly #waiters = new Map<string, () => void>();
  #subscriber: Redis | undefined;
  #closed = false;

  constructor(options: BullmqTransportOptions) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#timing = { ...defaultTransportTiming, ...options.timing };
    this.#pollMs = options.pollMs ?? 1_000;
    this.#attempts = new RedisEffectAttempts({ redis: options.redis, keyPrefix: options.keyPrefix });
  }

  get attempts(): RedisEffectAttempts {
    return this.#attempts;
  }

  /**
   * The same Deployment (same ref: the ref names behaviour, not the transport) whose dispatcher
   * sends every attempt through this transport. Replay policy stays the local dispatcher's answer
   * (pure, no I/O), so restores decide exactly as they would in-process. A deployment without a
   * dispatcher is returned as it is.
   */
  bind(deployment: Deployment): Deployment {
    const local = deployment.dispatcher;
    if (local === undefined) return deployment;
    const bound = Deployment.create({
      definition: deployment.definition,
      dispatcher: this.dispatcherFor(deployment, local),
      implementationDigest: deployment.ref.implementationDigest,
      configurationDigest: deployment.ref.configurationDigest,
    });
    if (!bound.ref.equals(deployment.ref)) throw new Error(`binding ${deployment.ref.name} to the BullMQ transport changed its ref`);
    return bound;
  }

  dispatcherFor(deployment: Deployment, local: Dispatcher): Dispatcher {
    const queue = this.#queueOf(deployment);
    return Object.freeze({
      dispatch: (request: EffectRequest, _emit: DeltaEmitter | undefined, signal: AbortSignal) => this.#dispatch(queue, local.replayPolicy(request.effect), request, signal),
      replayPolicy: (effect: Effect): ReplayPolicy => local.replayPolicy(effect),
    });
  }

  /** Waiting and active job counts of each queue (readiness and metrics). */
  async queueCounts(): Promise<Map<string, { waiting: number; active: number }>> {
    const counts = new Map<string, { waiting: number; active: number }>();
    for (const [name, queue] of this.#queues) {
      const raw = await queue.getJobCounts('waiting', 'active');
      counts.set(name, { waiting: raw.waiting ?? 0, active: raw.active ?? 0 });
    }
    return counts;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const wake of this.#waiters.values()) wake();
    await Promise.allSettled([...this.#queues.values()].map((queue) => queue.close()));
    this.#subscriber?.disconnect();
  }

  #queueOf(deployment: Deployment): Queue {
    const name = queueNameOf(deployment.ref);
    let queue = this.#queues.get(name);
    if (queue === undefined) {
      queue = new Queue(name, { connection: this.#redis, prefix: bullPrefixOf(this.#prefix) });
      this.#queues.set(name, queue);
    }
    return queue;
  }

  async #dispatch(queue: Queue, replayPolicy: ReplayPolicy, request: EffectRequest, signal: AbortSignal): Promise<Settlement> {
    if (this.#closed) throw new TransportDoubt('the transport is closed');
    const data = jobDataOf(request);
    const attempt: AttemptRef = { rootId: data.rootId, attemptId: data.attemptId };
    const offered = await this.#attempts.offer({
      ...attempt,
      incarnationId: data.incarnationId,
      effectId: request.id.toString(),
      replayPolicy,
      claimWindowMs: this.#timing.claimWindowMs,
      deadlineMs: this.#timing.dispatchDeadlineMs,
    });
    if (offered === 'fenced') throw new TransportDoubt('this server no longer owns the tree: the attempt was not offered');
    if (offered === 'duplicate') throw new TransportDoubt('the attempt was offered before');
    this.#subscribe();
    // An enqueue failure needs no special case: the attempt stays unclaimed and, at its window's
    // end, is revoked and fails definitely.
    await queue.add('effect', data, { jobId: jobIdOf(request.id, request.attemptId!), attempts: 1, removeOnComplete: true, removeOnFail: true }).catch(() => undefined);
    let canceled = false;
    const key = `${attempt.rootId} ${attempt.attemptId}`;
    try {
      for (;;) {
        if (signal.aborted && !canceled) {
          canceled = true;
          await this.#attempts.cancel(attempt).catch(() => undefined);
        }
        const view = await this.#attempts.inspect(attempt);
        switch (view.state) {
          case 'settled': {
            const entry = decodeInboxEntry(view.json);
            if (entry.outcome === 'unknown') throw new TransportDoubt(`the worker reported an unknown outcome: ${entry.reason}`);
            return entry.settlement;
          }
          case 'unclaimed':
            return Settlement.of('failed', Payload.encode({ code: unclaimedCode, error: `no worker claimed the attempt within ${this.#timing.claimWindowMs} ms` }));
          case 'expired':
            throw new TransportDoubt('the dispatch deadline passed after the attempt was claimed');
          case 'lapsed':
            throw new TransportDoubt("the claimant's lease lapsed (worker crash, stall or partition)");
          case 'missing':
          case 'settling':
            throw new TransportDoubt(`the attempt record is ${view.state}`);
          case 'offered':
          case 'claimed':
            if (this.#closed) throw new TransportDoubt('the transport closed while the attempt was outstanding');
            await this.#wake(key, Math.min(this.#pollMs, Math.max(1, view.waitMs + 1)), canceled ? undefined : signal);
        }
      }
    } catch (error) {
      if (error instanceof TransportDoubt) throw error;
      throw new TransportDoubt('the attempt could not be followed', { cause: error });
    }
  }

  /** Resolves on the attempt's notification, after `ms`, or when `signal` aborts (to raise the cancel flag). */
  #wake(key: string, ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        if (this.#waiters.get(key) === done) this.#waiters.delete(key);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.#waiters.set(key, done);
    });
  }

  #subscribe(): void {
    if (this.#subscriber !== undefined) return;
    const subscriber = this.#redis.duplicate();
    subscriber.on('error', () => undefined);
    subscriber.on('message', (_channel: string, message: string) => this.#waiters.get(message)?.());
    void subscriber.subscribe(this.#attempts.settledChannel).catch(() => undefined);
    this.#subscriber = subscriber;
  }
}
