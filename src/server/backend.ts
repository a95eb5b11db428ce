import { MemorySuccessionStore, type SuccessionStore } from '../store/succession.js';
import { RedisSuccessionStore } from '../store/redis/succession-store.js';
import { RedisHostGateStore } from '../store/redis/host-gate-store.js';
import { type HostGateStore, MemoryHostGateStore } from '../store/host-gates.js';
import type { Logger } from 'pino';
import { ProcessId } from '../kernel/index.js';
import type { EventLog } from '../store/event-log.js';
import type { IdempotencyStore } from '../store/idempotency.js';
import { MemoryTreeCommitter } from '../store/memory-committer.js';
import { MemoryEventLog } from '../store/memory-event-log.js';
import { MemoryIdempotencyStore } from '../store/memory-idempotency.js';
import { closeRedis, connectRedis, pingRedis, type RedisClient } from '../store/redis/connection.js';
import type { DispatchPermits } from '../store/redis/dispatch-permits.js';
import { RedisIdempotencyStore } from '../store/redis/idempotency-store.js';
import { RedisTreeCommitter } from '../store/redis/redis-committer.js';
import { readHeadVersions } from '../store/redis/head-versions.js';
import { RedisProcessDirectory } from '../store/redis/process-directory.js';
import { RedisRootIndex } from '../store/redis/root-index.js';
import { RedisWaitIndex } from '../store/redis/wait-index.js';
import { RedisUnknownIndex } from '../store/redis/unknown-index.js';
import { MemoryRootIndex, type RootIndex } from '../store/root-index.js';
import { redisTargetOf, type ServerConfig } from './config.js';
import { EmbeddedCommitter } from './embedded-committer.js';
import type { HostCommitter } from './host-committer.js';
import type { HostMetrics } from './metrics.js';
import { IndexedInbox } from './indexed-inbox.js';
import { IndexedUnknowns } from './indexed-unknowns.js';
import { UnknownIndexWriter } from './unknown-index-writer.js';
import type { UnknownRef } from './tree-marks.js';
import { RedisHostCommitter } from './redis-host-committer.js';
import { type DescribeWait, WaitIndexWriter } from './wait-index-writer.js';
import { AnswerClaims } from './gates/answer-claims.js';
import { SignalAgency } from './signal-agency.js';
import { ControlAgency } from './control-agency.js';
import { MemoryTimerIndex, type TimerIndex } from '../store/timer-index.js';
import { RedisTimerIndex } from '../store/redis/timer-index.js';
import type { TimerKindOfProcess } from './timers/timer-effects.js';
import { TimerWriter } from './timers/timer-writer.js';

/**
 * Backend wiring: the stores one Host runs on, in embedded mode (memory committer, memory log,
 * in-process indexes) or Redis mode (everything in one Redis or one Redis Cluster). The rest of the Host sees only the
 * interfaces below, never which backend it has.
 */
export interface Backend {
  readonly mode: 'embedded' | 'redis';
  /** The committer the Engine commits through (the host committer over the store's). */
  readonly committer: HostCommitter;
  readonly log: EventLog;
  readonly idempotency: IdempotencyStore;
  readonly roots: RootIndex;
  /** Gates: the claims of answers being delivered, which the committer turns into gate records. */
  readonly claims: AnswerClaims;
  /** Agency: the signals people sent, which the committer records with the commit that admits them. */
  readonly agency: SignalAgency;
  /** Who sent each admitted control (control-agency.ts), written by the committer with the control's commit. */
  readonly controls: ControlAgency;
  /** Redis mode: the inbox read from the open-wait index (embedded mode lists the memory inbox). */
  readonly inbox?: IndexedInbox;
  /** The Unknown effects of every stored tree: Redis mode from the verified Unknown-outcome index, embedded from the committer's memory. */
  readonly unknowns: { refs(): Promise<UnknownRef[]> };
  /** Redis mode: the digests of stored heads, many in one round trip (readers cache what they parsed by it). */
  readonly headDigests?: (roots: readonly string[]) => Promise<(string | undefined)[]>;
  /** Redis mode: the root a non-root process belongs to, from the process directory (a child of a tree never held here). */
  readonly rootOf?: (processId: string) => Promise<string | undefined>;
  /** Redis mode: the client the stores use (the BullMQ transport shares it). */
  readonly redis?: RedisClient;
  /**
   * Redis mode: runs a best-effort write on `redis` with the next flush of best-effort log appends, so
   * it shares their write to Redis (RedisEventLog.alongside).
   */
  readonly withLogFlush?: (send: () => void) => void;
  /** Where drifted trees moved on to successors are recorded (src/server/succession.ts). */
  readonly succession: SuccessionStore;
  /** Host-owned gates (src/store/host-gates.ts). */
  readonly hostGates: HostGateStore;
  /** Durable timers: the cross-tree index of due instants and the writer the committer keeps it with. */
  readonly timers: { readonly index: TimerIndex; readonly writer: TimerWriter };
  /** Readiness checks of the storage (`redis: ok`, or why not); empty in embedded mode. */
  checks(): Promise<Record<string, string>>;
  /** Ends tails and closes what the backend opened, within `graceMs`. */
  close(graceMs: number): Promise<void>;
}

