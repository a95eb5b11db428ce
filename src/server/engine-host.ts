// Over 500 lines: the one class implementing every Host operation; the rules live in its parts (residency, starts, log reader, …).
import type { Logger } from 'pino';
import { type Clock, type Delta, type Deployment, type Descriptor, EffectId, Engine, ErrorCode, type Event, eventNames, KernelError, Payload, type Process, ProcessId, type ProcessSnapshot, RuntimeError, Settlement, SignalRequest, type TreeSnapshot, validDiagnostic, WaitId } from '../kernel/index.js';
import { codedError, HostErrorCode, invalidRequest } from '../errors.js';
import type { RedisClient } from '../store/redis/connection.js';
import { deltaType } from '../store/event-log.js';
import { abortable, linkedAbort } from '../kernel/deferred.js';
import { sharedAbortController } from '../store/shared-abort.js';
import { createBackend, type Backend } from './backend.js';
import { DispatchPermits } from '../store/redis/dispatch-permits.js';
import { BullmqTransport } from '../transport/bullmq/bullmq-transport.js';
import { type ServedRefView, workerReadiness } from '../transport/bullmq/worker-readiness.js';
import type { LiveWorker } from '../store/redis/worker-registry.js';
import { trustsLateReports } from '../transport/late-reports.js';
import { transportOf } from '../transport/placement.js';
import { AttemptWorkers } from './attempt-workers.js';
import { DeploymentCatalog, type DeploymentEntry, deploymentOf, rebindEntry } from './catalog.js';
import type { ServerConfig } from './config.js';
import { demoEntries } from './demos.js';
import type { ModelDispatcherOptions } from './model/model-settings.js';
import { effectViews, hasEffect } from './effect-history.js';
import { watchForFinish } from './finish-watch.js';
import type {
  BulkControlOutcome,
  BulkControlRequest,
  ControlAction,
  ControlRequestOptions,
  TreeControlOutcome,
  DeploymentVersionsView,
  DeploymentView,
  EffectQuery,
  EffectView,
  GateAnswerInput,
  GateAnswerOutcome,
  GateQuery,
  GateView,
  AnyGateView,
  HostGateAnswered,
  HostGateAnswerPoll,
  HostGateOpened,
  HostGateOpenRequest,
  HostGateView,
  Host,
  HostTelemetry,
  Json,
  LogPage,
  LogQuery,
  NodeView,
  Page,
  ProcessListQuery,
  ProcessSummary,
  ProcessView,
  Readiness,
  ReceiptQuery,
  ReceiptView,
  ResultPoll,
  RestoreOptions,
  SignalInput,
  SnapshotView,
  StartOutcome,
  StartRequest,
  StreamOptions,
  TreeStream,
  TreeFaultView,
  TreeView,
  UnknownEffectQuery,
  UnknownEffectView,
  WaitQuery,
  WaitView,
} from './host.js';
import { defaultCaptureWaitMs } from './host.js';
import { lateReportOf } from './late-report.js';
import { waitPage } from './wait-page.js';
import { unknownEffectPage } from './unknown-effects.js';
import { GateService, type MailboxWait } from './gates/gate-service.js';
import { PolicyRunner } from './gates/policy-runner.js';
import { defaultPolicyBreakerFailures, PolicyBreaker, type PolicyBreakerView } from './gates/policy-breaker.js';
import type { PolicyGate } from './gates/gate-policies.js';
import { HostGates, isHostGateId } from './gates/host-gates.js';
import { gateDefaults } from './gates/gate-config.js';
import { gatePage } from './gates/gate-page.js';
import { type Agency, agencyOf, agencyRecordSuffix } from './signal-agency.js';
import { controlHostValues, controlRecordSuffix, type ControlRecordEntry, decodeControlRecord } from './control-agency.js';
import { LogReader } from './log-reader.js';
import { Hibernation } from './hibernation.js';
import { HostMetrics } from './metrics.js';
import { ProcessList } from './process-list.js';
import { parseProcessId, processFinished, snapshotOf, TreeResidency, treeNotFound, type Located } from './residency.js';
import { Starts } from './starts.js';
import { InterruptBarrier } from './interrupt-barrier.js';
import { decodeInterruptRecord, headSettled, interruptRecordSuffix, interruptReleaseHostValues } from './interrupt-record.js';
import { defaultInterruptReleaseMs } from './control-config.js';
import { TreeControl } from './tree-control.js';
import { bulkControl } from './bulk-control.js';
import { Succession } from './succession.js';
import { versionCensus } from './version-census.js';
import { defaultTenant } from './tenancy.js';
import { storeCall } from './store-call.js';
import { deploymentView, processView, resultView, toNumber } from './views.js';
import { WaitInbox } from './waits.js';
import { RedisNodeRegistry } from '../store/redis/node-registry.js';
import { CommandRouting, isReleased } from './ownership/command-routing.js';
import { OwnedElsewhereError } from './ownership/owned-elsewhere.js';
import { Ownership } from './ownership/ownership.js';
import type { RedisHostCommitter } from './redis-host-committer.js';
import { FaultLatch, TreeFaultedError } from './fault-latch.js';
import { hostShutdownPhases, OpenStreams, type HostShutdownSteps, type ShutdownParts } from './host-shutdown.js';
import { phaseBounds, runPhases, serverPhaseShares } from './shutdown.js';
import { type TimerClock, TimerService } from './timers/timer-service.js';
import { timerKindOf } from './timers/timer-effects.js';
import { timerWake } from './timers/timer-wake.js';

/** Which parts of {@link ServerConfig} the Host reads. */
export type HostConfig = Pick<ServerConfig, 'mode' | 'redisUrl' | 'redisCluster' | 'redisWait' | 'keyPrefix' | 'demos' | 'eventLogMaxLen' | 'shutdownMs' | 'idempotencyTtlMs' | 'grants'> &
  Partial<Pick<ServerConfig, 'transport' | 'transportTiming' | 'tenantGrants' | 'node' | 'hibernateAfterMs' | 'timerPollMs' | 'logAppendDelayMs' | 'control' | 'gates'>>;

export interface EngineHostOptions {
  readonly config: HostConfig;
  /**
   * Deployments besides the demos (registered after them; a name registered again replaces it for new
   * starts unless a version is pinned `current`). Older versions stay resolvable for their trees.
   */
  readonly deployments?: Iterable<DeploymentEntry>;
  readonly logger?: Logger;
  /**
   * Redis mode: a client to use instead of connecting to `config.redisUrl`. The Host does not close
   * an injected client (tests keep control of it); one it connected itself is closed by `close()`.
   */
  readonly redis?: RedisClient;
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
   * Redis mode: this Host will join the nodes on its Redis ({@link EngineHost.startNode}); until it
   * has, it changes no tree. `scope serve` sets it; a Host that never joins runs alone.
   */
  readonly joinsCluster?: boolean;
  /** Monotonic milliseconds for hibernation's idle times (tests inject one; default `performance.now`). */
  readonly monotonic?: () => number;
  /** Wall-clock time and timer of the durable timers (src/server/timers/; tests inject one). */
  readonly timerClock?: TimerClock;
  /** Redis mode: each storage call's deadline in ms (default 5000; tests shorten it). */
  readonly storageTimeoutMs?: number;
  /**
   * With authentication on in Redis mode: the bearer token this node presents to another for work it
   * forwards on its own behalf (cross-tree messages), acting for `tenant` (src/app/auth/node-tokens.ts).
   */
  readonly nodeCredential?: (tenant: string) => string;
  /** More readiness checks (the app's process dispatchers: one per supervisor key), merged into `readiness()`. */
  readonly readinessChecks?: () => Readonly<Record<string, string>>;
  /** The model endpoint the example agents call (src/server/model/server-model.ts); absent: their calls fail `model.not_configured`. */
  readonly model?: ModelDispatcherOptions;
  /** Redis mode: timing of same-key starts across servers (tests shorten them). */
  readonly idempotency?: { readonly reserveMs?: number; readonly staleMs?: number; readonly waitMs?: number };
  /** Tests: runs between a gate policy's decision and its answer (src/server/gates/policy-runner.ts). */
  readonly afterPolicyDecision?: (gate: PolicyGate, rule: string) => Promise<void>;
  /** How long a gate policy's `decide` may take (default 10 s; tests shorten it). */
  readonly policyDecideTimeoutMs?: number;
  /** Tests: runs after a drifted tree's supersede commit, before its successor starts (src/server/succession.ts). */
  readonly afterSupersede?: (rootId: string) => Promise<void>;
  /** Benchmarks: sees every event the Engine publishes (a committed one once its commit is acknowledged). */
  readonly observeEvent?: (event: Event) => void;
}

const pageLimits = {
  events: { fallback: 100, max: 1_000 },
  signals: { fallback: 100, max: 1_000 },
  effects: { fallback: 100, max: 1_000 },
  // The inbox was one unpaged list before it was paged: a client that does not page still gets what it got, up to 1,000.
  waits: { fallback: 1_000, max: 1_000 },
} as const;
const maxWaitMs = 60_000;
const defaultReasons: Readonly<Record<Exclude<ControlAction, 'resume'>, string>> = {
  pause: 'paused by host request',
  cancel: 'canceled by host request',
  kill: 'killed by host request',
};

/**
 * The Host behind every HTTP plugin, composed of parts with one concern each: the backend (stores),
 * starts (authority and idempotency), residency (which trees this Engine owns), the inbox, the
 * process list, the log reader (pages and streams), effect history and views. This class wires them
 * around one Engine and implements the {@link Host} surface; the rules live in the parts.
 *
 * Trees this server's Engine owns are "local"; a tree only in the store (after a restart, or after
 * a release) is served read-only from its stored head and log, and answers signals and control
 * with `tree_not_active` until `restoreTree`.
 */
