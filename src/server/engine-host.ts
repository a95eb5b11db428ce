import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Budget } from '../kernel/budget.js';
import type { CapabilitySet } from '../kernel/capability.js';
import type { Clock } from '../kernel/clock.js';
import type { Delta } from '../kernel/delta.js';
import type { Deployment } from '../kernel/deployment.js';
import { Engine, type ProcessInspection, type TreeInspection } from '../kernel/engine.js';
import { ErrorCode, KernelError } from '../kernel/errors.js';
import { eventNames, type Event } from '../kernel/event.js';
import { validDiagnostic } from '../kernel/failure.js';
import { EffectId, ProcessId, WaitId } from '../kernel/identity.js';
import { Payload } from '../kernel/payload.js';
import type { PreparedEffect } from '../kernel/prepared-step.js';
import type { Process } from '../kernel/process.js';
import type { ProcessSnapshot } from '../kernel/process-snapshot.js';
import type { Result } from '../kernel/result.js';
import { RuntimeError } from '../kernel/runtime-error.js';
import { Settlement } from '../kernel/settlement.js';
import { SignalRequest } from '../kernel/signal.js';
import { isStatus } from '../kernel/status.js';
import type { TreeLimits } from '../kernel/tree-limits.js';
import type { TreeSnapshot } from '../kernel/tree-snapshot.js';
import type { Usage } from '../kernel/usage.js';
import { comparePositions, followsDirectly, isPosition, type EventLog, type StoredLogRecord } from '../store/event-log.js';
import { MemoryTreeCommitter } from '../store/memory-committer.js';
import { MemoryEventLog } from '../store/memory-event-log.js';
import { RedisTreeCommitter } from '../store/redis/redis-committer.js';
import { luaScripts } from '../store/redis/scripts.js';
import { AuthorityShapeError, budgetView, excessOf, parseBudget, parseCapabilities, parseTreeLimits, safeNumber, type Grant } from './authority.js';
import { DeploymentCatalog } from './catalog.js';
import type { ServerConfig } from './config.js';
import { demoDeployments } from './demos.js';
import { HistoryTrimmedError, invalidRequest, ServerErrorCode, serverError } from './errors.js';
import { EmbeddedCommitter, RedisHostCommitter, type HostCommitter } from './host-committer.js';
import type {
  ControlAction,
  DeploymentView,
  EffectView,
  FailureView,
  Host,
  HostTelemetry,
  Json,
  LogEntry,
  LogPage,
  LogQuery,
  Page,
  ProcessListQuery,
  ProcessSummary,
  ProcessView,
  Readiness,
  ResultPoll,
  ResultView,
  RuntimeErrorView,
  SignalInput,
  SnapshotView,
  StartOutcome,
  StartRequest,
  StreamOptions,
  TreeView,
  UsageView,
  WaitView,
} from './host.js';
import {
  idempotencyHostValue,
  idempotencyKeyDigest,
  MemoryIdempotencyStore,
  RedisIdempotencyStore,
  requestDigest,
  type IdempotencyIntent,
  type IdempotencyStore,
} from './idempotency.js';
import { abortable } from '../supervisor/deferred.js';
import { HostMetrics } from './metrics.js';
import { deltaType, RedisLog } from './redis-log.js';
import { isRootIndexMember, MemoryRootIndex, RedisRootIndex, rootOfMember, type RootIndex } from './root-index.js';

/** Which parts of {@link ServerConfig} the Host reads. */
export type HostConfig = Pick<ServerConfig, 'mode' | 'redisUrl' | 'keyPrefix' | 'demos' | 'eventLogMaxLen' | 'shutdownMs' | 'idempotencyTtlMs' | 'grants'>;

export interface EngineHostOptions {
  readonly config: HostConfig;
  /** Deployments besides the demos (registered after them; a name registered again replaces it for new starts). */
  readonly deployments?: Iterable<Deployment>;
  readonly logger?: Logger;
  /**
   * Redis mode: a client to use instead of connecting to `config.redisUrl`. The Host does not close
   * an injected client (tests keep control of it); one it connected itself is closed by `close()`.
   */
  readonly redis?: Redis;
  /** Wall clock for the Engine's timestamps (tests inject one). */
  readonly clock?: Clock;
  /** Collect Node's default process metrics on the Host's registry (default true). */
  readonly defaultMetrics?: boolean;
  /**
   * Finished trees kept in the Engine's memory (default 1000). Older ones are released: they stay
   * readable from the store, and answer signals and control as finished processes do.
   */
  readonly finishedTreeRetention?: number;
  /**
   * Redis mode: timing of same-key starts across servers (tests shorten them): how long a reservation
   * lives before its start commits, when a `committing` start counts as gone, and how long a start
   * waits for another one holding its key before `idempotency_key_in_progress`.
   */
  readonly idempotency?: { readonly reserveMs?: number; readonly staleMs?: number; readonly waitMs?: number };
}

/** Default and bound of list page sizes. */
const listLimits = { processes: { fallback: 20, max: 100 }, events: { fallback: 100, max: 1000 } } as const;
const maxWaitMs = 60_000;
const maxSignalsPerBatch = 1_000;
const readBatch = 500;
const defaultReasons: Readonly<Record<Exclude<ControlAction, 'resume'>, string>> = {
  pause: 'paused by host request',
  cancel: 'canceled by host request',
  kill: 'killed by host request',
};

/** A process found in this runtime or in the store. */
type Located =
  | { readonly kind: 'local'; readonly root: string; readonly handle: Process; readonly inspection: TreeInspection; readonly entry: ProcessInspection }
  | { readonly kind: 'stored'; readonly root: string; readonly head: TreeSnapshot; readonly snapshot: ProcessSnapshot };

/** What the log says about one effect. */
interface EffectHistory {
  readonly stepSequence: number;
  target: 'framework' | 'dispatcher';
  attempts: number;
  resolved: boolean;
  lastStatus: string | undefined;
}

interface PreparedStart {
  readonly deployment: Deployment;
  readonly input: Payload;
  readonly budget: Budget | undefined;
  readonly treeLimits: TreeLimits | undefined;
  readonly capabilities: CapabilitySet | undefined;
}

/**
 * The Host behind every HTTP plugin: one Engine over the store's committer (memory or Redis,
 * decorated by the host committer), the deployment catalog, the event log, idempotent starts,
 * authority narrowing, views, the SSE source, readiness, metrics and graceful shutdown.
 *
 * Trees this server's Engine owns are "local"; a tree only in the store (after a restart, or after
 * a release) is served read-only from its stored head and log, and answers signals and control
 * with `tree_not_active` until `restoreTree`.
 */
