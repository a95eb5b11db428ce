import { Queue } from 'bullmq';
import { duplicateRedis, type RedisClient } from '../../store/redis/connection.js';
import { resolvesFromLateReports, trustsLateReports } from '../late-reports.js';
import { isOwnerDispatched } from '../placement.js';
import { type DeltaEmitter, Deployment, type Dispatcher, type Effect, EffectAttemptId, type EffectRequest, Payload, type ReplayPolicy, Settlement } from '../../kernel/index.js';
import type { DispatchPermits } from '../../store/redis/dispatch-permits.js';
import { parseSettledMessage, RedisEffectAttempts, type AttemptRef } from '../../store/redis/effect-attempts.js';
import { RedisWorkerRegistry } from '../../store/redis/worker-registry.js';
import { decodeInboxEntry, type EffectJobData, jobDataOf } from './job-data.js';
import { bullPrefixOf, jobIdOf, queueNameOf } from './names.js';
import { defaultTransportTiming, unclaimedCode, type TransportTiming } from './transport-options.js';

/**
 * The owner's side of the BullMQ transport: a Dispatcher per deployment that enqueues one job per
 * attempt on the queue of its exact DeploymentRef — the permit to run it was written with the head by
 * the pending boundary (dispatch-permits.ts) — and awaits the settlement from the effect's inbox — never from BullMQ's return
 * values, QueueEvents or `waitUntilFinished`, which are trimmed lazily and can hang.
 *
 * Every doubt throws, which the Engine records as an Unknown outcome: a `never` Effect's claim whose
 * lease lapsed (worker crash, stall; a `same_identity` one runs again as a new attempt), a passed dispatch deadline, a worker that reported an unknown outcome, a
 * Redis error. An attempt no worker claimed within its window is revoked atomically and, having
 * provably never run, settles `failed` with `transport.unclaimed`.
 */

export interface BullmqTransportOptions {
  /** The client for the transport's scripts and BullMQ's queues (not closed by the transport). */
  readonly redis: RedisClient;
  readonly keyPrefix: string;
  readonly timing?: Partial<TransportTiming>;
  /** Re-inspect an attempt at least this often even without a notification (default 1000 ms). */
  readonly pollMs?: number;
  /** The permits the host's commits carry (tells a first attempt from a restored one; without it every attempt looks for an earlier one). */
  readonly permits?: DispatchPermits;
}

interface Followed {
  notified: boolean;
  wake?: () => void;
  json?: string;
}

/** New attempts a `same_identity` dispatch makes after claimants that died, before it is a doubt. */
const maxReplays = 3;

/** A doubt about an attempt's outcome; thrown so the Engine records Unknown. */
export class TransportDoubt extends Error {
  readonly code = 'transport_doubt';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransportDoubt';
  }
}

/** The owner's reading of an inbox entry: a worker's `unknown` report is a doubt. */
function settlementOf(json: string): Settlement {
  const entry = decodeInboxEntry(json);
  if (entry.outcome === 'unknown') throw new TransportDoubt(`the worker reported an unknown outcome: ${entry.reason}`);
  return entry.settlement;
}

export class BullmqTransport {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #timing: TransportTiming;
  readonly #pollMs: number;
  readonly #attempts: RedisEffectAttempts;
  readonly #workers: RedisWorkerRegistry;
  readonly #permits: DispatchPermits | undefined;
  readonly #queues = new Map<string, Queue>();
  /**
   * Attempts being followed (`<root> <attempt>`): a notification arriving while no wait is armed
   * (between an inspection's reply and the next wait) is remembered, never lost to the poll interval;
   * `json` is the inbox entry the notification carried (the settlement, read without a round trip).
   */
  readonly #followed = new Map<string, Followed>();
  /** First attempts enqueued behind their pending boundary's commit (see #handOff), until their dispatch follows them. */
  readonly #handedOff = new Set<string>();
  #subscriber: RedisClient | undefined;
  /** True once the settlement channel is subscribed: no announcement can be missed from then on. */
  #listening = false;
  readonly #reportListeners: ((rootId: string, attemptId: string) => void)[] = [];
  #subscribed: Promise<void> | undefined;
  #closed = false;