/** Trees whose tenant is kept in memory. */
const cachedTenants = 100_000;

export class EngineHost implements Host {
  readonly #config: HostConfig;
  readonly #logger: Logger | undefined;
  readonly #catalog = new DeploymentCatalog();
  readonly #metrics: HostMetrics;
  readonly #readinessChecks: (() => Readonly<Record<string, string>>) | undefined;
  readonly #nodeCredential: ((tenant: string) => string) | undefined;
  readonly #backend: Backend;
  readonly #engine: Engine;
  readonly #residency: TreeResidency;
  readonly #hibernation: Hibernation;
  readonly #timers: TimerService;
  readonly #routing: CommandRouting;
  /** Roots whose stopped runtime is being restored (see #recoverStopped). */
  readonly #recovering = new Set<string>();
  /** The next restore attempt of a stopped tree waiting out its backoff: a refused command runs it at once. */
  readonly #nextRecovery = new Map<string, { readonly timer: NodeJS.Timeout; readonly now: () => void }>();
  /** Each tree's first persistence fault, until a restore installs a new incarnation (fault-latch.ts). */
  readonly #faults = new FaultLatch();
  readonly #starts: Starts;
  readonly #succession: Succession;
  readonly #inbox: WaitInbox;
  readonly #gates: GateService;
  readonly #policies: PolicyRunner;
  readonly #policyBreaker: PolicyBreaker;
  readonly #hostGates: HostGates;
  readonly #list: ProcessList;
  readonly #attemptWorkers: AttemptWorkers;
  readonly #reader: LogReader;
  readonly #shutdown = sharedAbortController();
  /** Open SSE streams (shutdown's end_streams waits for their last event). */
  readonly #streams = new OpenStreams();
  /** Aborted when shutdown stops waiting for dispatches (long demo sleeps end early). */
  readonly #dispatchStop = sharedAbortController();
  /** Each tree's tenant, once read (it never changes). */
  readonly #tenants = new Map<string, string>();
  #closing = false;
  #closed: Promise<void> | undefined;
  #transport: BullmqTransport | undefined;
  /** The refs (digest text) whose Effects go through the queue transport, not this process. */
  readonly #queuedRefs = new Set<string>();
  /** Redis mode: this node's lease and the trees' owner records (active once {@link startNode} joined). */
  readonly #ownership: Ownership | undefined;
  /** Child starts held back in trees under a tree-wide interrupt (interrupt-barrier.ts). */
  readonly #interrupts: InterruptBarrier;
  readonly #treeControl: TreeControl;

