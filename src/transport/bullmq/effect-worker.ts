import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Worker, type Job } from 'bullmq';
import { duplicateRedis, type RedisClient } from '../../store/redis/connection.js';
import { Delta, type Deployment, type Dispatcher, type EffectRequest, Payload, Settlement } from '../../kernel/index.js';
import { RedisEffectAttempts, type AttemptRef } from '../../store/redis/effect-attempts.js';
import { RedisEventLog } from '../../store/redis/event-log.js';
import { RedisWorkerRegistry, type WorkerProcessKey, type WorkerStatus } from '../../store/redis/worker-registry.js';
import { deltaType } from '../../store/event-log.js';
import { type ClaimableJob, claimableOf, encodeInboxEntry, requestOfClaimable, type EffectJobData, type InboxEntry } from './job-data.js';
import { bullPrefixOf, queueNameOf } from './names.js';
import { defaultTransportTiming, malformedJobCode, type TransportTiming } from './transport-options.js';
import { isOwnerDispatched } from '../placement.js';

/**
 * `scope worker`'s engine: consumes the queue of every deployment it holds (one queue per exact
 * DeploymentRef) and runs an attempt only after its Lua claim succeeds. A refused claim executes
 * nothing and writes nothing. While it runs, the claimant renews its lease and watches the durable
 * cancel flag (plus a notification), aborting the dispatch's AbortSignal on cancel; deltas go to the
 * tree's event log (best effort); the settlement (or `unknown` when the dispatcher threw) goes to
 * the tree's inbox, and only then does the job complete.
 */

export interface EffectWorkerOptions {
  /** A client for the claims, the inbox, the event log and the registry. */
  readonly redis: RedisClient;
  /** A client for BullMQ (`maxRetriesPerRequest: null`); BullMQ duplicates it for blocking reads. */
  readonly bullConnection: RedisClient;
  readonly keyPrefix: string;
  readonly deployments: readonly Deployment[];
  readonly concurrency?: number;
  readonly timing?: Partial<TransportTiming>;
  /** Registry heartbeat period (default 1000 ms); an entry lives three periods. */
  readonly heartbeatMs?: number;
  /**
   * The readiness of the supervised commands (process dispatcher keys) a deployment's dispatcher
   * runs, published with every heartbeat so the API's `/readyz` can tell whether this worker can
   * actually run the ref (`scope worker` passes `ProcessDispatchers.statusOf`).
   */
  readonly processesOf?: (deployment: Deployment) => readonly WorkerProcessKey[];
  readonly workerId?: string;
  readonly onError?: (error: unknown, context: string) => void;
  /** Told when a running attempt's lease is lost (the owner gave up on it; its dispatch is aborted). */
  readonly onLease?: (attempt: AttemptRef, event: 'lost') => void;
  /** Told when a claim is refused (a redelivery, a zombie owner's job, a revoked attempt). */
  readonly onRefused?: (attempt: AttemptRef, reason: string) => void;
  /** Told after an executed attempt's settlement was delivered, or refused (the owner had given up on it). */
  readonly onSettled?: (attempt: AttemptRef, delivered: boolean) => void;
}

export type AttemptOutcome = 'executed' | 'refused';