export class EngineHost implements Host {
  readonly #config: HostConfig;
  readonly #logger: Logger | undefined;
  readonly #catalog = new DeploymentCatalog();
  readonly #metrics: HostMetrics;
  readonly #log: EventLog;
  readonly #committer: HostCommitter;
  readonly #engine: Engine;
  readonly #idempotency: IdempotencyStore;
  readonly #roots: RootIndex;
  readonly #redis: Redis | undefined;
  readonly #redisStore: RedisTreeCommitter | undefined;
  readonly #ownsRedis: boolean;
  readonly #shutdown = new AbortController();
  /** Aborted when shutdown stops waiting for dispatches (long demo sleeps end early). */
  readonly #dispatchStop = new AbortController();
  #closing = false;
  #closed: Promise<void> | undefined;
  /** Idempotent starts in flight, by key digest (same-key starts run one after the other). */
  readonly #starts = new Map<string, Promise<unknown>>();
  /** Restores in flight, by root. */
  readonly #restores = new Map<string, Promise<TreeView>>();
  /** Roots of the trees this Engine owns. */
  readonly #localRoots = new Set<string>();
  /** Non-root process id → its root (children of stored trees are found through it; roots map to themselves). */
  readonly #processRoots = new Map<string, string>();
  /** Roots whose process finished, oldest first (released beyond the retention). */
  readonly #finished = new Set<string>();
  readonly #retention: number;
  /**
   * Finished roots this server released only to bound its memory (not on request): they keep
   * answering signals and control as finished processes, as if still owned. Bounded, oldest dropped.
   */
  readonly #evicted = new Set<string>();
  #releases: Promise<void> = Promise.resolve();
  /** When each process's current wait opened, as seen by this server. */
  readonly #waitSince = new Map<string, string>();
  /** Captures in progress per root (inspection's freeze phase). */
  readonly #captures = new Map<string, number>();
  /** Summaries of terminal stored roots (they never change). */
  readonly #summaries = new Map<string, ProcessSummary>();