  constructor(options: BullmqTransportOptions) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#timing = { ...defaultTransportTiming, ...options.timing };
    this.#pollMs = options.pollMs ?? 1_000;
    this.#attempts = new RedisEffectAttempts({ redis: options.redis, keyPrefix: options.keyPrefix });
    this.#workers = new RedisWorkerRegistry({ redis: options.redis, keyPrefix: options.keyPrefix });
    this.#permits = options.permits;
    this.#permits?.handOffTo((request, client) => this.#handOff(request, client));
  }

  /** Attempts this owner awaits a settlement for (metrics): dispatches in flight, earlier attempts a restore waits on, first attempts handed off behind their commit. */
  get followedAttempts(): number {
    return this.#followed.size;
  }

  get attempts(): RedisEffectAttempts {
    return this.#attempts;
  }

  /** The live `scope worker` processes and what they serve (readiness, metrics). */
  get workers(): RedisWorkerRegistry {
    return this.#workers;
  }

  /**
   * The same Deployment (same ref: the ref names behaviour, not the transport) whose dispatcher
   * sends every attempt through this transport. Replay policy stays the local dispatcher's answer
   * (pure, no I/O), so restores decide exactly as they would in-process. A deployment without a
   * dispatcher, or whose dispatcher runs in the owner (`ownerDispatched`), is returned as it is.
   */
  bind(deployment: Deployment): Deployment {
    const local = deployment.dispatcher;
    if (local === undefined || isOwnerDispatched(local)) return deployment;
    const bound = Deployment.create({
      definition: deployment.definition,
      dispatcher: this.dispatcherFor(deployment, local),
      implementationDigest: deployment.ref.implementationDigest,
      configurationDigest: deployment.ref.configurationDigest,
    });
    if (!bound.ref.equals(deployment.ref)) throw new Error(`binding ${deployment.ref.name} to the BullMQ transport changed its ref`);
    // The opt-in belongs to the behaviour, not to the transport carrying it.
    if (trustsLateReports(local) && bound.dispatcher !== undefined) resolvesFromLateReports(bound.dispatcher);
    return bound;
  }

  dispatcherFor(deployment: Deployment, local: Dispatcher): Dispatcher {
    const queue = this.#queueOf(deployment);
    return Object.freeze({
      dispatch: (request: EffectRequest, _emit: DeltaEmitter | undefined, signal: AbortSignal) => this.#dispatch(queue, request, local.replayPolicy(request.effect), signal),
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
    for (const followed of this.#followed.values()) followed.wake?.();
    await Promise.allSettled([...this.#queues.values()].map((queue) => queue.close()));
    this.#subscriber?.disconnect();
  }

  #queueOf(deployment: Deployment): Queue {
    const name = queueNameOf(deployment.ref);
    let queue = this.#queues.get(name);
    if (queue === undefined) {
      queue = new Queue(name, { connection: this.#redis, prefix: bullPrefixOf(this.#prefix) });
      // Connection errors surface as failed calls (an enqueue failure is revoked, an inspect failure
      // is a doubt); an unheard 'error' event would end the process.
      queue.on('error', () => undefined);
      this.#queues.set(name, queue);
    }
    return queue;
  }

  /**
   * A pending boundary's first attempt, enqueued right behind its commit: on the same client (so
   * Redis runs the enqueue after the commit), once the settlement channel is subscribed, for a
   * deployment this transport carries. It is followed from now on, so a settlement announced before
   * the dispatch begins is remembered. The returned function withdraws it when the commit is refused:
   * its job is then refused by the claim (no permit, or another incarnation's head) and runs nothing.
   */
  #handOff(request: EffectRequest, client: RedisClient): (() => void) | undefined {
    if (this.#closed || client !== this.#redis || request.attemptId === undefined) return undefined;
    const queue = this.#queues.get(queueNameOf(request.deploymentRef));
    if (queue === undefined) return undefined;
    if (!this.#listening) {
      void this.#subscribe(); // the next first attempt can go behind its commit
      return undefined;
    }
    const data = jobDataOf(request);
    const key = `${data.rootId} ${data.attemptId}`;
    this.#followed.set(key, { notified: false });
    this.#handedOff.add(key);
    // A failed enqueue needs no special case: the attempt stays unclaimed and is revoked at its window's end.
    void this.#enqueue(queue, request, data).catch(() => undefined);
    return () => {
      if (this.#handedOff.delete(key)) this.#followed.delete(key);
    };
  }

  #enqueue(queue: Queue, request: EffectRequest, data: EffectJobData): Promise<unknown> {
    const jobId = jobIdOf(request.id, EffectAttemptId.parse(data.attemptId));
    return queue.add('effect', data, { jobId, attempts: 1, removeOnComplete: true, removeOnFail: true });
  }

  /**
   * One dispatch: the kernel's attempt and, for a `same_identity` Effect whose claimant died (its
   * lease lapsed: worker crash, stall), up to {@link maxReplays} new attempts under the same identity,
   * each a new job that the claim admits only once the earlier lease has lapsed — within the one
   * dispatch deadline. A `never` Effect's lapsed claim is a doubt: it may have run.
   */
  async #dispatch(queue: Queue, request: EffectRequest, policy: ReplayPolicy, signal: AbortSignal): Promise<Settlement> {
    if (this.#closed) throw new TransportDoubt('the transport is closed');
    const started = Date.now();
    const deadline = started + this.#timing.dispatchDeadlineMs;
    const data = jobDataOf(request);
    await this.#subscribe();
    let attemptData = data;
    for (let replays = 0; ; replays += 1) {
      const outcome = await this.#attempt(queue, request, attemptData, { first: replays === 0, deadline, signal });
      if (outcome !== 'lapsed') return outcome;
      if (policy !== 'same_identity' || replays >= maxReplays || Date.now() >= deadline || signal.aborted) {
        throw new TransportDoubt("the claimant's lease lapsed (worker crash, stall or partition)");
      }
      attemptData = { ...data, attemptId: EffectAttemptId.random().toString() };
    }
  }

  /** Enqueues one attempt and follows it to a settlement (or `lapsed`: its claimant's lease ran out). */
  async #attempt(
    queue: Queue,
    request: EffectRequest,
    data: EffectJobData,
    options: { readonly first: boolean; readonly deadline: number; readonly signal: AbortSignal },
  ): Promise<Settlement | 'lapsed'> {
    const { deadline, signal } = options;
    const claimBy = Math.min(deadline, Date.now() + this.#timing.claimWindowMs);
    const attempt: AttemptRef = { rootId: data.rootId, attemptId: data.attemptId, effectId: request.id.toString() };
    const key = `${attempt.rootId} ${attempt.attemptId}`;
    // Handed off: enqueued behind its pending boundary and followed since (a notification may be in).
    const handedOff = options.first && this.#handedOff.delete(key);
    if (!handedOff) this.#followed.set(key, { notified: false });
    try {
      // A first attempt (its pending boundary was just committed here) has nothing earlier to
      // adopt; a restored or replayed one first looks at what earlier attempts left.
      if (options.first && this.#permits?.takeFresh(attempt.rootId, attempt.effectId, data.incarnationId) !== true) {
        const adopted = await this.#adoptPrior(attempt, deadline, signal);
        if (adopted !== undefined) return adopted;
      }
      // An enqueue failure needs no special case: the attempt stays unclaimed and, at its window's
      // end, is revoked and fails definitely.
      if (!handedOff) await this.#enqueue(queue, request, data).catch(() => undefined);
      let canceled = false;
      // Nothing to look at before the first notification: the job was only just added (a claim
      // or settlement since then has been announced and is remembered).
      if (!signal.aborted) await this.#wake(key, Math.min(this.#pollMs, Math.max(1, claimBy - Date.now())), signal);
      for (;;) {
        const told = this.#followed.get(key)?.json;
        // The announcement carried the inbox entry: that is what an inspection would answer first.
        if (told !== undefined) return settlementOf(told);
        if (signal.aborted && !canceled) {
          canceled = true;
          await this.#attempts.cancel(attempt).catch(() => undefined);
        }
        const now = Date.now();
        const view = await this.#attempts.inspect(attempt, now >= deadline ? 'expire' : now >= claimBy ? 'revoke' : 'look');
        switch (view.state) {
          case 'settled':
            return settlementOf(view.json);
          case 'unclaimed':
            return Settlement.of('failed', Payload.encode({ code: unclaimedCode, error: `no worker claimed the attempt within ${this.#timing.claimWindowMs} ms` }));
          case 'expired':
            throw new TransportDoubt('the dispatch deadline passed after the attempt was claimed');
          case 'lapsed':
            return 'lapsed';
          case 'settling':
            throw new TransportDoubt('the attempt settled but its inbox entry is gone');
          case 'waiting':
          case 'claimed': {
            if (this.#closed) throw new TransportDoubt('the transport closed while the attempt was outstanding');
            const until = view.state === 'claimed' ? Math.min(deadline, Date.now() + view.waitMs + 1) : claimBy;
            await this.#wake(key, Math.min(this.#pollMs, Math.max(1, until - Date.now())), canceled ? undefined : signal);
          }
        }
      }
    } catch (error) {
      if (error instanceof TransportDoubt) throw error;
      throw new TransportDoubt('the attempt could not be followed', { cause: error });
    } finally {
      this.#followed.delete(key);
    }
  }

  /**
   * A restored or replayed dispatch: adopts a definite settlement an earlier attempt left in the
   * inbox (the owner that saw it run is gone), or waits — up to the deadline — for an earlier attempt
   * still running under a live lease. Undefined: nothing to adopt, enqueue a new attempt.
   */
  async #adoptPrior(attempt: AttemptRef, deadline: number, signal: AbortSignal): Promise<Settlement | undefined> {
    const followed: string[] = [];
    try {
      return await this.#adoptPriorLoop(attempt, deadline, signal, followed);
    } finally {
      for (const key of followed) this.#followed.delete(key);
    }
  }

  async #adoptPriorLoop(attempt: AttemptRef, deadline: number, signal: AbortSignal, followed: string[]): Promise<Settlement | undefined> {
    for (;;) {
      const prior = await this.#attempts.prior(attempt.rootId, attempt.effectId);
      if (prior.kind === 'running' && !this.#followed.has(`${attempt.rootId} ${prior.attemptId}`)) {
        // Follow it, then look again: its settlement may have landed before we followed it.
        this.#followed.set(`${attempt.rootId} ${prior.attemptId}`, { notified: true });
        followed.push(`${attempt.rootId} ${prior.attemptId}`);
      }
      if (prior.kind === 'adopt') return settlementOf(prior.json);
      if (prior.kind === 'none') return undefined;
      if (Date.now() >= deadline) throw new TransportDoubt('an earlier attempt was still running at the dispatch deadline');
      if (this.#closed) throw new TransportDoubt('the transport closed while an earlier attempt was running');
      if (signal.aborted) await this.#attempts.cancel({ ...attempt, attemptId: prior.attemptId }).catch(() => undefined);
      const wait = Math.min(this.#pollMs, Math.max(1, Math.min(deadline - Date.now(), prior.waitMs + 1)));
      await this.#wake(`${attempt.rootId} ${prior.attemptId}`, wait, signal.aborted ? undefined : signal);
    }
  }

  /** Resolves on the attempt's notification (or one that came since the last wait), after `ms`, or when `signal` aborts (to raise the cancel flag). */
  #wake(key: string, ms: number, signal: AbortSignal | undefined): Promise<void> {
    const followed = this.#followed.get(key) ?? { notified: false };
    this.#followed.set(key, followed);
    if (followed.notified) {
      followed.notified = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        if (followed.wake === done) followed.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      followed.wake = done;
    });
  }

  /**
   * Calls `listener` for every settlement a worker delivers for an attempt no dispatch here awaits
   * (a late report, or another node's attempt: the listener checks what it holds). Resolves once
   * subscribed.
   */
  async watchReports(listener: (rootId: string, attemptId: string) => void): Promise<void> {
    this.#reportListeners.push(listener);
    await this.#subscribe();
  }

  #subscribe(): Promise<void> {
    this.#subscribed ??= (async () => {
      const subscriber = duplicateRedis(this.#redis);
      subscriber.on('error', () => undefined);
      subscriber.on('message', (_channel: string, message: string) => {
        const settled = parseSettledMessage(message);
        if (settled === undefined) return;
        const followed = this.#followed.get(`${settled.rootId} ${settled.attemptId}`);
        if (followed === undefined) {
          // Nobody here awaits this attempt: a late report (its effect was declared Unknown meanwhile).
          for (const listener of this.#reportListeners) listener(settled.rootId, settled.attemptId);
          return;
        }
        if (settled.json !== undefined) followed.json = settled.json;
        if (followed.wake !== undefined) followed.wake();
        else followed.notified = true;
      });
      this.#subscriber = subscriber;
      await subscriber.subscribe(this.#attempts.settledChannel).then(
        () => {
          this.#listening = true;
        },
        () => undefined,
      );
    })();
    return this.#subscribed;
  }
}