export class EffectWorker {
  readonly #options: EffectWorkerOptions;
  readonly #timing: TransportTiming;
  readonly #attempts: RedisEffectAttempts;
  readonly #log: RedisEventLog;
  readonly #registry: RedisWorkerRegistry;
  readonly #dispatchers = new Map<string, Dispatcher>();
  readonly #workers: Worker[] = [];
  readonly #running = new Map<string, AbortController>();
  /** The deployments this worker consumes (not owner-dispatched), by ref digest hex. */
  readonly #served = new Map<string, Deployment>();
  readonly #workerId: string;
  readonly #tokenPrefix = randomBytes(8).toString('hex');
  #tokens = 0;
  #subscriber: RedisClient | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #stopping: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: EffectWorkerOptions) {
    this.#options = options;
    this.#timing = { ...defaultTransportTiming, ...options.timing };
    this.#attempts = new RedisEffectAttempts({ redis: options.redis, keyPrefix: options.keyPrefix });
    // An attempt's deltas leave as one script per event loop turn, flushed before its settlement.
    this.#log = new RedisEventLog({ redis: options.redis, keyPrefix: options.keyPrefix, coalesceAppends: true, onAppendError: (error) => options.onError?.(error, 'delta append') });
    this.#registry = new RedisWorkerRegistry({ redis: options.redis, keyPrefix: options.keyPrefix });
    this.#workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    for (const deployment of options.deployments) {
      if (deployment.dispatcher === undefined || isOwnerDispatched(deployment.dispatcher)) continue;
      this.#dispatchers.set(deployment.ref.digest.toString(), deployment.dispatcher);
      this.#served.set(deployment.ref.digest.hex, deployment);
    }
  }

  get workerId(): string {
    return this.#workerId;
  }

  /** Subscribes to cancellations, joins the registry and starts consuming. */
  async start(): Promise<void> {
    const subscriber = duplicateRedis(this.#options.redis);
    subscriber.on('error', (error: Error) => this.#options.onError?.(error, 'cancel subscriber'));
    subscriber.on('message', (_channel: string, message: string) => this.#running.get(message)?.abort(new Error('canceled by the owner')));
    await subscriber.subscribe(this.#attempts.cancelChannel);
    this.#subscriber = subscriber;
    await this.#beat();
    const heartbeatMs = this.#options.heartbeatMs ?? 1_000;
    this.#heartbeat = setInterval(() => void this.#beat(), heartbeatMs);
    for (const deployment of this.#options.deployments) {
      if (deployment.dispatcher === undefined || isOwnerDispatched(deployment.dispatcher)) continue;
      const worker = new Worker(queueNameOf(deployment.ref), (job: Job<EffectJobData>) => this.run(job.data), {
        connection: this.#options.bullConnection,
        prefix: bullPrefixOf(this.#options.keyPrefix),
        concurrency: this.#options.concurrency ?? 4,
        lockDuration: this.#timing.lockDurationMs,
        stalledInterval: this.#timing.stalledIntervalMs,
        // A stalled job is redelivered once so its claim can be refused visibly; the claim, not
        // this counter, is what keeps a second execution from happening.
        maxStalledCount: 1,
      });
      worker.on('error', (error) => this.#options.onError?.(error, `worker ${deployment.ref.name}`));
      this.#workers.push(worker);
    }
    await Promise.all(this.#workers.map((worker) => worker.waitUntilReady()));
  }

  /** Claims and, when granted, executes one attempt (exported for tests of a redelivery). */
  async run(data: EffectJobData): Promise<AttemptOutcome> {
    let claimable: ClaimableJob;
    try {
      claimable = claimableOf(data);
    } catch (error) {
      // A malformed job names no attempt anyone could claim: nothing runs, nothing is written.
      this.#options.onError?.(error, 'malformed job');
      return 'refused';
    }
    const dispatcher = this.#dispatchers.get(claimable.deploymentRef.digest.toString());
    if (dispatcher === undefined) return 'refused';
    const attempt: AttemptRef = { rootId: data.rootId, attemptId: data.attemptId, effectId: claimable.effectId.toString() };
    const token = this.#nextToken();
    const claimed = this.#attempts.claim({
      ...attempt,
      incarnationId: data.incarnationId,
      replayPolicy: dispatcher.replayPolicy(claimable.effect),
      token,
      workerId: this.#workerId,
      leaseMs: this.#timing.leaseMs,
    });
    // The claim is on its way: what the execution needs is built meanwhile, off the hop's path.
    let request: EffectRequest | undefined;
    let malformed: unknown;
    try {
      request = requestOfClaimable(data, claimable);
    } catch (error) {
      malformed = error;
    }
    const abort = new AbortController();
    const claim = await claimed;
    if (!claim.claimed) {
      this.#options.onRefused?.(attempt, claim.reason);
      return 'refused';
    }
    if (request === undefined) {
      // Only a corrupted job gets here (its claim found the permit its pending boundary wrote): the
      // attempt provably never ran, so it fails definitely instead of lapsing into an Unknown.
      this.#options.onError?.(malformed, 'malformed job');
      const failed = Settlement.of('failed', Payload.encode({ code: malformedJobCode, error: malformed instanceof Error ? malformed.message : String(malformed) }));
      await this.#deliver(attempt, token, { outcome: 'settled', settlement: failed });
      return 'executed';
    }
    const key = `${attempt.rootId} ${attempt.attemptId}`;
    this.#running.set(key, abort);
    // The lease, not BullMQ's job lock, fences the attempt: a lost lock only makes BullMQ redeliver
    // the job (whose claim is then refused); a lost lease means the owner has declared the attempt
    // Unknown, so the dispatch is aborted and its settlement will be refused.
    const renew = setInterval(() => {
      this.#attempts.renew(attempt, token, this.#timing.leaseMs).then(
        ({ held, canceled }) => {
          if (!held) {
            this.#options.onLease?.(attempt, 'lost');
            abort.abort(new Error('the claim is no longer held'));
          } else if (canceled) abort.abort(new Error('canceled by the owner'));
        },
        (error: unknown) => this.#options.onError?.(error, 'lease renewal'),
      );
    }, Math.max(10, Math.floor(this.#timing.leaseMs / 3)));
    let entry: InboxEntry;
    try {
      entry = await this.#execute(request, dispatcher, abort.signal);
    } finally {
      clearInterval(renew);
      this.#running.delete(key);
    }
    // Its deltas precede its settlement (one client, commands in order).
    this.#log.flush();
    await this.#deliver(attempt, token, entry);
    return 'executed';
  }

  /** Settles a claimed attempt; a refusal means the owner already declared it Unknown: nothing to do. */
  async #deliver(attempt: AttemptRef, token: string, entry: InboxEntry): Promise<void> {
    const delivered = await this.#attempts.settle(attempt, token, encodeInboxEntry(entry), entry.outcome === 'settled' && entry.settlement.status !== 'unknown');
    this.#options.onSettled?.(attempt, delivered);
  }

  /** A claim token unique per delivery: this worker's random prefix and a counter. */
  #nextToken(): string {
    this.#tokens += 1;
    return `${this.#tokenPrefix}${this.#tokens.toString(36)}`;
  }

  async #execute(request: EffectRequest, dispatcher: Dispatcher, signal: AbortSignal): Promise<InboxEntry> {
    try {
      let sequence = 0n;
      const rootId = request.relation.rootId.toString();
      const emit = (payload: Payload): void => {
        if (signal.aborted) return;
        sequence += 1n;
        try {
          const delta = Delta.create({
            attemptId: request.attemptId!,
            processId: request.processId,
            effectId: request.id,
            treeIncarnationId: request.incarnationId,
            effectSequence: sequence,
            emittedAt: new Date(),
            payload,
          });
          this.#log.append(rootId, [{ type: deltaType, processId: request.processId.toString(), data: delta.json() }]);
        } catch (error) {
          // A rejected delta is dropped (best effort), leaving a visible gap in the sequence.
          this.#options.onError?.(error, 'delta');
        }
      };
      const settlement = await dispatcher.dispatch(request, emit, signal);
      return { outcome: 'settled', settlement };
    } catch (error) {
      return { outcome: 'unknown', reason: error instanceof Error ? error.message : String(error) };
    }
  }

  async #beat(): Promise<void> {
    const ttl = 3 * (this.#options.heartbeatMs ?? 1_000);
    try {
      await this.#registry.heartbeat(this.#workerId, this.status(), ttl);
    } catch (error) {
      this.#options.onError?.(error, 'registry heartbeat');
    }
  }

  /** What the heartbeat publishes: the refs consumed and, per ref, its process keys' readiness. */
  status(): WorkerStatus {
    const processes: Record<string, readonly WorkerProcessKey[]> = {};
    for (const [ref, deployment] of this.#served) {
      const keys = this.#options.processesOf?.(deployment) ?? [];
      if (keys.length > 0) processes[ref] = keys;
    }
    return { refs: [...this.#served.keys()], processes };
  }

  /**
   * Graceful stop: take no new jobs, let running attempts finish for `graceMs`, then abort them
   * (`cancelAllJobs` plus our own signals: a second `close()` cannot force the first) and leave.
   * The aborted attempts still settle (as the dispatcher reports them) before the workers close.
   * `scope worker` runs the same steps as named shutdown phases (src/app/worker.ts).
   */
  stop(graceMs: number): Promise<void> {
    this.#stopping ??= (async () => {
      const closing = this.stopTaking();
      const timer = setTimeout(() => this.abortRunning(), graceMs);
      await closing;
      clearTimeout(timer);
      await this.leave();
    })();
    return this.#stopping;
  }

  /** Takes no new jobs; resolves once the running attempts have ended and settled (the workers closed). */
  stopTaking(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#heartbeat);
      await Promise.all(this.#workers.map((worker) => worker.close()));
    })();
    return this.#closing;
  }

  /** Attempts still running (for the log of a phase that runs out of time). */
  get running(): number {
    return this.#running.size;
  }

  /** Aborts the attempts still running; they settle as their dispatcher reports (Unknown when cut short). */
  abortRunning(): void {
    for (const worker of this.#workers) worker.cancelAllJobs('worker shutdown');
    for (const abort of this.#running.values()) abort.abort(new Error('worker shutdown'));
  }

  /** Leaves the worker registry and closes this worker's own connections (the caller's stay open). */
  async leave(): Promise<void> {
    await this.#registry.leave(this.#workerId).catch(() => undefined);
    this.#subscriber?.disconnect();
    await this.#log.close();
  }
}