  constructor(options: EngineHostOptions) {
    const config = options.config;
    this.#config = config;
    this.#logger = options.logger;
    this.#retention = options.finishedTreeRetention ?? 1_000;
    if (!Number.isSafeInteger(this.#retention) || this.#retention < 0) throw new TypeError('finishedTreeRetention must be a non-negative integer');
    if (config.demos) for (const deployment of demoDeployments({ shutdown: this.#dispatchStop.signal })) this.#catalog.register(deployment);
    for (const deployment of options.deployments ?? []) this.#catalog.register(deployment);

    let log: EventLog | undefined;
    this.#metrics = new HostMetrics({
      processesByStatus: () => this.#processesByStatus(),
      logAppendFailures: () => log?.failedAppends ?? 0,
      defaultMetrics: options.defaultMetrics,
    });

    if (config.mode === 'redis') {
      const redis = options.redis ?? connect(config.redisUrl, this.#logger);
      this.#redis = redis;
      this.#ownsRedis = options.redis === undefined;
      const store = new RedisTreeCommitter({ redis, keyPrefix: config.keyPrefix, eventLogMaxLen: config.eventLogMaxLen });
      this.#redisStore = store;
      this.#roots = new RedisRootIndex({ redis, keyPrefix: config.keyPrefix });
      this.#idempotency = new RedisIdempotencyStore({ redis, keyPrefix: config.keyPrefix, committer: store, ttlMs: config.idempotencyTtlMs, ...options.idempotency });
      log = new RedisLog({
        redis,
        keyPrefix: config.keyPrefix,
        maxLen: config.eventLogMaxLen,
        log: store.events,
        onAppendError: (error) => this.#logger?.warn({ err: error }, 'best-effort event log append failed'),
      });
      this.#committer = new RedisHostCommitter({ store, redis, roots: this.#roots, metrics: this.#metrics });
    } else {
      this.#redis = undefined;
      this.#redisStore = undefined;
      this.#ownsRedis = false;
      const memoryLog = new MemoryEventLog({ maxLen: config.eventLogMaxLen });
      const roots = new MemoryRootIndex();
      const idempotency = new MemoryIdempotencyStore();
      log = memoryLog;
      this.#roots = roots;
      this.#idempotency = idempotency;
      this.#committer = new EmbeddedCommitter({ store: new MemoryTreeCommitter(), log: memoryLog, idempotency, roots, metrics: this.#metrics });
    }
    this.#log = log;

    this.#engine = new Engine({
      committer: this.#committer,
      budget: config.grants.budget,
      treeLimits: config.grants.treeLimits,
      capabilities: config.grants.capabilities,
      deploymentResolver: this.#catalog,
      eventListeners: [(event) => this.#onEvent(event)],
      deltaListeners: [(delta) => this.#onDelta(delta)],
      clock: options.clock,
    });
  }

  /** Metrics the plugins feed, and the registry `metrics()` renders. */
  get telemetry(): HostTelemetry {
    const metrics = this.#metrics;
    return { registry: metrics.registry, sseClientConnected: () => metrics.sseClientConnected() };
  }

  /** The deployment catalog (register more deployments before serving). */
  get catalog(): DeploymentCatalog {
    return this.#catalog;
  }

  get mode(): 'embedded' | 'redis' {
    return this.#config.mode;
  }

  // -------------------------------------------------------------------------------------------
  // Observation

  #onEvent(event: Event): void {
    const pid = event.processId.toString();
    const root = event.relation.rootId.toString();
    if (pid !== root) this.#processRoots.set(pid, root);
    this.#metrics.observe(event);
    switch (event.name) {
      case eventNames.stepCommitted:
        if (event.stepCommitted()?.status === 'waiting') this.#waitSince.set(pid, event.occurredAt);
        break;
      case eventNames.processRestored:
        if (!this.#waitSince.has(pid)) this.#waitSince.set(pid, event.occurredAt);
        break;
      case eventNames.processFinished:
        this.#waitSince.delete(pid);
        if (pid === root) this.#noteFinished(root);
        break;
      default:
        break;
    }
    // Committed events reached the log with their commit (host committer); the rest go best-effort.
    if (!event.committed) this.#log.append(root, [{ type: event.name, processId: pid, data: event.json() }]);
  }

  #onDelta(delta: Delta): void {
    const pid = delta.processId.toString();
    const root = this.#processRoots.get(pid) ?? pid;
    this.#log.append(root, [{ type: deltaType, processId: pid, data: delta.json() }]);
  }

  /** Keeps the newest finished trees in memory; releases older ones (outside the listener). */
  #noteFinished(root: string): void {
    this.#finished.delete(root);
    this.#finished.add(root);
    while (this.#finished.size > this.#retention) {
      const oldest = this.#finished.values().next().value as string;
      this.#finished.delete(oldest);
      this.#releases = this.#releases.then(() => this.#autoRelease(oldest));
    }
  }

  async #autoRelease(root: string): Promise<void> {
    const local = this.#inspectLocal(root);
    if (local === undefined || local.processes.some((entry) => !entry.snapshot.isTerminal)) return;
    try {
      await this.#engine.releaseTree(ProcessId.parse(root));
      this.#forget(root);
      this.#evicted.add(root);
      const bound = Math.max(10_000, 10 * this.#retention);
      while (this.#evicted.size > bound) this.#evicted.delete(this.#evicted.values().next().value as string);
    } catch (error) {
      this.#logger?.warn({ err: error, rootId: root }, 'could not release a finished tree');
    }
  }

  /**
   * A stored finished process whose tree this server released on its own (memory bound), not on
   * request: it answers like an owned finished process. Any other stored tree answers
   * `tree_not_active` until restored (rest-api.md).
   */
  #evictedFinished(located: Located): boolean {
    return located.kind === 'stored' && located.snapshot.isTerminal && this.#evicted.has(located.root);
  }

  /** Resolves once the automatic releases of finished trees scheduled so far are done. */
  settleReleases(): Promise<void> {
    return this.#releases;
  }

  /**
   * Drops what this server remembers about a tree it no longer owns. Child → root mappings stay
   * (stored children are found through them) unless the tree is purged.
   */
  #forget(root: string, purged = false): void {
    this.#localRoots.delete(root);
    this.#evicted.delete(root);
    this.#finished.delete(root);
    for (const pid of [...this.#waitSince.keys()]) {
      if (pid === root || this.#processRoots.get(pid) === root) this.#waitSince.delete(pid);
    }
    if (!purged) return;
    for (const [pid, owner] of this.#processRoots) {
      if (owner === root) this.#processRoots.delete(pid);
    }
  }

  #processesByStatus(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const root of this.#localRoots) {
      const inspection = this.#inspectLocal(root);
      for (const entry of inspection?.processes ?? []) {
        const status = entry.snapshot.status;
        counts.set(status, (counts.get(status) ?? 0) + 1);
      }
    }
    return counts;
  }

  // -------------------------------------------------------------------------------------------
  // Deployments

  deployments(): readonly DeploymentView[] {
    return this.#catalog.current().map(deploymentView);
  }

  deployment(name: string): DeploymentView {
    return deploymentView(this.#catalog.byName(name));
  }

  // -------------------------------------------------------------------------------------------
  // Start

  async startProcess(request: StartRequest, idempotencyKey?: string): Promise<StartOutcome> {
    this.#admit();
    const prepared = this.#prepareStart(request);
    if (idempotencyKey === undefined) return { created: true, process: await this.#start(prepared, undefined) };
    const keyDigest = idempotencyKeyDigest(idempotencyKey);
    const digest = requestDigest(request);
    const previous = this.#starts.get(keyDigest) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.#idempotentStart(prepared, keyDigest, digest));
    this.#starts.set(keyDigest, run);
    try {
      return await run;
    } finally {
      if (this.#starts.get(keyDigest) === run) this.#starts.delete(keyDigest);
    }
  }

  /**
   * At most one start per key, in this server and across servers sharing the Redis: the claim returns
   * the earlier start's record, or reserves the key for this start (waiting, bounded, while another
   * start holds it); a start that fails gives the reservation up.
   */
  async #idempotentStart(prepared: PreparedStart, keyDigest: string, digest: string): Promise<StartOutcome> {
    const claim = await this.#storeCall('idempotency claim', () => this.#idempotency.claim(keyDigest, this.#shutdown.signal));
    if (claim.kind === 'existing') {
      if (claim.record.requestDigest !== digest) {
        throw serverError(ServerErrorCode.idempotencyKeyConflict, 'this Idempotency-Key was used with a different request body');
      }
      return { created: false, process: await this.inspectProcess(claim.record.processId) };
    }
    try {
      this.#admit();
      const intent: IdempotencyIntent = {
        keyDigest,
        requestDigest: digest,
        ttlMs: this.#config.idempotencyTtlMs,
        ...(claim.token === undefined ? {} : { token: claim.token }),
      };
      return { created: true, process: await this.#start(prepared, intent) };
    } catch (error) {
      await this.#idempotency.release(keyDigest, claim.token).catch((failure: unknown) => {
        this.#logger?.warn({ err: failure }, 'could not give up an idempotency reservation (it expires on its own)');
      });
      throw error;
    }
  }

  #prepareStart(request: StartRequest): PreparedStart {
    if (typeof request !== 'object' || request === null) throw invalidRequest('a start request must be an object');
    if (typeof request.deployment !== 'string') throw invalidRequest('deployment must be a deployment name');
    const deployment = this.#catalog.byName(request.deployment);
    if (request.input === undefined) throw invalidRequest('input is required');
    let input: Payload;
    try {
      input = Payload.encode(request.input);
    } catch (error) {
      throw invalidRequest(`input is not valid JSON: ${messageOf(error)}`, error);
    }
    const grant = this.#config.grants;
    let requested: Grant;
    try {
      requested = {
        budget: request.budget === undefined ? grant.budget : parseBudget(request.budget, '/budget'),
        treeLimits: request.treeLimits === undefined ? grant.treeLimits : parseTreeLimits(request.treeLimits, '/treeLimits', grant.treeLimits),
        capabilities: request.capabilities === undefined ? grant.capabilities : parseCapabilities(request.capabilities, '/capabilities'),
      };
    } catch (error) {
      if (error instanceof AuthorityShapeError) throw invalidRequest(error.message, error);
      throw error;
    }
    const excess = excessOf(grant, requested);
    if (excess.length > 0) {
      throw serverError(ServerErrorCode.authorityExceeded, `the start asks for more than the server grants: ${excess.join('; ')}`);
    }
    return {
      deployment,
      input,
      budget: request.budget === undefined ? undefined : requested.budget,
      treeLimits: request.treeLimits === undefined ? undefined : requested.treeLimits,
      capabilities: request.capabilities === undefined ? undefined : requested.capabilities,
    };
  }

  async #start(prepared: PreparedStart, intent: IdempotencyIntent | undefined): Promise<ProcessView> {
    const process = await this.#engine.start(prepared.deployment, prepared.input, {
      budget: prepared.budget,
      treeLimits: prepared.treeLimits,
      capabilities: prepared.capabilities,
      hostValues: intent === undefined ? undefined : { [idempotencyHostValue]: intent },
    });
    const root = process.id.toString();
    this.#localRoots.add(root);
    return this.#viewOf(await this.#locateOrThrow(root));
  }

  #admit(): void {
    if (this.#closing) throw serverError(ServerErrorCode.shuttingDown, 'the server is shutting down and admits no new work');
  }

  // -------------------------------------------------------------------------------------------
  // Processes

  async listProcesses(query: ProcessListQuery): Promise<Page<ProcessSummary>> {
    const status = query.status;
    if (status !== undefined && !isStatus(status)) throw invalidRequest(`status must be one of running, waiting, paused, completed, failed, canceled, timed_out, killed`);
    const limit = pageLimit(query.limit, listLimits.processes);
    let before: string | undefined;
    if (query.cursor !== undefined) {
      before = decodeCursor(query.cursor);
      if (before === undefined || !isRootIndexMember(before)) throw invalidRequest('cursor is not a cursor of this list');
    }
    const items: ProcessSummary[] = [];
    let last: string | undefined;
    const batch = Math.min(100, limit * 2);
    // A bounded scan: filters that match little return a shorter page with a cursor to continue.
    for (let scanned = 0; scanned < 20; scanned += 1) {
      const members = await this.#storeCall('process list', () => this.#roots.page(before, batch));
      for (const member of members) {
        before = member;
        const summary = await this.#summary(rootOfMember(member));
        if (summary === undefined) continue;
        if (status !== undefined && summary.status !== status) continue;
        if (query.deployment !== undefined && summary.deployment !== query.deployment) continue;
        items.push(summary);
        last = member;
        if (items.length === limit) return { items, nextCursor: encodeCursor(last) };
      }
      if (members.length < batch) return { items, nextCursor: null };
    }
    return { items, nextCursor: before === undefined ? null : encodeCursor(before) };
  }

  async #summary(root: string): Promise<ProcessSummary | undefined> {
    const local = this.#inspectLocal(root);
    const entry = local?.processes.find((process) => process.snapshot.processId.toString() === root);
    if (entry !== undefined) return summaryOf(entry.snapshot);
    const cached = this.#summaries.get(root);
    if (cached !== undefined) return cached;
    const head = await this.#loadHead(root);
    if (head === undefined) return undefined;
    const summary = summaryOf(head.root);
    if (head.root.isTerminal) {
      this.#summaries.set(root, summary);
      if (this.#summaries.size > 10_000) this.#summaries.delete(this.#summaries.keys().next().value as string);
    }
    return summary;
  }

  async inspectProcess(processId: string): Promise<ProcessView> {
    return this.#viewOf(await this.#locateOrThrow(processId));
  }

  async awaitResult(processId: string, waitMs: number, signal?: AbortSignal): Promise<ResultPoll> {
    if (typeof waitMs !== 'number' || !Number.isInteger(waitMs) || waitMs < 0 || waitMs > maxWaitMs) {
      throw invalidRequest(`waitMs must be an integer in 0..${maxWaitMs}`);
    }
    const located = await this.#locateOrThrow(processId);
    if (located.kind === 'stored') {
      const result = located.snapshot.result();
      return result === undefined ? { done: false, status: located.snapshot.status } : { done: true, result: this.#resultView(result) };
    }
    const current = located.entry.snapshot.result();
    if (current !== undefined) return { done: true, result: this.#resultView(current) };
    if (located.entry.runtimeError !== undefined) throw located.entry.runtimeError;
    if (waitMs === 0) return { done: false, status: located.entry.snapshot.status };
    const signals = [AbortSignal.timeout(waitMs), this.#shutdown.signal];
    if (signal !== undefined) signals.push(signal);
    try {
      const result = await located.handle.await({ signal: AbortSignal.any(signals) });
      return { done: true, result: this.#resultView(result) };
    } catch (error) {
      if (error instanceof RuntimeError) throw error;
      const now = await this.#locateOrThrow(processId);
      const snapshot = now.kind === 'local' ? now.entry.snapshot : now.snapshot;
      const result = snapshot.result();
      return result === undefined ? { done: false, status: snapshot.status } : { done: true, result: this.#resultView(result) };
    }
  }

  async deliverSignals(processId: string, signals: readonly SignalInput[]): Promise<{ accepted: boolean }> {
    const requests = signalRequests(signals);
    const located = await this.#locateOrThrow(processId);
    if (located.kind === 'stored') {
      if (this.#evictedFinished(located)) return signalsToFinished(located.snapshot, requests);
      throw notActive(located.root);
    }
    if (located.entry.snapshot.isTerminal) return this.#signalsToFinished(located.handle, requests);
    try {
      return { accepted: await located.handle.deliverSignals(...requests) };
    } catch (error) {
      // The process may have finished between the check and the delivery.
      if (error instanceof KernelError && error.code === ErrorCode.signalRejected) {
        const now = await this.#locateOrThrow(processId);
        if (now.kind === 'local' && now.entry.snapshot.isTerminal) return this.#signalsToFinished(now.handle, requests);
      }
      throw error;
    }
  }

  /** A terminal process: `{accepted: false}` only when every identity was accepted identically. */
  async #signalsToFinished(handle: Process, requests: readonly SignalRequest[]): Promise<{ accepted: boolean }> {
    const located = await this.#locateOrThrow(handle.id.toString());
    return signalsToFinished(located.kind === 'local' ? located.entry.snapshot : located.snapshot, requests);
  }

  async control(processId: string, action: ControlAction, reason?: string): Promise<void> {
    if (!['pause', 'resume', 'cancel', 'kill'].includes(action)) throw invalidRequest('action must be pause, resume, cancel or kill');
    if (reason !== undefined && !validDiagnostic(reason)) {
      throw invalidRequest('reason must be non-empty, trimmed text of at most 4096 UTF-8 bytes');
    }
    const located = await this.#locateOrThrow(processId);
    if (located.kind === 'stored') throw this.#evictedFinished(located) ? finished(processId) : notActive(located.root);
    const handle = located.handle;
    switch (action) {
      case 'pause':
        return handle.pause(reason ?? defaultReasons.pause);
      case 'resume':
        return handle.resume();
      case 'cancel':
        return handle.requestCancellation(reason ?? defaultReasons.cancel);
      case 'kill':
        return handle.kill(reason ?? defaultReasons.kill);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Effects

  async effects(processId: string): Promise<readonly EffectView[]> {
    const located = await this.#locateOrThrow(processId);
    return this.#effectViews(located);
  }

  async replayEffect(processId: string, effectId: string): Promise<EffectView> {
    const id = parseEffectId(effectId);
    const located = await this.#locateOrThrow(processId);
    await this.#checkEffect(located, id);
    if (located.kind === 'stored') throw this.#evictedFinished(located) ? finished(processId) : notActive(located.root);
    await located.handle.replayUnknownEffect(id);
    return this.#effectView(processId, id);
  }

  async resolveEffect(processId: string, effectId: string, resolution: { status: 'succeeded' | 'failed'; payload: Json }): Promise<EffectView> {
    const id = parseEffectId(effectId);
    if (typeof resolution !== 'object' || resolution === null || (resolution.status !== 'succeeded' && resolution.status !== 'failed')) {
      throw invalidRequest('a resolution is {status: "succeeded" | "failed", payload}');
    }
    if (resolution.payload === undefined) throw invalidRequest('a resolution needs a payload');
    let payload: Payload;
    try {
      payload = Payload.encode(resolution.payload);
    } catch (error) {
      throw invalidRequest(`payload is not valid JSON: ${messageOf(error)}`, error);
    }
    const located = await this.#locateOrThrow(processId);
    await this.#checkEffect(located, id);
    if (located.kind === 'stored') throw this.#evictedFinished(located) ? finished(processId) : notActive(located.root);
    await located.handle.resolveUnknownEffect(id, Settlement.of(resolution.status, payload));
    return this.#effectView(processId, id);
  }

  async #checkEffect(located: Located, id: EffectId): Promise<void> {
    const snapshot = located.kind === 'local' ? located.entry.snapshot : located.snapshot;
    if (snapshot.preparedEffect(id) !== undefined) return;
    const history = await this.#effectHistory(located.root, snapshot.processId.toString());
    if (!history.has(id.toString())) throw serverError(ServerErrorCode.effectNotFound, `process ${snapshot.processId.toString()} has no effect ${id.toString()}`);
  }

  async #effectView(processId: string, id: EffectId): Promise<EffectView> {
    const views = await this.#effectViews(await this.#locateOrThrow(processId));
    const view = views.find((candidate) => candidate.effectId === id.toString());
    if (view === undefined) throw serverError(ServerErrorCode.effectNotFound, `process ${processId} has no effect ${id.toString()}`);
    return view;
  }

  async #effectViews(located: Located): Promise<EffectView[]> {
    const snapshot = located.kind === 'local' ? located.entry.snapshot : located.snapshot;
    const pid = snapshot.processId;
    const history = await this.#effectHistory(located.root, pid.toString());
    const views = new Map<string, EffectView>();
    for (const [id, entry] of history) {
      const effectId = EffectId.parse(id);
      views.set(id, {
        effectId: id,
        stepSequence: entry.stepSequence,
        batchIndex: batchIndexOf(pid, BigInt(entry.stepSequence), effectId),
        target: entry.target,
        status: entry.resolved ? 'resolved' : entry.lastStatus === 'unknown' ? 'unknown' : entry.lastStatus === undefined ? 'pending' : 'settled',
        attempts: entry.attempts,
        settlement: null,
        diagnostic: null,
      });
    }
    const prepared = snapshot.prepared;
    for (const effect of prepared?.effects() ?? []) {
      const id = effect.id.toString();
      views.set(id, this.#preparedEffectView(effect, this.#toNumber(prepared?.stepSequence ?? 0n, 'stepSequence'), history.get(id)));
    }
    return [...views.values()].sort((a, b) => a.stepSequence - b.stepSequence || a.batchIndex - b.batchIndex);
  }

  #preparedEffectView(effect: PreparedEffect, stepSequence: number, history: EffectHistory | undefined): EffectView {
    const settlement = effect.settlement;
    let status: string;
    if (effect.phase === 'planned') status = 'planned';
    else if (effect.phase === 'pending') status = 'pending';
    else if (settlement?.status === 'unknown') status = 'unknown';
    else status = history?.resolved === true ? 'resolved' : 'settled';
    return {
      effectId: effect.id.toString(),
      stepSequence,
      batchIndex: effect.index,
      target: effect.effect.target,
      status,
      attempts: history?.attempts ?? 0,
      settlement:
        settlement === undefined
          ? null
          : { effectId: effect.id.toString(), status: settlement.status, payload: settlement.payload.decode<Json>() },
      diagnostic: failureView(effect.diagnostic ?? effect.failure),
    };
  }

  /** Effect facts of one process from its tree's log: attempts (`agent.effect.started`), finishes, resolutions. */
  async #effectHistory(root: string, processId: string): Promise<Map<string, EffectHistory>> {
    const history = new Map<string, EffectHistory>();
    await this.#scanLog(root, (record) => {
      if (record.processId !== processId || !record.type.startsWith('agent.effect.')) return;
      let data: { effect_id?: unknown; step_sequence?: unknown; payload?: Record<string, unknown> };
      try {
        data = JSON.parse(record.data) as typeof data;
      } catch {
        return;
      }
      if (typeof data.effect_id !== 'string') return;
      let entry = history.get(data.effect_id);
      if (entry === undefined) {
        entry = {
          stepSequence: typeof data.step_sequence === 'number' ? data.step_sequence : 0,
          target: 'dispatcher',
          attempts: 0,
          resolved: false,
          lastStatus: undefined,
        };
        history.set(data.effect_id, entry);
      }
      const target = data.payload?.target;
      if (target === 'framework' || target === 'dispatcher') entry.target = target;
      if (record.type === eventNames.effectStarted) entry.attempts += 1;
      if (record.type === eventNames.effectFinished) entry.lastStatus = String(data.payload?.settlement_status ?? '');
      if (record.type === eventNames.effectResolved) entry.resolved = true;
    });
    return history;
  }

  async #scanLog(root: string, visit: (record: StoredLogRecord) => void): Promise<void> {
    let cursor = '0';
    for (;;) {
      const page = await this.#storeCall('event log read', () => this.#log.readAfter(root, cursor, readBatch));
      for (const record of page) {
        cursor = record.position;
        visit(record);
      }
      if (page.length < readBatch) return;
    }
  }

  // -------------------------------------------------------------------------------------------
  // Trees

  async inspectTree(rootId: string): Promise<TreeView> {
    const root = parseRoot(rootId);
    const local = this.#inspectLocal(root);
    if (local !== undefined) return this.#localTreeView(local);
    const head = await this.#loadHead(root);
    if (head === undefined) throw treeNotFound(root);
    return {
      rootId: root,
      incarnationId: head.incarnationId.toString(),
      headDigest: head.digest.toString(),
      commitPending: false,
      freeze: 'none',
      stopped: false,
      active: false,
      processes: head.processSnapshots().map((snapshot) => this.#processView(snapshot, 'inactive', undefined)),
    };
  }

  #localTreeView(inspection: TreeInspection): TreeView {
    const root = inspection.rootId.toString();
    return {
      rootId: root,
      incarnationId: inspection.incarnationId.toString(),
      headDigest: inspection.headDigest.toString(),
      commitPending: this.#committer.commitPending(root),
      freeze: (this.#captures.get(root) ?? 0) > 0 ? 'acquiring' : 'none',
      stopped: inspection.stopped,
      active: true,
      processes: inspection.processes.map((entry) => this.#processView(entry.snapshot, entry.work, entry.runtimeError)),
    };
  }

  async snapshot(rootId: string): Promise<SnapshotView> {
    const root = parseRoot(rootId);
    const head = await this.#loadHead(root);
    if (head === undefined) throw treeNotFound(root);
    return { json: head.json(), digest: head.digest.toString() };
  }

  async captureTree(rootId: string): Promise<SnapshotView> {
    const root = parseRoot(rootId);
    if (this.#inspectLocal(root) === undefined) {
      const head = await this.#loadHead(root);
      if (head === undefined) throw treeNotFound(root);
      // A finished tree released to bound memory is quiescent: its stored head is the cut.
      if (this.#evicted.has(root) && head.processSnapshots().every((process) => process.isTerminal)) {
        return { json: head.json(), digest: head.digest.toString() };
      }
      throw notActive(root);
    }
    this.#captures.set(root, (this.#captures.get(root) ?? 0) + 1);
    try {
      const head = await this.#engine.captureTree(ProcessId.parse(root));
      return { json: head.json(), digest: head.digest.toString() };
    } finally {
      const left = (this.#captures.get(root) ?? 1) - 1;
      if (left === 0) this.#captures.delete(root);
      else this.#captures.set(root, left);
    }
  }

  async restoreTree(rootId: string): Promise<TreeView> {
    const root = parseRoot(rootId);
    this.#admit();
    const running = this.#restores.get(root);
    if (running !== undefined) return running;
    const restore = this.#restore(root);
    this.#restores.set(root, restore);
    try {
      return await restore;
    } finally {
      this.#restores.delete(root);
    }
  }

  async #restore(root: string): Promise<TreeView> {
    const local = this.#inspectLocal(root);
    if (local !== undefined) {
      // Already owned here: a no-op, unless this writer stopped; then take over from the stored head.
      if (!local.stopped) return this.#localTreeView(local);
      await this.#engine.releaseTree(ProcessId.parse(root));
      this.#forget(root);
    }
    const head = await this.#loadHead(root);
    if (head === undefined) throw treeNotFound(root);
    let deployment: Deployment;
    try {
      deployment = this.#catalog.resolve(head.root.deploymentRef);
    } catch (error) {
      throw serverError(ServerErrorCode.deploymentNotFound, `tree ${root} runs ${head.root.deploymentRef.toString()}, which this server does not have`, error);
    }
    await this.#engine.restoreTree(deployment, head);
    this.#localRoots.add(root);
    for (const snapshot of head.processSnapshots()) {
      const pid = snapshot.processId.toString();
      if (pid !== root) this.#processRoots.set(pid, root);
    }
    this.#summaries.delete(root);
    const inspection = this.#inspectLocal(root);
    if (inspection === undefined) throw treeNotFound(root);
    return this.#localTreeView(inspection);
  }

  async releaseTree(rootId: string, purge: boolean): Promise<void> {
    const root = parseRoot(rootId);
    const local = this.#inspectLocal(root);
    if (local !== undefined) {
      const live = local.processes.find((entry) => !entry.snapshot.isTerminal);
      if (live !== undefined && !local.stopped) {
        throw new KernelError(ErrorCode.treeLive, `tree ${root} is live: process ${live.snapshot.processId.toString()} is ${live.snapshot.status}; cancel or kill it first`);
      }
      await this.#engine.releaseTree(ProcessId.parse(root));
      this.#forget(root);
    }
    if (!purge) {
      if (local === undefined && (await this.#loadHead(root)) === undefined) throw treeNotFound(root);
      return;
    }
    const outcome = await this.#storeCall('purge', () => this.#committer.purgeTree(ProcessId.parse(root)));
    if (outcome === 'absent' && local === undefined) throw treeNotFound(root);
    this.#summaries.delete(root);
    this.#forget(root, true);
  }

  // -------------------------------------------------------------------------------------------
  // Waits and the log

  async waits(): Promise<readonly WaitView[]> {
    const waits: WaitView[] = [];
    for (const root of this.#localRoots) {
      const inspection = this.#inspectLocal(root);
      if (inspection === undefined || inspection.stopped) continue;
      for (const entry of inspection.processes) {
        const snapshot = entry.snapshot;
        const waitId = snapshot.waitId;
        const waitKind = snapshot.waitKind;
        if (snapshot.isTerminal || waitId === undefined || waitKind === undefined) continue;
        const wait = snapshot.mailbox.wait(waitId);
        if (wait === undefined || wait.answered) continue;
        const pid = snapshot.processId.toString();
        waits.push({
          processId: pid,
          rootId: root,
          waitId: waitId.toString(),
          waitKind,
          deployment: snapshot.deploymentRef.name,
          since: this.#waitSince.get(pid) ?? snapshot.startedAt,
        });
      }
    }
    return waits.sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : 0));
  }

  async events(processId: string, query: LogQuery): Promise<LogPage> {
    const located = await this.#locateOrThrow(processId);
    const after = query.after ?? '0';
    if (!isPosition(after)) throw invalidRequest('after must be a log position (a decimal number or <n>-<m>)');
    const limit = pageLimit(query.limit, listLimits.events);
    const types = query.types === undefined || query.types.length === 0 ? undefined : new Set(query.types);
    const items: LogEntry[] = [];
    let trimmed: LogPage['trimmed'];
    let cursor = after;
    // A bounded scan, as in listProcesses: a selective filter may return a short page with a cursor.
    for (let scanned = 0; scanned < 20; scanned += 1) {
      const page = await this.#storeCall('event log read', () => this.#log.readAfter(located.root, cursor, readBatch));
      for (const record of page) {
        if (!followsDirectly(record, cursor)) {
          // Retention trimmed what follows the cursor. From the beginning that only moves the start;
          // from a client's cursor it is refused, at once or (after what this page already holds) on
          // the next page, never skipped.
          if (cursor !== after) return withTrimmed({ items, nextCursor: cursor }, trimmed);
          if (!isLogStart(after)) throw new HistoryTrimmedError(located.root, cursor, record.position);
          trimmed = { firstAvailable: record.position };
        }
        cursor = record.position;
        if (!matches(record, types, query.processId)) continue;
        items.push(logEntry(record));
        if (items.length === limit) return withTrimmed({ items, nextCursor: cursor }, trimmed);
      }
      if (page.length < readBatch) return withTrimmed({ items, nextCursor: null }, trimmed);
    }
    return withTrimmed({ items, nextCursor: cursor }, trimmed);
  }

  stream(rootId: string, options: StreamOptions): AsyncIterable<LogEntry> {
    const { root, after, types } = this.#streamArguments(rootId, options);
    return this.#streamEntries(root, after, types, options, false);
  }

  async openStream(rootId: string, options: StreamOptions): Promise<AsyncIterable<LogEntry>> {
    const { root, after, types } = this.#streamArguments(rootId, options);
    if (!(await this.#treeExists(root))) throw treeNotFound(root);
    if (!isLogStart(after)) {
      const [next] = await this.#storeCall('event log read', () => this.#log.readAfter(root, after, 1));
      if (next !== undefined && !followsDirectly(next, after)) throw new HistoryTrimmedError(root, after, next.position);
    }
    return this.#streamEntries(root, after, types, options, true);
  }

  #streamArguments(rootId: string, options: StreamOptions): { root: string; after: string; types: ReadonlySet<string> | undefined } {
    const root = parseRoot(rootId);
    const after = options.after ?? '0';
    if (!isPosition(after)) throw invalidRequest('the stream cursor (Last-Event-ID or after) must be a log position');
    if (!(options.signal instanceof AbortSignal)) throw invalidRequest('a stream needs an AbortSignal');
    const types = options.types === undefined || options.types.length === 0 ? undefined : new Set(options.types);
    return { root, after, types };
  }

  async *#streamEntries(
    root: string,
    after: string,
    types: ReadonlySet<string> | undefined,
    options: StreamOptions,
    checked: boolean,
  ): AsyncGenerator<LogEntry, void, undefined> {
    const stop = AbortSignal.any([options.signal, this.#shutdown.signal]);
    if (!checked && !(await this.#treeExists(root))) throw treeNotFound(root);
    let cursor = after;
    let ended = false;
    // Every record must directly follow the last one read (a stream from the beginning may start at the
    // oldest retained entry): a reader that fell behind the log's retention is told, never skipped ahead.
    const follow = (record: StoredLogRecord): void => {
      if (!followsDirectly(record, cursor) && !(cursor === after && isLogStart(after))) {
        throw new HistoryTrimmedError(root, cursor, record.position);
      }
      cursor = record.position;
    };
    // 1. What the log holds after the cursor.
    for (;;) {
      if (stop.aborted) return;
      const page = await this.#storeCall('event log read', () => this.#log.readAfter(root, cursor, readBatch));
      for (const record of page) {
        follow(record);
        if (isRootFinished(record, root)) ended = true;
        if (matches(record, types, options.processId)) yield logEntry(record);
        if (stop.aborted) return;
      }
      if (page.length < readBatch) break;
    }
    // 2. Live entries, unless the root already finished (its terminal event may lie before the cursor).
    if (!ended && !(await this.#rootFinished(root))) {
      for await (const record of this.#log.tail(root, cursor, stop)) {
        follow(record);
        if (matches(record, types, options.processId)) yield logEntry(record);
        if (isRootFinished(record, root)) {
          ended = true;
          break;
        }
      }
      if (!ended) return;
    }
    // 3. Drain: the subtree's trailing entries (attempt events after the terminal commit, deltas).
    if (stop.aborted) return;
    const handle = this.#engine.process(ProcessId.parse(root));
    if (handle !== undefined) {
      await handle.join({ signal: stop }).catch(() => undefined);
      if (!stop.aborted) await abortable(this.#engine.flushDeltas(), stop).catch(() => undefined);
    }
    for (;;) {
      if (stop.aborted) return;
      const page = await this.#storeCall('event log read', () => this.#log.readAfter(root, cursor, readBatch));
      for (const record of page) {
        follow(record);
        if (matches(record, types, options.processId)) yield logEntry(record);
        if (stop.aborted) return;
      }
      if (page.length < readBatch) return;
    }
  }

  async #rootFinished(root: string): Promise<boolean> {
    const local = this.#inspectLocal(root);
    if (local !== undefined) {
      const entry = local.processes.find((process) => process.snapshot.processId.toString() === root);
      return entry?.snapshot.isTerminal ?? true;
    }
    const head = await this.#loadHead(root);
    return head === undefined || head.root.isTerminal;
  }

  async #treeExists(root: string): Promise<boolean> {
    return this.#inspectLocal(root) !== undefined || (await this.#loadHead(root)) !== undefined;
  }

  // -------------------------------------------------------------------------------------------
  // Health, metrics, shutdown

  async readiness(): Promise<Readiness> {
    const checks: Record<string, string> = { engine: this.#closing ? 'shutting down' : 'ok', dispatch: 'ok' };
    if (this.#redis !== undefined) {
      const redis = this.#redis;
      try {
        const reply = await withTimeout(redis.ping(), 1_000);
        checks.redis = reply === 'PONG' ? 'ok' : `unexpected reply ${String(reply)}`;
      } catch (error) {
        checks.redis = `unreachable: ${messageOf(error)}`;
      }
    }
    return { ready: Object.values(checks).every((value) => value === 'ok'), checks };
  }

  async metrics(): Promise<{ contentType: string; body: string }> {
    const registry = this.#metrics.registry;
    return { contentType: registry.contentType, body: await registry.metrics() };
  }

  /**
   * Graceful shutdown within `deadlineMs` (default `SCOPE_SHUTDOWN_MS`): stop admission (starts and
   * restores answer `shutting_down`); let local trees reach safe boundaries (up to half the
   * deadline); seal the committer so nothing new commits, and let in-flight commits finish; flush
   * deltas; end every stream; close the log and Redis. Trees cut short stay restorable from their
   * stored head. Idempotent.
   */
  close(deadlineMs: number = this.#config.shutdownMs): Promise<void> {
    this.#closed ??= this.#close(Math.max(0, deadlineMs));
    return this.#closed;
  }

  async #close(deadlineMs: number): Promise<void> {
    this.#closing = true;
    const deadline = performance.now() + deadlineMs;
    const left = (): number => Math.max(0, deadline - performance.now());
    const quiesce = [...this.#localRoots].map((root) => this.#engine.captureTree(ProcessId.parse(root)).then(
      () => undefined,
      () => undefined,
    ));
    await withTimeout(Promise.all(quiesce), left() / 2).catch(() => undefined);
    this.#committer.seal();
    this.#dispatchStop.abort(serverError(ServerErrorCode.shuttingDown, 'the server is shutting down'));
    await withTimeout(this.#committer.drained(), left()).catch(() => this.#logger?.warn('shutdown deadline passed with commits in flight'));
    await withTimeout(this.#engine.flushDeltas(), left()).catch(() => undefined);
    this.#shutdown.abort(serverError(ServerErrorCode.shuttingDown, 'the server is shutting down'));
    await this.#log.close().catch(() => undefined);
    await this.#redisStore?.close().catch(() => undefined);
    await this.#engine.close().catch(() => undefined);
    if (this.#redis !== undefined && this.#ownsRedis) {
      const redis = this.#redis;
      await withTimeout(redis.quit(), Math.max(left(), 100)).catch(() => undefined);
      redis.disconnect();
    }
  }

  // -------------------------------------------------------------------------------------------
  // Lookup and views

  /** The Engine's inspection of a tree it owns, or undefined (the Engine is the authority, not #localRoots). */
  #inspectLocal(root: string): TreeInspection | undefined {
    try {
      const inspection = this.#engine.inspectTree(ProcessId.parse(root));
      this.#localRoots.add(root);
      return inspection;
    } catch (error) {
      if (error instanceof KernelError && error.code === ErrorCode.treeNotFound) {
        this.#localRoots.delete(root);
        return undefined;
      }
      throw error;
    }
  }

  async #loadHead(root: string): Promise<TreeSnapshot | undefined> {
    return this.#storeCall('head load', () => this.#committer.loadTree(ProcessId.parse(root)));
  }

  async #locate(processId: string): Promise<Located | undefined> {
    const id = parseProcessId(processId);
    const handle = this.#engine.process(id);
    if (handle !== undefined) {
      const root = handle.relation.rootId.toString();
      const inspection = this.#inspectLocal(root);
      const entry = inspection?.processes.find((process) => process.snapshot.processId.equals(id));
      if (inspection !== undefined && entry !== undefined) return { kind: 'local', root, handle, inspection, entry };
    }
    const root = this.#processRoots.get(processId) ?? processId;
    const head = await this.#loadHead(root);
    const snapshot = head?.process(id);
    if (head === undefined || snapshot === undefined) return undefined;
    return { kind: 'stored', root, head, snapshot };
  }

  async #locateOrThrow(processId: string): Promise<Located> {
    const located = await this.#locate(processId);
    if (located === undefined) throw serverError(ServerErrorCode.processNotFound, `no process ${processId}`);
    return located;
  }

  #viewOf(located: Located): ProcessView {
    return located.kind === 'local'
      ? this.#processView(located.entry.snapshot, located.entry.work, located.entry.runtimeError)
      : this.#processView(located.snapshot, 'inactive', undefined);
  }

  #processView(snapshot: ProcessSnapshot, work: string, runtimeError: RuntimeError | undefined): ProcessView {
    const relation = snapshot.relation;
    const result = snapshot.result();
    return {
      processId: snapshot.processId.toString(),
      status: snapshot.status,
      rootId: relation.rootId.toString(),
      parentId: relation.parentId?.toString() ?? null,
      depth: relation.depth,
      deployment: snapshot.deploymentRef.name,
      deploymentRef: snapshot.deploymentRef.toString(),
      startedAt: snapshot.startedAt,
      usage: this.#usageView(snapshot.usage()),
      budget: budgetView(snapshot.budget, (value, what) => this.#toNumber(value, what)),
      capabilities: snapshot.capabilities.values(),
      waitId: snapshot.waitId?.toString() ?? null,
      waitKind: snapshot.waitKind ?? null,
      pauseReason: snapshot.pauseReason ?? null,
      unknownEffectIds: snapshot.unknownEffectIds().map((id) => id.toString()),
      receipts: snapshot.signalReceipts().map((receipt) => ({
        id: receipt.id.toString(),
        waitId: receipt.waitId?.toString() ?? null,
        payloadDigest: receipt.payloadDigest.toString(),
        arrivalSequence: this.#toNumber(receipt.arrivalSequence, 'arrivalSequence'),
        consumed: receipt.consumed,
        payload: receipt.pendingSignal()?.payload.decode<Json>() ?? null,
      })),
      settlements: (snapshot.prepared?.effects() ?? []).flatMap((effect) =>
        effect.settlement === undefined
          ? []
          : [{ effectId: effect.id.toString(), status: effect.settlement.status, payload: effect.settlement.payload.decode<Json>() }],
      ),
      result: result === undefined ? null : this.#resultView(result),
      work,
      runtimeError: runtimeError === undefined ? null : runtimeErrorView(runtimeError),
    };
  }

  #resultView(result: Result): ResultView {
    const termination = result.termination;
    return {
      processId: result.processId.toString(),
      status: result.status,
      cause: termination.cause,
      reason: termination.reason === '' ? null : termination.reason,
      output: result.output === undefined ? null : result.output.decode<Json>(),
      failure: failureView(termination.failure),
      unresolvedEffectIds: termination.unresolvedEffectIds.map((id) => id.toString()),
      startedAt: result.startedAt,
      finishedAt: result.finishedAt,
      usage: this.#usageView(result.usage),
    };
  }

  #usageView(usage: Usage): UsageView {
    return {
      committedSteps: this.#toNumber(usage.committedSteps, 'usage.committedSteps'),
      preparedEffects: this.#toNumber(usage.preparedEffects, 'usage.preparedEffects'),
      acceptedSignals: this.#toNumber(usage.acceptedSignals, 'usage.acceptedSignals'),
      droppedDeltas: this.#toNumber(usage.droppedDeltas, 'usage.droppedDeltas'),
    };
  }

  #toNumber(value: bigint, what: string): number {
    const number = safeNumber(value);
    if (number === undefined) throw serverError(ServerErrorCode.valueNotRepresentable, `${what} ${value} does not fit a JSON-safe number`);
    return number;
  }

  /** Runs a store call; raw client errors become `committer_unavailable` (never a raw Error). */
  async #storeCall<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof KernelError) throw error;
      throw new KernelError(ErrorCode.committerUnavailable, `${what} failed: ${messageOf(error)}`, { cause: error });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