/** Which parts of the configuration the backend reads. */
export type BackendConfig = Pick<ServerConfig, 'mode' | 'redisUrl' | 'redisCluster' | 'redisWait' | 'keyPrefix' | 'eventLogMaxLen' | 'idempotencyTtlMs'> &
  Partial<Pick<ServerConfig, 'logAppendDelayMs'>>;

export interface BackendOptions {
  readonly config: BackendConfig;
  readonly metrics: HostMetrics;
  readonly logger?: Logger;
  /**
   * Redis mode: a client to use instead of connecting to `config.redisUrl`. An injected client is
   * not closed (its owner keeps control of it); one the backend connected itself is.
   */
  readonly redis?: RedisClient;
  /** Redis mode: idempotent-start timing (tests shorten it). */
  readonly idempotency?: { readonly reserveMs?: number; readonly staleMs?: number; readonly waitMs?: number };
  /** Redis mode: each storage call's deadline in ms (default 5000; tests shorten it). */
  readonly storageTimeoutMs?: number;
  /** Redis mode with the BullMQ transport: the dispatch permits the commits carry. */
  readonly permits?: DispatchPermits;
  /** Redis mode: describes a process's current wait (the catalog's descriptor), for the wait index. */
  readonly describeWait?: DescribeWait;
  /** Which processes' dispatcher Effects are durable timers (the catalog's dispatcher marks). */
  readonly timerKindOf?: TimerKindOfProcess;
  /** Wall-clock epoch ms at which a relative timer becomes an instant (tests inject one). */
  readonly now?: () => number;
}

export function createBackend(options: BackendOptions): Backend {
  return options.config.mode === 'redis' ? redisBackend(options) : embeddedBackend(options);
}

function embeddedBackend(options: BackendOptions): Backend {
  const log = new MemoryEventLog({ maxLen: options.config.eventLogMaxLen });
  const roots = new MemoryRootIndex();
  const idempotency = new MemoryIdempotencyStore();
  const claims = new AnswerClaims();
  const agency = new SignalAgency();
  const controls = new ControlAgency();
  const committer = new EmbeddedCommitter({ store: new MemoryTreeCommitter(), log, idempotency, roots, metrics: options.metrics, claims, agency, controls });
  const hostGates = new MemoryHostGateStore();
  const timerIndex = new MemoryTimerIndex();
  const timers = new TimerWriter({
    index: timerIndex,
    kindOf: options.timerKindOf ?? (() => undefined),
    readRecord: (root, suffix) => committer.readRecord(ProcessId.parse(root), suffix),
    deleteRecord: (root, suffix) => committer.deleteRecord(ProcessId.parse(root), suffix),
    now: options.now ?? Date.now,
  });
  committer.useTimers(timers);
  return {
    mode: 'embedded',
    timers: { index: timerIndex, writer: timers },
    committer,
    unknowns: { refs: () => committer.unknownRefs() },
    claims,
    agency,
    controls,
    log,
    idempotency,
    roots,
    succession: new MemorySuccessionStore((root, suffix) => committer.readRecord(ProcessId.parse(root), suffix)),
    hostGates,
    checks: async () => ({}),
    close: async () => {
      await hostGates.shutdown();
      await log.close();
    },
  };
}