  constructor(options: EngineHostOptions) {
    const config = options.config;
    this.#config = config;
    this.#logger = options.logger;
    // The messaging example delivers through this Host's own signal admission (resolved at delivery time).
    const timers = (): TimerService | undefined => this.#timers;
    const deployments = [...(config.demos ? demoEntries({ shutdown: this.#dispatchStop.signal, host: () => this, model: options.model, timers }) : []), ...(options.deployments ?? [])];

    let residency: TreeResidency | undefined;
    let backend: Backend | undefined;
    this.#readinessChecks = options.readinessChecks;
    this.#nodeCredential = options.nodeCredential;
    this.#metrics = new HostMetrics({
      rootProcesses: async () => (backend === undefined ? 0 : backend.roots.size()),
      residentByStatus: () => residency?.residentByStatus() ?? new Map(),
      defaultMetrics: options.defaultMetrics,
    });
    // The transport is chosen per deployment: a dispatcher marked `queueDispatched` or
    // `ownerDispatched` (src/transport/placement.ts) says so itself, the rest take SCOPE_TRANSPORT.
    const serverTransport = config.transport ?? 'inprocess';
    const queued = (entry: DeploymentEntry): boolean => {
      const dispatcher = deploymentOf(entry).dispatcher;
      return dispatcher !== undefined && transportOf(dispatcher, serverTransport) === 'bullmq';
    };
    const queuedNames = [...new Set(deployments.filter(queued).map((entry) => deploymentOf(entry).ref.name))];
    const permits = queuedNames.length > 0 ? new DispatchPermits() : undefined;
    const describeWait = (process: ProcessSnapshot) => {
      try {
        return process.currentWait(this.#catalog.resolve(process.deploymentRef).descriptor);
      } catch {
        return undefined;
      }
    };
    const timerKind = (process: ProcessSnapshot) => {
      try {
        return timerKindOf(this.#catalog.resolve(process.deploymentRef).dispatcher);
      } catch {
        return undefined;
      }
    };
    const timerClock = options.timerClock;
    backend = createBackend({
      config,
      metrics: this.#metrics,
      logger: options.logger,
      redis: options.redis,
      idempotency: options.idempotency,
      storageTimeoutMs: options.storageTimeoutMs,
      permits,
      describeWait,
      timerKindOf: timerKind,
      ...(timerClock === undefined ? {} : { now: () => timerClock.now() }),
    });
    this.#backend = backend;
    // A queued deployment's dispatcher is replaced by the queue transport (same ref), so nothing can
    // fall back to running in this process; without Redis there is no queue, and the server refuses.
    if (queuedNames.length > 0) {
      if (backend.redis === undefined) {
        const which = config.transport === 'bullmq' ? 'SCOPE_TRANSPORT=bullmq' : `deployments bound to BullMQ (queueDispatched: ${queuedNames.join(', ')})`;
        throw codedError(HostErrorCode.invalidServerConfig, `${which} need Redis mode: set SCOPE_REDIS_URL (Effects bound to a queue never run in-process)`);
      }
      this.#transport = new BullmqTransport({ redis: backend.redis, keyPrefix: config.keyPrefix, timing: config.transportTiming, permits });
    }
    const transport = this.#transport;
    for (const entry of deployments) {
      if (transport === undefined || !queued(entry)) {
        this.#catalog.register(entry);
        continue;
      }
      this.#queuedRefs.add(deploymentOf(entry).ref.digest.toString());
      this.#catalog.register(rebindEntry(entry, (deployment) => transport.bind(deployment)));
    }
    // Deployments that opted in settle an Unknown from a worker's definite late report (src/transport/late-reports.ts).
    if (this.#transport !== undefined && deployments.some((entry) => trustsLateReports(deploymentOf(entry).dispatcher))) {
      // A report that arrives later wakes the owner; one already in the inbox when the Unknown commits
      // (a takeover after the worker finished) is applied right after that commit, outside its turn.
      this.#transport.watchReports((root) => void this.#resolveFromLateReports(root)).catch(() => undefined);
      (backend.committer as RedisHostCommitter).onUnknownCommitted((root) => setImmediate(() => void this.#resolveFromLateReports(root)));
    }

    this.#interrupts = new InterruptBarrier({
      releaseMs: config.control?.interruptReleaseMs ?? defaultInterruptReleaseMs,
      settled: (root) => residency?.inspectLocal(root)?.processes.every(({ snapshot }) => snapshot.isTerminal || snapshot.status === 'paused') ?? true,
      logger: options.logger?.child({ component: 'interrupts' }),
    });
    const interrupts = this.#interrupts;
    this.#engine = new Engine({
      processAdmitter: (admission) => interrupts.admit(admission),
      committer: backend.committer,
      budget: config.grants.budget,
      treeLimits: config.grants.treeLimits,
      capabilities: config.grants.capabilities,
      deploymentResolver: this.#catalog,
      eventListeners: options.observeEvent === undefined ? [(event) => this.#onEvent(event)] : [(event) => this.#onEvent(event), options.observeEvent],
      deltaListeners: [(delta) => this.#onDelta(delta)],
      clock: options.clock,
    });
    residency = new TreeResidency({
      engine: this.#engine,
      committer: backend.committer,
      catalog: this.#catalog,
      logger: options.logger,
      finishedTreeRetention: options.finishedTreeRetention,
      rootLookup: backend.rootOf,
      assertRestorable: (root) => storeCall('succession read', () => this.#succession.assertNotSuperseded(root)),
      beforeActivation: (root, head) => this.#rearmInterrupt(root, head),
    });
    this.#residency = residency;
    this.#hibernation = new Hibernation({
      afterMs: config.hibernateAfterMs ?? 0,
      release: (root) => this.#hibernate(root),
      now: options.monotonic,
      logger: options.logger?.child({ component: 'hibernation' }),
    });
    this.#hibernation.start();
    this.#inbox = new WaitInbox(residency, backend.log, (ref) => this.#catalog.resolve(ref).descriptor);
    this.#gates = this.#gateService(residency, backend);
    this.#policyBreaker = new PolicyBreaker(config.control?.policyBreakerFailures ?? defaultPolicyBreakerFailures);
    this.#policies = this.#policyRunner(residency, options);
    this.#hostGates = new HostGates({ store: backend.hostGates, config: config.gates ?? gateDefaults, shutdown: this.#shutdown.signal, waiting: this.#metrics.gateAnswerPolls });
    this.#list = new ProcessList(backend.roots, residency, (root) => this.#treeTenant(root), backend.headDigests);
    this.#attemptWorkers = new AttemptWorkers({
      nodeId: () => this.nodeId,
      ...(backend.redis === undefined ? {} : { redis: { client: backend.redis, keyPrefix: config.keyPrefix, ...(backend.withLogFlush === undefined ? {} : { send: backend.withLogFlush }) } }),
      ...(transport === undefined ? {} : { claims: transport.attempts }),
    });
    this.#starts = new Starts({
      engine: this.#engine,
      catalog: this.#catalog,
      grants: config.grants,
      spawnDefaults: config.control?.spawnDefaults,
      tenantGrants: config.tenantGrants,
      idempotency: backend.idempotency,
      idempotencyTtlMs: config.idempotencyTtlMs,
      admit: () => this.#admit(),
      shutdown: this.#shutdown.signal,
      logger: options.logger,
    });
    this.#succession = new Succession({
      catalog: this.#catalog,
      store: backend.succession,
      start: async (request, key) => (await this.startProcess(request, key)).process.processId,
      tenantOf: (root) => storeCall('tenant read', () => backend.committer.readTenant(ProcessId.parse(root))),
      finalize: (replaced, cancellation, records) => backend.committer.finalizeTree(replaced, cancellation.activation, { events: cancellation.events }, records),
      now: () => options.clock?.now() ?? new Date(),
      ...(options.afterSupersede === undefined ? {} : { afterSupersede: options.afterSupersede }),
      logger: options.logger?.child({ component: 'succession' }),
    });
    if (backend.redis !== undefined) {
      const ownership = new Ownership({
        registry: new RedisNodeRegistry({ redis: backend.redis, keyPrefix: config.keyPrefix }),
        node: config.node ?? { id: `node-${process.pid}`, advertiseUrl: undefined, leaseMs: 10_000, renewMs: 2_000 },
        logger: options.logger?.child({ component: 'ownership' }),
        refs: () => this.#catalog.refs(),
        holds: (ref) => this.#catalog.holds(ref),
        loadHead: (root) => residency.loadHead(root),
        isLocal: (root) => residency.inspectLocal(root) !== undefined,
        takeOver: async (root, expected) => {
          this.#admit();
          await this.#routing.restoreHere(root, expected);
        },
        tookOver: () => this.#metrics.treesTakenOver.inc(),
      });
      (backend.committer as RedisHostCommitter).setOwnership(ownership);
      if (options.joinsCluster === true) ownership.expectJoin();
      this.#ownership = ownership;
    }
    this.#routing = new CommandRouting({
      residency,
      ownership: this.#ownership,
      hibernation: this.#hibernation,
      admit: () => this.#admit(),
      recovering: (root) => this.#recovering.has(root),
      refuse: (root) => this.#refuseFaulted(root),
      restored: async (root, head, woken) => {
        this.#faults.clear(root);
        if (woken) this.#metrics.treesWoken.inc();
        this.#list.forget(root);
        // Gates that opened under another owner (or before a crash) are considered here now.
        const processIds = head.processSnapshots().map((process) => process.processId.toString());
        setImmediate(() => processIds.forEach((processId) => this.#policies.waitOpened(root, processId)));
        // Redis mode's inbox is the wait index (the activation kept each entry's `since`): no log replay;
        // nor for a tree woken from hibernation (the embedded inbox kept following it).
        if (this.#backend.inbox === undefined && !woken) {
          await storeCall('event log read', () => this.#inbox.restored(root, head.processSnapshots().map((process) => process.processId.toString())));
        }
      },
    });
    this.#treeControl = new TreeControl({ routing: this.#routing, residency, barrier: this.#interrupts });
    const writer = backend.timers.writer;
    this.#timers = new TimerService({
      index: backend.timers.index,
      dueOf: (root, processId, effectId) => writer.dueOf(root, processId, effectId),
      wake: timerWake({ loadHead: (root) => residency.loadHead(root), commandable: (processId) => this.#routing.acrossRelease(() => this.#routing.commandable(processId)) }),
      isResident: (root) => residency.inspectLocal(root) !== undefined,
      clock: timerClock,
      pollMs: config.timerPollMs ?? 1_000,
      logger: options.logger?.child({ component: 'timers' }),
      metrics: {
        fired: () => this.#metrics.timersFired.inc(),
        woken: () => this.#metrics.timersWoken.inc(),
        waiting: (count) => this.#metrics.timersWaiting.set(count),
      },
    });
    this.#timers.start();
    this.#reader = new LogReader({
      log: backend.log,
      rootFinished: (root) => residency.rootFinished(root),
      drain: (root, signal) => this.#drain(root, signal),
      shutdown: this.#shutdown.signal,
    });
  }

  /** Metrics the plugins feed, and the registry `metrics()` renders. */
  get telemetry(): HostTelemetry {
    const metrics = this.#metrics;
    const streams = this.#streams;
    return {
      registry: metrics.registry,
      sseClientConnected: () => {
        const ended = metrics.sseClientConnected();
        const closed = streams.opened();
        return (reason) => {
          closed();
          ended(reason);
        };
      },
    };
  }

  /** The deployment catalog (register more deployments before serving). */
  get catalog(): DeploymentCatalog {
    return this.#catalog;
  }

  get mode(): 'embedded' | 'redis' {
    return this.#backend.mode;
  }

  /** Resolves once the automatic releases of finished trees scheduled so far are done. */
  settleReleases(): Promise<void> {
    return this.#residency.settleReleases();
  }

  #onEvent(event: Event): void {
    this.#residency.observe(event);
    this.#hibernation.touch(event.relation.rootId.toString());
    if (event.name === eventNames.runtimeStopped) {
      this.#latchFault(event);
      this.#recoverStopped(event.relation.rootId.toString());
    }
    if (event.name === eventNames.processFinished && event.processId.equals(event.relation.rootId)) {
      this.#ownership?.dropped(event.processId.toString());
      this.#policies.forget(event.processId.toString());
    }
    if (event.name === eventNames.stepCommitted && event.stepCommitted()?.status === 'waiting') {
      // The wait's commit is acknowledged (its gate is listed): gate policies may answer it. Outside the listener.
      const root = event.relation.rootId.toString();
      const processId = event.processId.toString();
      setImmediate(() => this.#policies.waitOpened(root, processId));
    }
    if (this.#backend.inbox === undefined) this.#inbox.observe(event);
    if ((event.name === eventNames.processPaused || event.name === eventNames.processFinished) && this.#interrupts.holds(event.relation.rootId.toString())) {
      // Outside the listener: reading the tree from inside it would re-enter its owner.
      const root = event.relation.rootId.toString();
      setImmediate(() => this.#interrupts.observe(root));
    }
    this.#metrics.observe(event);
    const started = event.effectStarted();
    if (started !== undefined && this.#runsHere(event, started.target)) this.#attemptWorkers.ranHere(event.relation.rootId.toString(), started.attemptId.toString());
    // Committed events reached the log with their commit (host committer); the rest go best-effort.
    if (!event.committed) {
      this.#backend.log.append(event.relation.rootId.toString(), [{ type: event.name, processId: event.processId.toString(), data: event.json() }]);
    }
  }

  /** Whether an attempt this node started also runs here (not on a queue worker): evidence of its worker. */
  #runsHere(event: Event, target: string): boolean {
    return target === 'framework' || !this.#queuedRefs.has(event.deploymentRef.digest.toString());
  }

  #onDelta(delta: Delta): void {
    const pid = delta.processId.toString();
    const root = this.#residency.rootOf(pid);
    this.#hibernation.touch(root);
    this.#backend.log.append(root, [{ type: deltaType, processId: pid, data: delta.json() }]);
  }

  /**
   * Hibernation's release of an idle tree (docs/host.md "Hibernation"): only a parked one leaves, and
   * nothing is written — the head is the whole state, the owner record keeps naming this node (so
   * routing still sends its commands here), and the wait index and the log keep listing it. Resolves
   * whether the tree is out of memory (also when something else released it first).
   */
  async #hibernate(root: string): Promise<boolean> {
    if (this.#closing) return false;
    if (this.#residency.inspectLocal(root) === undefined) return true;
    const released = await this.#residency.hibernate(root);
    if (released) {
      this.#backend.committer.released(root);
      this.#metrics.treesHibernated.inc();
    }
    return released;
  }

  /**
   * A runtime that stopped (a commit failed: storage unavailable or too slow, or another writer fenced
   * it) is restored from the authoritative head without waiting for a command — a long poll or a
   * stream is not one, and a tree with work must not wait for one — retried with backoff while
   * storage stays unavailable. A copy another node fenced is dropped by the routing instead.
   */
  #recoverStopped(root: string): void {
    if (this.#recovering.has(root) || this.#closing) return;
    this.#recovering.add(root);
    const attempt = async (tries: number): Promise<void> => {
      // Done once a runtime holds it again (this or a command's restore); a failed attempt may
      // have released the stopped copy already, so a tree no longer in memory is tried again.
      const local = this.#residency.inspectLocal(root);
      if (this.#closing || (local !== undefined && !local.stopped)) {
        this.#recovering.delete(root);
        return;
      }
      // Alone, a writer fenced by another one (an operator's restore elsewhere) is not taken back.
      const fenced = local?.processes.some((entry) => entry.runtimeError?.causeCode === ErrorCode.treeIncarnationConflict) === true;
      if (this.#ownership?.gating !== true && fenced) {
        this.#recovering.delete(root);
        this.#logger?.warn({ rootId: root }, 'another writer fenced this tree; it is left to that writer');
        return;
      }
      try {
        this.#admit();
        if (this.#ownership?.gating === true) await this.#routing.takeOrForward(root, false);
        else await this.#routing.restoreHere(root, undefined);
        this.#recovering.delete(root);
        this.#logger?.info({ rootId: root, tries: tries + 1 }, 'restored a tree whose runtime had stopped');
      } catch (error) {
        // Another node runs it now: no fault of this node's to keep.
        if (error instanceof OwnedElsewhereError) this.#faults.clear(root);
        if (error instanceof OwnedElsewhereError || tries >= 8) {
          if (!(error instanceof OwnedElsewhereError)) this.#logger?.warn({ err: error, rootId: root }, 'a stopped tree could not be restored; its next command tries again');
          this.#recovering.delete(root);
          return;
        }
        this.#logger?.debug({ err: error, rootId: root, tries: tries + 1 }, 'a stopped tree could not be restored yet; trying again');
        const next = (): void => {
          this.#nextRecovery.delete(root);
          void attempt(tries + 1);
        };
        this.#nextRecovery.set(root, { timer: setTimeout(next, Math.min(10_000, 250 * 2 ** tries)).unref(), now: next });
      }
    };
    // Outside the event listener (the Engine refuses calls from inside it).
    setTimeout(() => void attempt(0), 50).unref();
  }

  /**
   * Before a restored tree runs anything here: an interrupt still in force when its previous owner
   * stopped holds child starts again (interrupt-record.ts). Embedded mode keeps no such record.
   */
  async #rearmInterrupt(root: string, head: TreeSnapshot): Promise<void> {
    if (this.#backend.redis === undefined) return;
    const text = await storeCall('interrupt record read', () => this.#backend.committer.readRecord(ProcessId.parse(root), interruptRecordSuffix));
    this.#interrupts.rearm(root, decodeInterruptRecord(text), headSettled(head), Date.now());
  }

  /** Latches the tree's first fault when its runtime stopped; its message is read once outside the listener. */
  #latchFault(event: Event): void {
    const root = event.relation.rootId.toString();
    const failure = event.runtimeStopped()?.failure;
    const incarnationId = event.treeIncarnationId?.toString();
    if (failure === undefined || incarnationId === undefined) return;
    const describe = (): string | undefined => {
      const stopped = this.#residency.inspectLocal(root)?.processes[0]?.runtimeError;
      if (stopped?.incarnationId.toString() !== incarnationId) return undefined;
      return stopped.cause instanceof Error ? stopped.cause.message : stopped.message;
    };
    if (!this.#faults.trip(root, { code: failure.code, message: failure.code, since: event.occurredAt, incarnationId }, describe)) return;
    this.#logger?.warn({ rootId: root, code: failure.code, incarnationId }, 'a commit failed: the tree refuses input until a restore (a new incarnation)');
  }

  /**
   * A command on a tree whose fault is latched is refused (503 `runtime_stopped` with the next step),
   * and the automatic restore is started again if it had given up. A tree running again under a new
   * incarnation (restored here or elsewhere) has no fault any more.
   */
  #refuseFaulted(root: string): void {
    const fault = this.#faults.get(root);
    if (fault === undefined) return;
    // Decided from memory: storage may be what failed (a released stopped copy is still latched).
    const local = this.#residency.inspectLocal(root);
    if (local !== undefined && !local.stopped) {
      this.#faults.clear(root);
      return;
    }
    // A client retrying is the best hint that storage may answer again: the restore is tried now, not after its backoff.
    const waiting = this.#nextRecovery.get(root);
    if (waiting !== undefined) {
      clearTimeout(waiting.timer);
      waiting.now();
    } else {
      this.#recoverStopped(root);
    }
    throw new TreeFaultedError(root, fault);
  }

  /** The fault a tree view shows: the latched one while the stopped incarnation is still the tree's. */
  /**
   * A resident tree's admitted controls without a storage read (its view is served from memory): what
   * this owner committed or read before; the first time, read in the background and shown from then on.
   */
  #residentControls(root: string): { controls?: ControlRecordEntry[] } {
    const known = this.#backend.controls.known(root);
    if (known !== undefined) return { controls: decodeControlRecord(known) };
    void this.#storedControlRecord(root)
      .then((value) => {
        if (this.#backend.controls.known(root) === undefined) this.#backend.controls.learned(root, value);
      })
      .catch(() => undefined);
    return {};
  }

  #storedControlRecord(root: string): Promise<string | undefined> {
    return storeCall('control record read', () => this.#backend.committer.readRecord(ProcessId.parse(root), controlRecordSuffix));
  }

  /** The tree's gate policy breaker (policy-breaker.ts), shown once a policy of the tree failed here. */
  #policyBreakerOf(root: string): { policyBreaker?: PolicyBreakerView } {
    const view = this.#policyBreaker.view(root);
    return view === undefined ? {} : { policyBreaker: view };
  }

  #faultOf(root: string, stopped: boolean): TreeFaultView | null {
    const fault = this.#faults.get(root);
    if (fault === undefined) return null;
    if (stopped) return fault;
    this.#faults.clear(root);
    return null;
  }

  /** Runs one hibernation sweep now (tests and benchmarks; the timer runs it every period). */
  hibernateIdle(): Promise<number> {
    return this.#hibernation.sweep();
  }

  /** Reads the durable timer index now and schedules the wakes of timers due soon (tests; it runs every `SCOPE_TIMER_POLL_MS`). */
  pollTimers(): Promise<number> {
    return this.#timers.poll();
  }

  /** Durable timer dispatches waiting in this node's memory (tests). */
  get timersWaiting(): number {
    return this.#timers.waiting;
  }

  #admit(): void {
    if (this.#closing) throw codedError(HostErrorCode.shuttingDown, 'the server is shutting down and admits no new work');
    // A node without a valid lease starts nothing (its commits would be refused anyway).
    if (this.#ownership?.gating === true) this.#ownership.lease.assertValid();
  }

  // -------------------------------------------------------------------------------------------
  // Deployments and starts

  deployments(): readonly DeploymentView[] {
    return this.#catalog.current().map(deploymentView);
  }

  deployment(name: string): DeploymentView {
    return deploymentView(this.#catalog.byName(name));
  }

  deploymentVersions(name: string): Promise<DeploymentVersionsView> {
    return versionCensus(name, this.#catalog, this.#backend.roots, (root) => this.#residency.loadHead(root));
  }

  async startProcess(request: StartRequest, idempotencyKey?: string): Promise<StartOutcome> {
    const started = await this.#starts.start(request, idempotencyKey);
    if (!started.created) return { created: false, process: await this.inspectProcess(started.processId) };
    const root = started.process.id.toString();
    if (request.tenant !== undefined) this.#tenants.set(root, request.tenant);
    this.#residency.adopt(root);
    // No directory write here: the start commit's host committer wrote it first (redis-host-committer.ts #owning).
    return { created: true, process: this.#view(await this.#residency.locateOrThrow(root)) };
  }

  listProcesses(query: ProcessListQuery): Promise<Page<ProcessSummary>> {
    return this.#list.page(query);
  }

  // -------------------------------------------------------------------------------------------
  // Processes

  async inspectProcess(processId: string): Promise<ProcessView> {
    return this.#view(await this.#residency.locateOrThrow(processId));
  }

  async tenantOf(processId: string): Promise<string | undefined> {
    const located = await this.#residency.locate(processId);
    return located === undefined ? undefined : this.#treeTenant(located.root);
  }

  async #treeTenant(root: string): Promise<string> {
    const known = this.#tenants.get(root);
    if (known !== undefined) return known;
    const tenant = (await storeCall('tenant read', () => this.#backend.committer.readTenant(ProcessId.parse(root)))) ?? defaultTenant;
    this.#tenants.set(root, tenant);
    // A bounded cache: past it the oldest entries go (they are read again when needed).
    if (this.#tenants.size > cachedTenants) this.#tenants.delete(this.#tenants.keys().next().value as string);
    return tenant;
  }

  async children(processId: string): Promise<{ readonly processId: string; readonly items: readonly ProcessView[] }> {
    const located = await this.#residency.locateOrThrow(processId);
    const id = snapshotOf(located).processId;
    const items =
      located.kind === 'local'
        ? located.inspection.processes
            .filter((entry) => entry.snapshot.relation.parentId?.equals(id) === true)
            .map((entry) => processView(entry.snapshot, entry.work, entry.runtimeError))
        : located.head.children(id).map((snapshot) => processView(snapshot, 'inactive', undefined));
    return { processId: id.toString(), items };
  }

  async awaitResult(processId: string, waitMs: number, signal?: AbortSignal): Promise<ResultPoll> {
    if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > maxWaitMs) throw invalidRequest(`waitMs must be an integer in 0..${maxWaitMs}`);
    const located = await this.#residency.locateOrThrow(processId);
    const current = this.#poll(located);
    if (current.done || waitMs === 0) return current;
    // A fault latched on the tree (now or while waiting) ends the poll with its refusal.
    const fault = this.#faults.wakeOnFault(located.root);
    // Linked to the Host's shutdown only while the poll lasts (see linkedAbort, kernel/deferred.ts).
    const link = linkedAbort([this.#shutdown.signal, fault.signal, signal], waitMs);
    const stop = link.signal;
    try {
      return located.kind === 'stored' ? await this.#awaitStoredResult(processId, located.root, stop) : await this.#awaitLocalResult(processId, located, stop);
    } catch (error) {
      throw fault.signal.aborted ? fault.signal.reason : error;
    } finally {
      link.release();
      fault.release();
    }
  }

  /** A long poll on a tree this node runs: its runtime answers. */
  async #awaitLocalResult(processId: string, located: Located & { kind: 'local' }, signal: AbortSignal): Promise<ResultPoll> {
    if (located.entry.runtimeError !== undefined) throw this.#faults.refusal(located.root) ?? located.entry.runtimeError;
    try {
      return { done: true, result: resultView(await located.handle.await({ signal })) };
    } catch (error) {
      if (error instanceof RuntimeError) throw this.#faults.refusal(located.root) ?? error;
      if (signal.reason instanceof TreeFaultedError) throw signal.reason;
      // Hibernated while waiting: the stored head and the log answer from here on.
      if (isReleased(error) && !signal.aborted) return this.#awaitStoredResult(processId, located.root, signal);
      return this.#poll(await this.#residency.locateOrThrow(processId));
    }
  }

  /**
   * A long poll on a tree no runtime of this node holds (another node runs it, or none does): woken by
   * the tree's log when the process finishes (see {@link watchForFinish}), then answered from the head.
   */
  async #awaitStoredResult(processId: string, root: string, signal: AbortSignal): Promise<ResultPoll> {
    // The log position before the head: a finish committed after this read lies after it.
    const from = await storeCall('event log read', () => this.#backend.log.lastPosition(root));
    const located = await this.#residency.locateOrThrow(processId);
    const current = this.#poll(located);
    if (current.done) return current;
    // Restored here meanwhile (a takeover, a command that restored it): its runtime answers.
    if (located.kind === 'local') return this.#awaitLocalResult(processId, located, signal);
    // The owner's fault reaches this node through the tree's log (finish-watch.ts).
    const ownerFault = await watchForFinish(this.#backend.log, root, processId, from, signal);
    if (signal.reason instanceof TreeFaultedError) throw signal.reason;
    if (ownerFault !== undefined) throw ownerFault;
    const now = await this.#residency.locateOrThrow(processId);
    const answer = this.#poll(now);
    // Restored here meanwhile, and the log ran ahead of the runtime's installed head: its handle answers.
    if (answer.done || now.kind !== 'local' || signal.aborted) return answer;
    return this.#awaitLocalResult(processId, now, signal);
  }

  /** The result if terminal, else where the process stands (`work: inactive` when nothing here moves it). */
  #poll(located: Located): ResultPoll {
    const snapshot = snapshotOf(located);
    const result = snapshot.result();
    if (result !== undefined) return { done: true, result: resultView(result) };
    return { done: false, status: snapshot.status, work: located.kind === 'local' ? located.entry.work : 'inactive', rootId: located.root };
  }

  deliverSignals(processId: string, signals: readonly SignalInput[], options: { readonly agency?: Agency } = {}): Promise<{ accepted: boolean }> {
    return this.#routing.acrossRelease(() => this.#deliverSignals(processId, signals, options.agency ?? 'machine'));
  }

  async #deliverSignals(processId: string, signals: readonly SignalInput[], agency: Agency): Promise<{ accepted: boolean }> {
    const requests = signalRequests(signals);
    const located = await this.#routing.commandable(processId);
    if (located.kind === 'stored') {
      if (this.#residency.answersAsFinished(located)) return signalsToFinished(located.snapshot, requests);
      throw this.#residency.refuseStored(located);
    }
    if (located.entry.snapshot.isTerminal) return signalsToFinished(located.entry.snapshot, requests);
    // A person's batch: the commit that admits it records so (signal-agency.ts).
    const unmark = agency === 'user' ? this.#backend.agency.markUser(snapshotOf(located).processId.toString(), requests.map((request) => request.id.toString())) : undefined;
    try {
      return { accepted: await located.handle.deliverSignals(...requests) };
    } catch (error) {
      await this.#routing.fencedOut(located.root, error);
      // The process may have finished between the check and the delivery.
      if (error instanceof KernelError && error.code === ErrorCode.signalRejected) {
        const now = snapshotOf(await this.#residency.locateOrThrow(processId));
        if (now.isTerminal) return signalsToFinished(now, requests);
      }
      throw error;
    } finally {
      unmark?.();
    }
  }

  /**
   * Resolves once the intent is in the authoritative head (the kernel acknowledges a control only
   * with its commit). Storage that cannot take that commit is `committer_unavailable`: nothing was
   * acknowledged, and the tree's writer has stopped (a restore applies whatever did land).
   */
  control(processId: string, action: ControlAction, reason?: string, options: ControlRequestOptions = {}): Promise<void> {
    return this.#routing.acrossRelease(() => this.#control(processId, action, reason, options.agency ?? 'machine'));
  }

  async #control(processId: string, action: ControlAction, reason: string | undefined, agency: Agency): Promise<void> {
    if (reason !== undefined && !validDiagnostic(reason)) throw invalidRequest('reason must be non-empty, trimmed text of at most 4096 UTF-8 bytes');
    const located = await this.#routing.commandable(processId);
    if (located.kind === 'stored') throw this.#residency.refuseStored(located);
    // A writer that had stopped before answers `runtime_stopped`; only this command's own commit failing is the storage's.
    const stoppedBefore = located.inspection.stopped;
    try {
      // Who sent it is written with the control's commit (control-agency.ts).
      const recorded = controlHostValues({ action, scope: 'process', processId, agency, at: new Date().toISOString() });
      // A resume in a tree whose interrupt is over also ends its record, so no later restore revives it.
      const hostValues = action === 'resume' && !this.#interrupts.holds(located.root) ? { ...recorded, ...interruptReleaseHostValues() } : recorded;
      await this.#command(located.handle, action, reason, hostValues);
    } catch (error) {
      await this.#routing.fencedOut(located.root, error);
      if (!stoppedBefore && error instanceof RuntimeError && error.causeCode === ErrorCode.committerUnavailable) {
        throw new KernelError(ErrorCode.committerUnavailable, `the ${action} of ${processId} was not acknowledged: storage could not take its commit`, { cause: error });
      }
      throw error;
    }
  }

  #command(handle: Process, action: ControlAction, reason: string | undefined, hostValues: Readonly<Record<string, unknown>>): Promise<void> {
    switch (action) {
      case 'pause':
        return handle.pause(reason ?? defaultReasons.pause, { hostValues });
      case 'resume':
        return handle.resume({ hostValues });
      case 'cancel':
        return handle.requestCancellation(reason ?? defaultReasons.cancel, { hostValues });
      case 'kill':
        return handle.kill(reason ?? defaultReasons.kill, { hostValues });
      default:
        throw invalidRequest('action must be pause, resume, cancel or kill');
    }
  }

  controlTree(rootId: string, action: ControlAction, reason?: string, options: ControlRequestOptions = {}): Promise<TreeControlOutcome> {
    return this.#controlTree(rootId, action, reason, options.agency ?? 'machine', options.scope ?? 'tree');
  }

  #controlTree(rootId: string, action: ControlAction, reason: string | undefined, agency: Agency, scope: 'tree' | 'bulk'): Promise<TreeControlOutcome> {
    const root = parseRoot(rootId);
    return this.#routing.acrossRelease(() => this.#treeControl.control(root, action, reason, agency, scope));
  }

  bulkControl(request: BulkControlRequest, options: ControlRequestOptions = {}): Promise<BulkControlOutcome> {
    return bulkControl(
      {
        list: (query) => this.listProcesses(query),
        control: async (root, action, reason) => {
          try {
            return await this.#controlTree(root, action, reason, options.agency ?? 'machine', 'bulk');
          } catch (error) {
            // Another live node owns it: that node controls it, as POST /v1/trees/{rootId}/… would be forwarded.
            if (error instanceof OwnedElsewhereError && options.forward !== undefined) return options.forward(root, error.owner, action, reason);
            throw error;
          }
        },
        unexpected: (root, error) => this.#logger?.error({ err: error, rootId: root }, 'bulk control failed on a tree'),
      },
      request,
    );
  }

  async signals(processId: string, query: ReceiptQuery): Promise<Page<ReceiptView>> {
    const after = query.after ?? 0;
    if (!Number.isSafeInteger(after) || after < 0) throw invalidRequest('after must be a non-negative arrival sequence');
    const limit = pageLimit(query.limit, pageLimits.signals);
    const located = await this.#residency.locateOrThrow(processId);
    const snapshot = snapshotOf(located);
    const receipts = snapshot.signalReceipts();
    const agency = await storeCall('agency record read', () => this.#backend.committer.readRecord(ProcessId.parse(located.root), agencyRecordSuffix(snapshot.processId.toString())));
    const items = receipts.slice(after, after + limit).map((receipt) => ({
      id: receipt.id.toString(),
      waitId: receipt.waitId?.toString() ?? null,
      payloadDigest: receipt.payloadDigest.toString(),
      arrivalSequence: toNumber(receipt.arrivalSequence, 'arrivalSequence'),
      consumed: receipt.consumed,
      payload: receipt.pendingSignal()?.payload.decode<Json>() ?? null,
      agency: agencyOf(agency, receipt.id.toString(), toNumber(receipt.arrivalSequence, 'arrivalSequence')),
    }));
    const last = items.at(-1);
    return { items, nextCursor: last !== undefined && after + limit < receipts.length ? String(last.arrivalSequence) : null };
  }

  // -------------------------------------------------------------------------------------------
  // Effects

  async effects(processId: string, query: EffectQuery): Promise<Page<EffectView>> {
    const limit = pageLimit(query.limit, pageLimits.effects);
    const offset = query.cursor === undefined ? 0 : Number(query.cursor);
    if (query.cursor !== undefined && (!/^(0|[1-9]\d{0,8})$/.test(query.cursor) || !Number.isSafeInteger(offset))) {
      throw invalidRequest('cursor is not a cursor of this list');
    }
    const located = await this.#residency.locateOrThrow(processId);
    const views = await storeCall('event log read', () => effectViews(this.#backend.log, located.root, snapshotOf(located)));
    const page = await storeCall('attempt record read', () => Promise.all(views.slice(offset, offset + limit).map((view) => this.#withWorkers(located.root, view))));
    const transport = this.#transport;
    const items = transport === undefined ? page : await Promise.all(page.map((view) => (view.status === 'unknown' ? this.#withLateReport(transport, located.root, view) : view)));
    return { items, nextCursor: offset + limit < views.length ? String(offset + limit) : null };
  }

  /** Every Unknown effect (unknown-effects.ts): Redis mode from the verified index, embedded from memory; in pages. */
  async unknownEffects(query: UnknownEffectQuery): Promise<Page<UnknownEffectView>> {
    const sources = {
      refs: () => this.#backend.unknowns.refs(),
      effectsOf: async (processId: string) => (await this.effects(processId, { limit: pageLimits.effects.max })).items,
      tenantOf: (root: string) => this.#treeTenant(root),
    };
    return unknownEffectPage(sources, query, pageLimit(query.limit, pageLimits.effects));
  }

  /**
   * A worker delivered a report nobody here awaited. For every Unknown effect of this node's copy of the
   * tree whose deployment trusts late reports, a definite report resolves it (committed like a person's
   * resolution); a report of doubt, a tree held elsewhere, or an effect resolved meanwhile changes nothing.
   */
  async #resolveFromLateReports(root: string): Promise<void> {
    const transport = this.#transport;
    if (transport === undefined || this.#closing) return;
    try {
      const inspection = this.#residency.inspectLocal(root);
      if (inspection === undefined || inspection.stopped) return;
      for (const { snapshot } of inspection.processes) {
        const unknown = snapshot.unknownEffectIds();
        if (unknown.length === 0 || !trustsLateReports(this.#catalog.resolve(snapshot.deploymentRef).dispatcher)) continue;
        for (const effectId of unknown) {
          const report = lateReportOf(await transport.attempts.inbox(root, effectId.toString()));
          if (report === undefined || report.status === 'unknown') continue;
          try {
            await this.resolveEffect(snapshot.processId.toString(), effectId.toString(), { status: report.status, payload: report.payload as Json });
          } catch (error) {
            // Resolved meanwhile (the other trigger, or a person), or the process ended: nothing left to do.
            if (error instanceof KernelError && (error.code === ErrorCode.effectNotPending || error.code === ErrorCode.processFinished)) continue;
            throw error;
          }
          this.#logger?.info({ rootId: root, effectId: effectId.toString(), attemptId: report.attemptId, status: report.status }, 'resolved an Unknown effect from its worker\'s late report (the deployment trusts them)');
        }
      }
    } catch (error) {
      this.#logger?.warn({ err: error, rootId: root }, 'a late report could not be applied; the effect stays Unknown (its report is on the effect view)');
    }
  }

  /** An effect's view with the worker of each attempt, where known (attempt-workers.ts). */
  async #withWorkers(root: string, view: EffectView): Promise<EffectView> {
    if (view.attemptList.length === 0) return view;
    const workers = await this.#attemptWorkers.workersOf(root, view.effectId, view.attemptList.map((attempt) => attempt.attemptId));
    return { ...view, attemptList: view.attemptList.map((attempt, index) => ({ ...attempt, worker: workers[index] ?? null })) };
  }

  /** An Unknown effect's view with what a worker reported for it after it was declared Unknown (its inbox). */
  async #withLateReport(transport: BullmqTransport, root: string, view: EffectView): Promise<EffectView> {
    const inbox = await storeCall('effect inbox read', () => transport.attempts.inbox(root, view.effectId));
    const report = lateReportOf(inbox);
    return report === undefined ? view : { ...view, lateReport: report };
  }

  replayEffect(processId: string, effectId: string): Promise<EffectView> {
    return this.#routing.acrossRelease(() => this.#replayEffect(processId, effectId));
  }

  async #replayEffect(processId: string, effectId: string): Promise<EffectView> {
    const id = parseEffectId(effectId);
    const located = await this.#routing.commandable(processId);
    await this.#checkEffect(located, id);
    if (located.kind === 'stored') throw this.#residency.refuseStored(located);
    await located.handle.replayUnknownEffect(id).catch((error: unknown) => this.#routing.rethrow(located.root, error));
    return this.#effectView(processId, id);
  }

  resolveEffect(processId: string, effectId: string, resolution: { status: 'succeeded' | 'failed'; payload: Json }): Promise<EffectView> {
    return this.#routing.acrossRelease(() => this.#resolveEffect(processId, effectId, resolution));
  }

  async #resolveEffect(processId: string, effectId: string, resolution: { status: 'succeeded' | 'failed'; payload: Json }): Promise<EffectView> {
    const id = parseEffectId(effectId);
    // A library caller may pass what the HTTP schema never lets through: a resolution is never "unknown".
    if (resolution.status !== 'succeeded' && resolution.status !== 'failed') throw invalidRequest('a resolution is {status: "succeeded" | "failed", payload}');
    let payload: Payload;
    try {
      payload = Payload.encode(resolution.payload);
    } catch (error) {
      throw invalidRequest(`payload is not valid JSON: ${error instanceof Error ? error.message : String(error)}`, error);
    }
    const located = await this.#routing.commandable(processId);
    await this.#checkEffect(located, id);
    if (located.kind === 'stored') throw this.#residency.refuseStored(located);
    await located.handle.resolveUnknownEffect(id, Settlement.of(resolution.status, payload)).catch((error: unknown) => this.#routing.rethrow(located.root, error));
    const view = await this.#effectView(processId, id);
    // Once the process consumed it the snapshot no longer holds the settlement; this one is what the
    // host just established, acknowledged by the commit.
    return view.settlement !== null ? view : { ...view, settlement: { effectId: view.effectId, status: resolution.status, payload: payload.decode<Json>() } };
  }

  async #checkEffect(located: Located, id: EffectId): Promise<void> {
    const snapshot = snapshotOf(located);
    if (!(await storeCall('event log read', () => hasEffect(this.#backend.log, located.root, snapshot, id)))) {
      throw codedError(HostErrorCode.effectNotFound, `process ${snapshot.processId.toString()} has no effect ${id.toString()}`);
    }
  }

  async #effectView(processId: string, id: EffectId): Promise<EffectView> {
    const located = await this.#residency.locateOrThrow(processId);
    const views = await storeCall('event log read', () => effectViews(this.#backend.log, located.root, snapshotOf(located)));
    const view = views.find((candidate) => candidate.effectId === id.toString());
    if (view === undefined) throw codedError(HostErrorCode.effectNotFound, `process ${processId} has no effect ${id.toString()}`);
    return view;
  }

  // -------------------------------------------------------------------------------------------
  // Trees

  async inspectTree(rootId: string): Promise<TreeView> {
    const root = parseRoot(rootId);
    const local = this.#residency.inspectLocal(root);
    if (local !== undefined) {
      return {
        rootId: root,
        incarnationId: local.incarnationId.toString(),
        headDigest: local.headDigest.toString(),
        commitPending: this.#backend.committer.commitPending(root),
        freeze: this.#residency.capturing(root) ? 'acquiring' : 'none',
        stopped: local.stopped,
        fault: this.#faultOf(root, local.stopped),
        ...this.#policyBreakerOf(root),
        ...this.#residentControls(root),
        active: true,
        processes: local.processes.map((entry) => processView(entry.snapshot, entry.work, entry.runtimeError)),
        ...this.#residentLineage(root),
      };
    }
    const head = await this.#residency.loadHead(root);
    if (head === undefined) throw treeNotFound(root);
    return {
      rootId: root,
      incarnationId: head.incarnationId.toString(),
      headDigest: head.digest.toString(),
      commitPending: false,
      freeze: 'none',
      stopped: false,
      fault: this.#faultOf(root, head.incarnationId.toString() === this.#faults.get(root)?.incarnationId),
      active: false,
      processes: head.processSnapshots().map((snapshot) => processView(snapshot, 'inactive', undefined)),
      controls: decodeControlRecord(await this.#storedControlRecord(root)),
      ...(await this.#lineage(root)),
    };
  }

  /** The tree's succession links (docs/deployment-versions.md). */
  /**
   * A resident tree's lineage without a storage read, so its view is served from memory even while
   * storage cannot answer: a tree this node runs was never superseded (a move-on fences every writer
   * and is refused while a live node holds the tree), and its predecessor link, written once, is
   * read in the background the first time and shown from then on.
   */
  #residentLineage(root: string): Pick<TreeView, 'supersededBy' | 'predecessorId'> {
    const known = this.#succession.knownPredecessorOf(root);
    if (known === undefined) void this.#succession.predecessorOf(root).catch(() => undefined);
    return { supersededBy: null, predecessorId: known ?? null };
  }

  async #lineage(root: string): Promise<Pick<TreeView, 'supersededBy' | 'predecessorId'>> {
    const [supersededBy, predecessorId] = await storeCall('succession read', () => Promise.all([this.#succession.view(root), this.#succession.predecessorOf(root)]));
    return { supersededBy, predecessorId };
  }

  async snapshot(rootId: string): Promise<SnapshotView> {
    const root = parseRoot(rootId);
    const head = await this.#residency.loadHead(root);
    if (head === undefined) throw treeNotFound(root);
    return snapshotView(head);
  }

  async captureTree(rootId: string, waitMs = defaultCaptureWaitMs): Promise<SnapshotView> {
    const root = parseRoot(rootId);
    if (this.#ownership?.joined === true && (await this.#residency.treeExists(root))) await this.#routing.commandable(root);
    const busy = codedError(
      HostErrorCode.treeBusy,
      `tree ${root} still had Effects in flight after ${waitMs} ms; nothing was held: retry with a longer waitMs, or once they settle`,
    );
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(busy), waitMs);
    try {
      return snapshotView(await this.#residency.capture(root, deadline.signal));
    } finally {
      clearTimeout(timer);
    }
  }

  async restoreTree(rootId: string, options: RestoreOptions = {}): Promise<TreeView> {
    const root = parseRoot(rootId);
    this.#admit();
    if (options.allowDrift === true && (await this.#movedOn(root, options.actor))) return this.inspectTree(root);
    const ownership = this.#ownership;
    if (ownership?.gating === true) {
      ownership.lease.assertValid();
      const local = this.#residency.inspectLocal(root);
      if (local === undefined || local.stopped) {
        if ((await this.#residency.loadHead(root)) === undefined) throw treeNotFound(root);
        await this.#routing.takeOrForward(root, options.force === true);
      }
    } else {
      await this.#routing.restoreHere(root, undefined);
    }
    return this.inspectTree(root);
  }

  /**
   * An admin's `allowDrift` restore: a drifted tree (or one whose move-on a crash interrupted) moves
   * on to a successor (succession.ts); false when the tree is not drifted (it restores as usual).
   */
  async #movedOn(root: string, actor: string | undefined): Promise<boolean> {
    const head = await this.#residency.loadHead(root);
    if (head === undefined) throw treeNotFound(root);
    const drift = this.#catalog.driftOf(head.root.deploymentRef);
    const view = await storeCall('succession read', () => this.#succession.view(root));
    if (drift === undefined && view === null) return false;
    const ownership = this.#ownership;
    if (ownership?.gating === true) {
      ownership.lease.assertValid();
      if (drift !== undefined && view === null) {
        // Not drift cluster-wide while a live node holds the version: the tree runs (or is routed) there.
        const route = await storeCall('owner record read', () => ownership.route(root));
        if (route.kind === 'elsewhere') throw route.error;
        const holders = await storeCall('node registry read', () => ownership.holders(drift.stored.toString()));
        if (holders.length > 0) {
          throw codedError(HostErrorCode.deploymentDrift, `tree ${root} runs ${drift.stored.toString()}, which live node ${holders.join(', ')} still holds: it is not moved on while it can run there`);
        }
      }
    }
    await this.#succession.moveOn(head, drift, actor);
    return true;
  }

  // -------------------------------------------------------------------------------------------
  // Nodes

  /**
   * Joins the cluster of nodes on this Redis as a node advertising `url` (Redis mode; `scope serve`
   * calls it once listening). From then on commands are routed by owner record and the trees of
   * nodes whose lease lapsed are taken over. Embedded mode: nothing to join.
   */
  async startNode(url: string): Promise<void> {
    await this.#ownership?.join(url);
  }

  /** This node's id (embedded mode: the one implicit node). */
  get nodeId(): string {
    return this.#ownership?.nodeId ?? 'embedded';
  }

  /** The token this node presents to another for `tenant` (authentication on, Redis mode); else undefined. */
  nodeCredential(tenant: string): string | undefined {
    return this.#nodeCredential?.(tenant);
  }

  async nodes(): Promise<readonly NodeView[]> {
    const ownership = this.#ownership;
    if (ownership?.joined !== true) {
      return [{ nodeId: this.nodeId, url: null, epoch: null, lease: 'live', leaseTtlMs: null, trees: this.#residency.localRoots().length, self: true }];
    }
    return storeCall('node registry read', () => ownership.nodes());
  }

  async evictNode(nodeId: string): Promise<void> {
    const ownership = this.#ownership;
    if (ownership?.joined !== true) throw codedError(HostErrorCode.nodeNotFound, `no node ${nodeId}: this server runs alone`);
    await storeCall('node eviction', () => ownership.evict(nodeId));
  }

  async releaseTree(rootId: string, purge: boolean): Promise<void> {
    const root = parseRoot(rootId);
    const ownership = this.#ownership;
    if (ownership?.joined === true && this.#residency.inspectLocal(root) === undefined) {
      // Released (and purged) where it is in memory: a live owner elsewhere does it.
      const route = await storeCall('owner record read', () => ownership.route(root));
      if (route.kind === 'elsewhere') throw route.error;
    }
    const wasLocal = await this.#residency.release(root);
    if (wasLocal) {
      this.#faults.clear(root);
      this.#ownership?.dropped(root);
      this.#backend.committer.released(root);
    }
    if (!purge) {
      if (!wasLocal && (await this.#residency.loadHead(root)) === undefined) throw treeNotFound(root);
      return;
    }
    const outcome = await storeCall('purge', () => this.#backend.committer.purgeTree(ProcessId.parse(root)));
    if (outcome === 'purged') this.#tenants.delete(root);
    if (outcome === 'absent' && !wasLocal) throw treeNotFound(root);
    this.#list.forget(root);
    this.#residency.purged(root);
  }

  // -------------------------------------------------------------------------------------------
  // Waits and the log

  async waits(query: WaitQuery = {}): Promise<readonly WaitView[]> {
    const scope = query.rootId === undefined ? query : { ...query, rootId: parseRoot(query.rootId) };
    // Redis mode lists from the open-wait index (every node's trees, verified against their heads).
    const inbox = this.#backend.inbox;
    const waits = inbox === undefined ? await this.#inbox.list(scope) : await storeCall('wait index read', () => inbox.list(scope));
    const { tenant } = query;
    if (tenant === undefined) return waits;
    const owned = await Promise.all(waits.map(async (wait) => (await this.#treeTenant(wait.rootId)) === tenant));
    return waits.filter((_wait, index) => owned[index]);
  }

  async waitPage(query: WaitQuery & { readonly cursor?: string; readonly limit?: number }): Promise<Page<WaitView>> {
    const { cursor, limit, ...scope } = query;
    return waitPage(await this.waits(scope), cursor, pageLimit(limit, pageLimits.waits));
  }

  async gatePage(query: GateQuery): Promise<Page<AnyGateView>> {
    // Host-owned gates have no tree or deployment: a query naming one lists process-owned gates only.
    const withHost = query.owner !== 'process' && query.rootId === undefined && query.deployment === undefined;
    const processes = query.owner === 'host' ? [] : await this.#gates.list(query.rootId === undefined ? query : { ...query, rootId: parseRoot(query.rootId) });
    const hosted = withHost ? await storeCall('host gate list', () => this.#hostGates.list(query.tenant ?? defaultTenant)) : [];
    const state = query.state ?? 'open';
    const matching = hosted.filter((gate) => gate.state === state && (query.kind === undefined || gate.kind === query.kind));
    return gatePage<AnyGateView>([...processes, ...matching], query.cursor, query.limit);
  }

  gate(gateId: string, tenant?: string): Promise<AnyGateView> {
    return isHostGateId(gateId) ? storeCall('host gate read', () => this.#hostGates.gate(gateId, tenant)) : this.#gates.gate(gateId);
  }

  answerGate(gateId: string, input: GateAnswerInput, tenant?: string): Promise<GateAnswerOutcome | HostGateAnswered> {
    return isHostGateId(gateId) ? storeCall('host gate answer', () => this.#hostGates.answer(gateId, input, tenant)) : this.#gates.answer(gateId, input, 'human');
  }

  openGate(request: HostGateOpenRequest): Promise<HostGateOpened> {
    return storeCall('host gate open', () => this.#hostGates.open(request));
  }

  async pollGateAnswer(gateId: string, waitMs: number, tenant?: string): Promise<HostGateAnswerPoll> {
    await this.#refuseProcessGate(gateId);
    return storeCall('host gate poll', () => this.#hostGates.poll(gateId, waitMs, tenant));
  }

  async closeGate(gateId: string, tenant?: string): Promise<HostGateView> {
    await this.#refuseProcessGate(gateId);
    return storeCall('host gate close', () => this.#hostGates.close(gateId, tenant));
  }

  async gateCallback(gateId: string, token: string, answer: Json): Promise<HostGateAnswered> {
    await this.#refuseProcessGate(gateId);
    return storeCall('host gate callback', () => this.#hostGates.callback(gateId, token, answer));
  }

  /** A process-owned gate closes with its wait, its answer goes to the process: these routes are not for it. */
  async #refuseProcessGate(gateId: string): Promise<void> {
    if (isHostGateId(gateId)) return;
    await this.#gates.gate(gateId); // gate_not_found for one that does not exist
    throw codedError(HostErrorCode.gateOwnerMismatch, `gate ${gateId} is process-owned: it closes when its wait ends, and its answer goes to the process`);
  }

  /** The gate service over this Host's own surface and stores (src/server/gates/). */
  #gateService(residency: TreeResidency, backend: Backend): GateService {
    return new GateService({
      waits: (query) => this.waits(query),
      locate: async (processId) => {
        const located = await residency.locateOrThrow(processId);
        return { root: located.root, snapshot: snapshotOf(located) };
      },
      members: async (rootId) => {
        const located = await residency.locate(rootId);
        if (located === undefined) throw treeNotFound(rootId);
        return located.kind === 'local' ? located.inspection.processes.map((entry) => entry.snapshot) : located.head.processSnapshots();
      },
      tenantOf: (rootId) => this.#treeTenant(rootId),
      describe: (process, wait) => this.#describeWait(process, wait),
      deliverSignals: (processId, signals, agency) => this.deliverSignals(processId, signals, { agency }),
      readRecord: (rootId, suffix) => storeCall('gate record read', () => backend.committer.readRecord(ProcessId.parse(rootId), suffix)),
      claims: backend.claims,
    });
  }

  #describeWait(process: ProcessSnapshot, wait: MailboxWait): { answerSchema: Json | null; description: string | null } {
    let descriptor: Descriptor | undefined;
    try {
      descriptor = this.#catalog.resolve(process.deploymentRef).descriptor;
    } catch {
      descriptor = undefined;
    }
    const schema = descriptor === undefined ? wait.answerSchema : (descriptor.wait(wait.key)?.answerSchema ?? wait.answerSchema);
    return {
      answerSchema: schema === undefined ? null : (JSON.parse(schema.json()) as Json),
      description: descriptor?.wait(wait.key)?.description ?? null,
    };
  }

  /** Gate policies on this node's trees (src/server/gates/policy-runner.ts), answering through the gate service. */
  #policyRunner(residency: TreeResidency, options: EngineHostOptions): PolicyRunner {
    return new PolicyRunner({
      port: {
        head: (root) => {
          const local = residency.inspectLocal(root);
          if (local === undefined || local.stopped) return undefined;
          return {
            digest: local.headDigest.toString(),
            process: (processId) => local.processes.find((entry) => entry.snapshot.processId.toString() === processId)?.snapshot,
          };
        },
        policiesOf: (process) => this.#catalog.policies(process.deploymentRef),
        describe: (process, wait) => this.#describeWait(process, wait),
        answer: (gateId, input, rule, guard) => this.#gates.answer(gateId, input, 'policy', rule, guard),
      },
      breaker: this.#policyBreaker,
      logger: this.#logger?.child({ component: 'gate-policies' }),
      afterDecision: options.afterPolicyDecision,
      ...(options.policyDecideTimeoutMs === undefined ? {} : { decideTimeoutMs: options.policyDecideTimeoutMs }),
    });
  }

  async events(processId: string, query: LogQuery): Promise<LogPage> {
    const located = await this.#residency.locateOrThrow(processId);
    const limit = pageLimit(query.limit, pageLimits.events);
    return storeCall('event log read', () => this.#reader.page(located.root, { ...query, limit }));
  }

  async openStream(rootId: string, options: StreamOptions): Promise<TreeStream> {
    const root = parseRoot(rootId);
    if (!(await this.#residency.treeExists(root))) throw treeNotFound(root);
    return storeCall('event log read', () => this.#reader.open(root, options));
  }

  /** Waits for a finished tree's trailing entries: its processes joined, their deltas flushed. */
  async #drain(root: string, signal: AbortSignal): Promise<void> {
    const handle = this.#engine.process(ProcessId.parse(root));
    if (handle === undefined) return;
    await handle.join({ signal });
    if (!signal.aborted) await abortable(this.#engine.flushDeltas(), signal);
  }

  // -------------------------------------------------------------------------------------------
  // Health, metrics, shutdown

  async readiness(): Promise<Readiness> {
    const checks: Record<string, string> = { engine: this.#closing ? 'shutting down' : 'ok', dispatch: 'ok', ...(await this.#backend.checks()) };
    // A node without a valid lease changes no tree: a load balancer should send it nothing.
    if (this.#ownership?.gating === true) checks.node = this.#ownership.lease.valid() ? 'ok' : `lease ${this.#ownership.lease.state()}`;
    const workers = this.#transport === undefined ? undefined : await this.#workerChecks(this.#transport);
    if (workers !== undefined) Object.assign(checks, workers.checks);
    if (this.#readinessChecks !== undefined) Object.assign(checks, this.#readinessChecks());
    return { ready: Object.values(checks).every((value) => value === 'ok'), checks, ...(workers?.refs === undefined ? {} : { workers: workers.refs }) };
  }

  /**
   * With the BullMQ transport, one check per deployment that dispatches through it: `ok` while some
   * live worker can run its exact ref (the rule: src/transport/bullmq/worker-readiness.ts); otherwise
   * its effects would wait until their claim window ends (`transport.unclaimed`) or fail to start, so
   * the server says it is not ready.
   */
  async #workerChecks(transport: BullmqTransport): Promise<{ checks: Record<string, string>; refs?: readonly ServedRefView[] }> {
    let live: LiveWorker[];
    let queued: Map<string, { waiting: number; active: number }>;
    try {
      [live, queued] = await Promise.all([transport.workers.live(), transport.queueCounts()]);
    } catch (error) {
      return { checks: { workers: `unknown: ${error instanceof Error ? error.message : String(error)}` } };
    }
    const deployments = this.#catalog.current().filter((deployment) => deployment.dispatcher !== undefined && this.#queuedRefs.has(deployment.ref.digest.toString()));
    const readiness = workerReadiness(deployments, live);
    this.#metrics.observeQueues(queued, live, readiness.byDigest);
    return readiness;
  }

  async metrics(): Promise<{ contentType: string; body: string }> {
    if (this.#transport !== undefined) {
      // Read from memory, so it is current even when the queue and worker reads below fail.
      this.#metrics.followedAttempts.set(this.#transport.followedAttempts);
      await this.#workerChecks(this.#transport);
    }
    const registry = this.#metrics.registry;
    return { contentType: registry.contentType, body: await registry.metrics() };
  }

  /**
   * Graceful shutdown within `deadlineMs` (default `SCOPE_SHUTDOWN_MS`), in the named phases of
   * src/server/shutdown.ts, each within its share of the deadline: stop admitting; let dispatches
   * settle; seal the committer and abort what still runs; let in-flight commits finish; flush deltas;
   * end every stream (`shutdown`); hand the trees over; close the stores. A phase that runs out of
   * time is logged and the next one runs. `parts`: what the app adds to the phases. Trees cut short
   * stay restorable from their stored head. Idempotent: later calls join the first teardown.
   */
  close(deadlineMs: number = this.#config.shutdownMs, parts?: ShutdownParts): Promise<void> {
    this.#closed ??= this.#close(Math.max(0, deadlineMs), parts);
    return this.#closed;
  }

  /** True from the first shutdown phase on: the HTTP edge refuses new mutations (503 with Retry-After). */
  get draining(): boolean {
    return this.#closing;
  }

  async #close(deadlineMs: number, parts: ShutdownParts | undefined): Promise<void> {
    const bounds = phaseBounds(serverPhaseShares, deadlineMs);
    await runPhases(hostShutdownPhases(this.#shutdownSteps(), bounds, parts), bounds, this.#logger);
  }

  #shutdownSteps(): HostShutdownSteps {
    const committer = this.#backend.committer;
    const stopping = codedError(HostErrorCode.shuttingDown, 'the server is shutting down');
    const settling = new Set<string>();
    return {
      stopAdmitting: () => {
        this.#closing = true;
        this.#hibernation.stop();
        this.#timers.stop();
      },
      settle: async () => {
        const roots = this.#residency.localRoots();
        for (const root of roots) settling.add(root);
        await Promise.all(roots.map((root) => this.#engine.captureTree(ProcessId.parse(root)).catch(() => undefined).finally(() => settling.delete(root))));
      },
      unsettled: () => [...settling],
      sealAndAbort: () => {
        committer.seal();
        this.#dispatchStop.abort(stopping);
      },
      commitsDrained: () => committer.drained(),
      committing: () => this.#residency.localRoots().filter((root) => committer.commitPending(root)),
      flushDeltas: () => this.#engine.flushDeltas(),
      endStreams: async () => {
        this.#shutdown.abort(stopping);
        await this.#streams.idle();
      },
      openStreams: () => this.#streams.count,
      handOver: () => this.#handOver(),
      closeStores: async (graceMs) => {
        await this.#transport?.close().catch(() => undefined);
        await this.#backend.close(graceMs);
        await this.#engine.close().catch(() => undefined);
      },
    };
  }

  /**
   * The drain's last step (joined nodes): nothing commits here any more, so the lease goes at once
   * rather than lapsing, and the live nodes take over the unfinished trees now (a handover is a
   * restore: in-flight `never` effects become Unknown there). Parked trees simply become ownerless;
   * the next command restores each where it lands.
   */
  async #handOver(): Promise<void> {
    const ownership = this.#ownership;
    if (ownership?.joined !== true) {
      ownership?.stop();
      return;
    }
    const unfinished = this.#residency.localRoots().filter((root) => this.#residency.inspectLocal(root)?.processes.some((entry) => !entry.snapshot.isTerminal) === true);
    await ownership.leave();
    this.#logger?.info({ nodeId: ownership.nodeId, handedOver: unfinished }, `drained: ${unfinished.length} unfinished tree(s) handed over to the live nodes`);
  }

  #view(located: Located): ProcessView {
    return located.kind === 'local'
      ? processView(located.entry.snapshot, located.entry.work, located.entry.runtimeError)
      : processView(located.snapshot, 'inactive', undefined);
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

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

function snapshotView(head: TreeSnapshot): SnapshotView {
  return { json: head.json(), digest: head.digest.toString() };
}

/** Signals to a terminal process: `{accepted: false}` only when every identity was accepted identically. */
function signalsToFinished(snapshot: ProcessSnapshot, requests: readonly SignalRequest[]): { accepted: boolean } {
  if (requests.every((request) => snapshot.mailbox.receipt(request.id)?.matches(request) === true)) return { accepted: false };
  throw processFinished(snapshot.processId.toString());
}

/** The kernel's signal requests of a batch whose shape the HTTP edge checked; identity syntax is checked here. */
function signalRequests(signals: readonly SignalInput[]): SignalRequest[] {
  if (signals.length === 0) throw invalidRequest('signals must be a non-empty array');
  return signals.map((input, index) => {
    try {
      return SignalRequest.create({
        id: input.id,
        waitId: input.waitId === undefined ? undefined : WaitId.parse(input.waitId),
        payload: Payload.encode(input.payload),
      });
    } catch (error) {
      throw invalidRequest(`signals/${index}: ${error instanceof Error ? error.message : String(error)}`, error);
    }
  });
}

function pageLimit(value: number | undefined, bounds: { readonly fallback: number; readonly max: number }): number {
  if (value === undefined) return bounds.fallback;
  if (!Number.isInteger(value) || value < 1 || value > bounds.max) throw invalidRequest(`limit must be an integer in 1..${bounds.max}`);
  return value;
}