function connect(url: string | undefined, logger: Logger | undefined): Redis {
  if (url === undefined) throw new KernelError('invalid_server_config', 'Redis mode needs SCOPE_REDIS_URL');
  const redis = new Redis(url, { maxRetriesPerRequest: 3, enableOfflineQueue: true });
  // Load the commit scripts once so the first commits run EVALSHA without a NOSCRIPT round trip
  // (that fallback would reorder them after best-effort appends issued in between).
  for (const script of luaScripts().values()) void redis.script('LOAD', script.lua).catch(() => undefined);
  // ioredis reconnects by itself; errors are logged (readiness reports the outage), never thrown.
  let last = '';
  redis.on('error', (error: Error) => {
    if (error.message !== last) logger?.warn({ err: error }, 'redis connection error');
    last = error.message;
  });
  redis.on('ready', () => {
    last = '';
  });
  return redis;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function parseProcessId(text: string): ProcessId {
  try {
    return ProcessId.parse(text);
  } catch (error) {
    throw invalidRequest(`${JSON.stringify(text)} is not a process id`, error);
  }
}

function parseRoot(text: string): string {
  return parseProcessId(text).toString();
}

function parseEffectId(text: string): EffectId {
  try {
    return EffectId.parse(text);
  } catch (error) {
    throw invalidRequest(`${JSON.stringify(text)} is not an effect id`, error);
  }
}

function treeNotFound(root: string): KernelError {
  return serverError(ServerErrorCode.treeNotFound, `no tree ${root}`);
}

function finished(processId: string): KernelError {
  return new KernelError(ErrorCode.processFinished, `process ${processId} has finished`);
}

/** Signals to a terminal process: `{accepted: false}` only when every identity was accepted identically. */
function signalsToFinished(snapshot: ProcessSnapshot, requests: readonly SignalRequest[]): { accepted: boolean } {
  if (requests.every((request) => snapshot.mailbox.receipt(request.id)?.matches(request) === true)) return { accepted: false };
  throw finished(snapshot.processId.toString());
}

function notActive(root: string): KernelError {
  return serverError(ServerErrorCode.treeNotActive, `tree ${root} is stored but not active in this server; restore it first (POST /v1/trees/${root}/restore)`);
}

function signalRequests(signals: readonly SignalInput[]): SignalRequest[] {
  if (!Array.isArray(signals) || signals.length === 0) throw invalidRequest('signals must be a non-empty array');
  if (signals.length > maxSignalsPerBatch) throw invalidRequest(`at most ${maxSignalsPerBatch} signals per batch`);
  return signals.map((input, index) => {
    if (typeof input !== 'object' || input === null) throw invalidRequest(`signals/${index} must be an object`);
    if (input.payload === undefined) throw invalidRequest(`signals/${index}/payload is required`);
    try {
      return SignalRequest.create({
        id: input.id,
        waitId: input.waitId === undefined ? undefined : WaitId.parse(input.waitId),
        payload: Payload.encode(input.payload),
      });
    } catch (error) {
      throw invalidRequest(`signals/${index}: ${messageOf(error)}`, error);
    }
  });
}

function deploymentView(deployment: Deployment): DeploymentView {
  const descriptor = deployment.descriptor;
  return {
    name: descriptor.name,
    description: descriptor.description,
    deploymentRef: deployment.ref.toString(),
    inputSchema: JSON.parse(descriptor.inputSchema.json()) as Json,
    outputSchema: JSON.parse(descriptor.outputSchema.json()) as Json,
    signalSchema: JSON.parse(descriptor.signalSchema.json()) as Json,
  };
}

function summaryOf(snapshot: ProcessSnapshot): ProcessSummary {
  return {
    processId: snapshot.processId.toString(),
    deployment: snapshot.deploymentRef.name,
    status: snapshot.status,
    startedAt: snapshot.startedAt,
  };
}

function failureView(failure: { kind: string; code: string; message: string } | undefined): FailureView | null {
  return failure === undefined ? null : { kind: failure.kind, code: failure.code, message: failure.message };
}

function runtimeErrorView(error: RuntimeError): RuntimeErrorView {
  return {
    code: error.classification().code,
    message: error.message,
    headDigest: error.headDigest.toString(),
    incarnationId: error.incarnationId.toString(),
    unresolvedEffectIds: error.unresolvedEffectIds.map((id) => id.toString()),
  };
}

/** The batch index of `id` in step `stepSequence` of `processId` (derived identities; -1 if not found). */
function batchIndexOf(processId: ProcessId, stepSequence: bigint, id: EffectId): number {
  if (stepSequence < 1n) return -1;
  for (let index = 0; index < 1024; index += 1) {
    if (EffectId.derive(processId, stepSequence, index).equals(id)) return index;
  }
  return -1;
}

function pageLimit(value: number | undefined, bounds: { readonly fallback: number; readonly max: number }): number {
  if (value === undefined) return bounds.fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > bounds.max) {
    throw invalidRequest(`limit must be an integer in 1..${bounds.max}`);
  }
  return value;
}