function redisBackend(options: BackendOptions): Backend {
  const { config, logger, metrics } = options;
  const redis = options.redis ?? connectRedis(redisTargetOf(config), { name: 'scope-api', onError: (error) => logger?.warn({ err: error }, 'redis connection error') });
  const ownsRedis = options.redis === undefined;
  const store = new RedisTreeCommitter({
    redis,
    keyPrefix: config.keyPrefix,
    eventLogMaxLen: config.eventLogMaxLen,
    ...(config.logAppendDelayMs === undefined ? {} : { logAppendDelayMs: config.logAppendDelayMs }),
    ...(options.storageTimeoutMs === undefined ? {} : { timeoutMs: options.storageTimeoutMs }),
    ...(config.redisWait === undefined ? {} : { waitReplicas: config.redisWait }),
    onLogAppendError: (error, lost) => {
      metrics.logAppendFailures.inc(lost);
      logger?.warn({ err: error }, 'best-effort event log append failed');
    },
  });
  const roots = new RedisRootIndex({ redis, keyPrefix: config.keyPrefix });
  const idempotency = new RedisIdempotencyStore({ redis, keyPrefix: config.keyPrefix, committer: store, ttlMs: config.idempotencyTtlMs, ...options.idempotency });
  const waitIndex = new RedisWaitIndex({ redis, keyPrefix: config.keyPrefix });
  const describe = options.describeWait ?? (() => undefined);
  const waits = new WaitIndexWriter({ index: waitIndex, log: store.events, describe });
  const inbox = new IndexedInbox({
    index: waitIndex,
    headVersions: (rootIds) => readHeadVersions(redis, config.keyPrefix, rootIds),
    loadHead: (root) => store.loadHead(ProcessId.parse(root)),
    describe,
  });
  const unknownIndex = new RedisUnknownIndex({ redis, keyPrefix: config.keyPrefix });
  const unknowns = new IndexedUnknowns({
    index: unknownIndex,
    headVersions: (rootIds) => readHeadVersions(redis, config.keyPrefix, rootIds),
    loadHead: (root) => store.loadHead(ProcessId.parse(root)),
  });
  const processes = new RedisProcessDirectory({ redis, keyPrefix: config.keyPrefix });
  const claims = new AnswerClaims();
  const agency = new SignalAgency();
  const controls = new ControlAgency();
  const timerIndex = new RedisTimerIndex({ redis, keyPrefix: config.keyPrefix });
  const timers = new TimerWriter({
    index: timerIndex,
    kindOf: options.timerKindOf ?? (() => undefined),
    readRecord: (root, suffix) => store.readRecord(ProcessId.parse(root), suffix),
    deleteRecord: (root, suffix) => store.deleteRecord(ProcessId.parse(root), suffix),
    now: options.now ?? Date.now,
  });
  const committer = new RedisHostCommitter({
    store,
    idempotency,
    roots,
    metrics,
    permits: options.permits,
    waits,
    processes,
    claims,
    agency,
    unknowns: new UnknownIndexWriter(unknownIndex),
    controls,
    timers,
  });
  const hostGates = new RedisHostGateStore({ redis, keyPrefix: config.keyPrefix });
  return {
    mode: 'redis',
    timers: { index: timerIndex, writer: timers },
    claims,
    agency,
    controls,
    redis,
    withLogFlush: (send) => store.events.alongside(send),
    committer,
    log: store.events,
    idempotency,
    roots,
    inbox,
    unknowns,
    succession: new RedisSuccessionStore({ redis, keyPrefix: config.keyPrefix }),
    hostGates,
    rootOf: (processId) => processes.rootOf(processId),
    headDigests: async (rootIds) => (await readHeadVersions(redis, config.keyPrefix, rootIds)).map((version) => version?.digest),
    checks: async () => ({ redis: await pingRedis(redis, 1_000) }),
    close: async (graceMs) => {
      await hostGates.shutdown();
      await store.close().catch(() => undefined);
      if (ownsRedis) await closeRedis(redis, Math.max(graceMs, 100));
    },
  };
}