function encodeCursor(member: string): string {
  return Buffer.from(member, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string | undefined {
  if (typeof cursor !== 'string' || !/^[A-Za-z0-9_-]{1,512}$/.test(cursor)) return undefined;
  return Buffer.from(cursor, 'base64url').toString('utf8');
}

function matches(record: StoredLogRecord, types: ReadonlySet<string> | undefined, processId: string | undefined): boolean {
  return (types === undefined || types.has(record.type)) && (processId === undefined || record.processId === processId);
}

function isRootFinished(record: StoredLogRecord, root: string): boolean {
  return record.type === eventNames.processFinished && record.processId === root;
}

/** Whether a cursor means "from the beginning" (`0`, or `0-0`): the oldest entry the log still holds. */
function isLogStart(position: string): boolean {
  return comparePositions(position, '0') === 0;
}

function withTrimmed(page: Page<LogEntry>, trimmed: LogPage['trimmed']): LogPage {
  return trimmed === undefined ? page : { ...page, trimmed };
}

function logEntry(record: StoredLogRecord): LogEntry {
  return { position: record.position, type: record.type, processId: record.processId, data: JSON.parse(record.data) as Json };
}

/** `promise`, or a rejection once `ms` passed (the timer never outlives the race). */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new KernelError('timeout', `no answer within ${Math.round(ms)} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

