// Over 500 lines: every SCOPE_* setting in one documented table, each read and checked once, so a bad value fails at start.
import { readControlConfig, type ControlConfig } from './control-config.js';
import { readGateConfig, type GateConfig } from './gates/gate-config.js';
import { randomBytes } from 'node:crypto';
import { getHeapStatistics } from 'node:v8';
import { Budget, CapabilitySet, KernelError, maxPayloadBytes, Quota, TreeLimits } from '../kernel/index.js';
import type { RedisTarget } from '../store/redis/connection.js';
import { checkKeyPrefix } from '../store/redis/keys.js';
import { defaultLogAppendDelayMs } from '../store/redis/redis-committer.js';
import { defaultTransportTiming, type TransportTiming } from '../transport/bullmq/transport-options.js';
import { AuthorityShapeError, excessOf, parseBudget, parseCapabilities, parseTreeLimits, type Grant } from './authority.js';
import { type ModelConfig, readModelConfig } from './model/model-config.js';

/**
 * The server configuration, read once from the environment and validated as a whole: every bad
 * variable is reported in one {@link ConfigError}, never one at a time.
 *
 * | variable                 | default            | meaning                                                   |
 * |--------------------------|--------------------|-----------------------------------------------------------|
 * | `SCOPE_REDIS_URL`        | (absent: embedded) | `redis://` or `rediss://` URL; absent = in-memory mode     |
 * | `SCOPE_REDIS_CLUSTER`    | (none)             | Redis Cluster seed URLs, comma-separated (instead of `SCOPE_REDIS_URL`; same scheme and credentials on each) |
 * | `SCOPE_REDIS_WAIT_REPLICAS` | 0 (off)         | after each commit, `WAIT` for this many replicas; fewer in time = 503 `committer_unavailable` |
 * | `SCOPE_REDIS_WAIT_TIMEOUT_MS` | 1000          | how long that `WAIT` may take (1–4000, below the 5 s storage deadline) |
 * | `PORT`                   | 3000               | TCP port (0 = any free port)                              |
 * | `HOST`                   | 127.0.0.1          | listen address                                            |
 * | `SCOPE_LOG_LEVEL`        | info               | fatal, error, warn, info, debug, trace, silent            |
 * | `SCOPE_KEY_PREFIX`       | scope              | Redis key prefix (1–64 of `[A-Za-z0-9_.:-]`)              |
 * | `SCOPE_DEMOS`            | on                 | register the demo deployments (on/off)                    |
 * | `SCOPE_BODY_LIMIT`       | 1MiB               | request body bound: bytes or `<n>KiB`/`<n>MiB`            |
 * | `SCOPE_SSE_KEEPALIVE_MS` | 15000              | SSE keep-alive comment period                             |
 * | `SCOPE_SSE_BUFFER`       | 1000               | per-client SSE buffer, in entries (a slower client drops) |
 * | `SCOPE_SSE_MAX_STREAMS`  | 1000               | open SSE streams per server; one more is 503 with Retry-After |
 * | `SCOPE_SSE_MAX_STREAMS_PER_KEY` | 100         | open SSE streams per API key (across every node in Redis mode); auth on only |
 * | `SCOPE_RATE_LIMIT`       | 1200/1m with auth, else off | requests per window per API key (per address with auth off): `<n>/<window>` (`ms`, `s`, `m`, `h`) or `off` |
 * | `SCOPE_REQUEST_TIMEOUT_MS` | 30000            | a request (headers and body) must arrive within this; 0 = no bound |
 * | `SCOPE_MAX_EVENT_LOOP_DELAY_MS` | 0 (off)     | shed load (503 `overloaded`) past this mean event-loop delay |
 * | `SCOPE_MAX_HEAP_BYTES`   | 90% of the heap limit | shed load past this heap use (bytes or `<n>MiB`; 0 = off) |
 * | `SCOPE_MAX_RSS_BYTES`    | 0 (off)            | shed load past this resident set size (bytes or `<n>MiB`) |
 * | `SCOPE_EVENT_LOG_MAXLEN` | 10000              | entries kept per tree log (approximate in Redis)          |
 * | `SCOPE_LOG_APPEND_DELAY_MS` | 5               | Redis mode: best-effort log entries wait this long (0–10 ms) for the tree's next commit to carry them; 0 = end of turn |
 * | `SCOPE_SHUTDOWN_MS`      | 10000              | graceful shutdown deadline, split across the named phases by the shares in src/server/shutdown.ts |
 * | `SCOPE_HIBERNATE_AFTER_MS` | 300000           | a parked tree idle this long leaves memory (its head stays; the next command restores it); 0 = never |
 * | `SCOPE_TIMER_POLL_MS`    | 1000               | how often each node reads the durable timer index for timers due soon (src/server/timers/) |
 * | `SCOPE_NODE_ID`          | (random)           | Redis mode: this node's id (1–64 of `[A-Za-z0-9._-]`)     |
 * | `SCOPE_ADVERTISE_URL`    | (the listen URL)   | Redis mode: where other nodes forward commands for this node's trees |
 * | `SCOPE_NODE_LEASE_MS`    | 10000              | Redis mode: the node lease's TTL (a node silent this long is dead) |
 * | `SCOPE_NODE_RENEW_MS`    | 2000               | Redis mode: lease renewal period (at most a third of the lease) |
 * | `SCOPE_IDEMPOTENCY_TTL_MS` | 86400000         | how long an Idempotency-Key is remembered                  |
 * | `SCOPE_AUTH`             | off (on when a keys or JWKS file is set) | `off`, `keys` or `jwt` (either turns bearer authentication on) |
 * | `SCOPE_API_KEYS_FILE`    | (none)             | JSON `{keys: [{id, sha256, tenant, scopes}]}`, reread when it changes |
 * | `SCOPE_JWKS_FILE`        | (none)             | a JSON Web Key Set: bearer JWTs signed by one of its keys are accepted (`SCOPE_AUTH=jwt`, or beside keys) |
 * | `SCOPE_JWT_ISSUER`, `SCOPE_JWT_AUDIENCE` | (none) | the `iss` / `aud` every JWT must carry            |
 * | `SCOPE_JWT_TENANT_CLAIM` | tenant             | the JWT claim naming the caller's tenant                  |
 * | `SCOPE_ALLOW_UNAUTHENTICATED` | off           | listen on a non-loopback HOST with auth off (otherwise refused) |
 * | `SCOPE_TRANSPORT`        | inprocess          | how Effects reach dispatchers: `inprocess` or `bullmq` (Redis mode only: `scope worker` processes execute them) |
 * | `SCOPE_TRANSPORT_CLAIM_MS` | 30000            | bullmq: an attempt unclaimed this long fails with `transport.unclaimed` |
 * | `SCOPE_TRANSPORT_DEADLINE_MS` | 300000        | bullmq: a claimed attempt unsettled this long becomes Unknown |
 * | `SCOPE_TRANSPORT_LEASE_MS` | 10000            | bullmq: the claimant's lease (renewed every third)        |
 * | `SCOPE_TRANSPORT_LOCK_MS`  | 10000            | bullmq: BullMQ job lock duration                         |
 * | `SCOPE_TRANSPORT_STALL_MS` | 5000             | bullmq: BullMQ stalled-job check interval                |
 * | `SCOPE_WORKER_CONCURRENCY` | 4                | `scope worker`: attempts run at once per deployment      |
 * | `SCOPE_WORKER_HEARTBEAT_MS` | 1000            | `scope worker`: registry heartbeat period; a silent worker drops out after three |
 * | `SCOPE_CORS_ORIGINS`     | (none)             | origins browsers may call the API from, comma-separated  |
 * | `SCOPE_DEPLOYMENTS`      | (none)             | a module whose default export lists your Deployments (serve and worker load it) |
 * | `SCOPE_PROCESS_IDLE_MS`  | 600000             | a process dispatcher's command unleased this long is stopped (the next Effect starts it again) |
 * | `SCOPE_PROCESS_START_TIMEOUT_MS` | 30000      | a command must answer its handshake within this (else `start_failed`, nothing sent) |
 * | `SCOPE_TENANT_GRANTS`    | (none)             | JSON `{"<tenant>": {budget?, treeLimits?, capabilities?}}`: narrower grants per tenant |
 * | `SCOPE_GRANTS`           | see {@link grantDefaults} | JSON `{budget?, treeLimits?, capabilities?}` in the API's view shapes; omitted members keep the defaults |
 * | `SCOPE_MODEL_BASE_URL`, `SCOPE_MODEL`, `SCOPE_MODEL_API_KEY_ENV`, `SCOPE_MODEL_TIMEOUT_MS` | scripted, in-process | the model endpoint of the example agents (model/model-config.ts) |
 * | `SCOPE_INTERRUPT_RELEASE_MS`, `SCOPE_DEFAULT_MAX_*` | see control-config.ts | tree interrupts; the spawn limits a start gets when it names none |
 * | `SCOPE_GATE_MAX_TIMEOUT_MS`, `SCOPE_GATE_MAX_PER_TENANT`, `SCOPE_GATE_MAX_OPEN` | see gates/gate-config.ts | host-owned gates: expiry and caps |
 */

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export const logLevelValues: readonly LogLevel[] = Object.freeze(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

export interface SseConfig {
  /** Period of the `: keep-alive` comment (ms). */
  readonly keepAliveMs: number;
  /** Per-client bounded buffer in entries; a client that falls further behind is dropped. */
  readonly bufferEntries: number;
  /** Open streams this server serves at once; one more is 503 `stream_capacity` with Retry-After. */
  readonly maxStreams: number;
  /** Open streams one API key holds at once (across every node in Redis mode); only when authentication is on. */
  readonly maxStreamsPerKey: number;
}

/** Requests one caller may send per window (`SCOPE_RATE_LIMIT`). */
export interface RateLimitConfig {
  readonly max: number;
  readonly windowMs: number;
}

/** When the server sheds load rather than fall over (`@fastify/under-pressure`); 0 turns a bound off. */
export interface PressureConfig {
  readonly maxEventLoopDelayMs: number;
  readonly maxHeapBytes: number;
  readonly maxRssBytes: number;
}

/** `SCOPE_REDIS_WAIT_REPLICAS`: how many replicas must acknowledge each commit, and how long to wait. */
export interface RedisWaitConfig {
  readonly replicas: number;
  readonly timeoutMs: number;
}

export interface ServerConfig {
  /** `redis` when `SCOPE_REDIS_URL` or `SCOPE_REDIS_CLUSTER` is set, else `embedded` (memory committer + memory log). */
  readonly mode: 'embedded' | 'redis';
  readonly redisUrl: string | undefined;
  /** `SCOPE_REDIS_CLUSTER`: the seed URLs of a Redis Cluster (then `redisUrl` is absent). */
  readonly redisCluster?: readonly string[];
  /** `SCOPE_REDIS_WAIT_REPLICAS` > 0: commits wait for replica acknowledgements (absent: they do not). */
  readonly redisWait?: RedisWaitConfig;
  readonly port: number;
  readonly host: string;
  readonly logLevel: LogLevel;
  readonly keyPrefix: string;
  readonly demos: boolean;
  /** Maximum request body in bytes. */
  readonly bodyLimit: number;
  readonly sse: SseConfig;
  /** Entries kept per tree log. */
  readonly eventLogMaxLen: number;
  /** Redis mode: how long best-effort log entries wait for the tree's next commit to carry them (ms). */
  readonly logAppendDelayMs: number;
  /** Graceful shutdown deadline (ms), split across the shutdown phases (src/server/shutdown.ts). */
  readonly shutdownMs: number;
  /** A parked tree idle this long is released from memory (0: never). */
  readonly hibernateAfterMs: number;
  /** How often the durable timer index is read for timers due within the next two periods (ms). */
  readonly timerPollMs: number;
  /** Lifetime of an idempotency record (ms). */
  readonly idempotencyTtlMs: number;
  /** What every new root is granted; a start may only narrow it. */
  readonly grants: Grant;
  /** Narrower grants for the trees of named tenants (`SCOPE_TENANT_GRANTS`). */
  readonly tenantGrants: ReadonlyMap<string, Grant>;
  /** How Effects reach dispatchers; `bullmq` never falls back to in-process. */
  readonly transport: 'inprocess' | 'bullmq';
  readonly transportTiming: TransportTiming;
  /** `scope worker`: concurrent attempts per deployment queue. */
  readonly workerConcurrency: number;
  /** `scope worker`: registry heartbeat period; its entry (and `/readyz`'s view of it) lives three periods. */
  readonly workerHeartbeatMs: number;
  /** A module of your own deployments (`SCOPE_DEPLOYMENTS`), loaded by `scope serve` and `scope worker` alike. */
  readonly deploymentsModule: string | undefined;
  /** Bounds of the supervisor behind process dispatchers (`SCOPE_PROCESS_IDLE_MS`, `SCOPE_PROCESS_START_TIMEOUT_MS`). */
  readonly processSupervisor: { readonly idleTtlMs: number; readonly startTimeoutMs: number };
  /** Origins browsers may call the API from (`SCOPE_CORS_ORIGINS`, comma-separated); none by default. */
  readonly corsOrigins: readonly string[];
  /**
   * Authentication: `off` (the embedded default on loopback: every caller may do everything), or bearer
   * API keys read from a file of digests (`SCOPE_API_KEYS_FILE`).
   */
  readonly auth: AuthConfig;
  /** Requests per window per API key (per address with auth off); undefined = no rate limit. */
  readonly rateLimit: RateLimitConfig | undefined;
  /** Bound on receiving one request, headers and body (ms); 0 = none. */
  readonly requestTimeoutMs: number;
  readonly pressure: PressureConfig;
  /** Redis mode: this node's identity and lease (src/server/ownership/). */
  readonly node: NodeConfig;
  /** The example agents' model endpoint (`SCOPE_MODEL_*`; absent base URL: the scripted server in-process). */
  readonly model: ModelConfig;
  /** Tree interrupts and the spawn limits an omitted member gets (control-config.ts). */
  readonly control: ControlConfig;
  /** Host-owned gates: expiry and caps (gates/gate-config.ts). */
  readonly gates?: GateConfig;
}

/** A node's identity and lease timing (Redis mode; embedded mode is one implicit node). */
export interface NodeConfig {
  /** `SCOPE_NODE_ID`, or a random id per process. */
  readonly id: string;
  /** `SCOPE_ADVERTISE_URL`; undefined = the URL the server listens on. */
  readonly advertiseUrl: string | undefined;
  readonly leaseMs: number;
  readonly renewMs: number;
}

/**
 * Shed load at 90% of V8's heap limit: past it the next allocations push the process into a full-GC
 * spiral and then an out-of-memory crash, which loses every request in flight instead of some. An
 * event-loop bound is off by default: a short block (a large restore, a GC pause) on a busy but healthy
 * node would refuse requests that would have been served a moment later.
 */
export function defaultMaxHeapBytes(): number {
  return Math.floor(getHeapStatistics().heap_size_limit * 0.9);
}

/** The rate limit with authentication on, unless `SCOPE_RATE_LIMIT` says otherwise. */
export const defaultRateLimit: RateLimitConfig = Object.freeze({ max: 1_200, windowMs: 60_000 });

/** Authentication: off, or on with API keys (a digests file), JWTs (a key set), or both. */
export type AuthConfig =
  | { readonly mode: 'off' }
  | {
      readonly mode: 'on';
      readonly keysFile?: string;
      readonly jwt?: { readonly jwksFile: string; readonly issuer?: string; readonly audience?: string; readonly tenantClaim?: string };
    };

/** Whether `host` names only this machine (where auth may stay off). */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The request envelope allowed on top of the kernel's largest payload. */
export const bodyEnvelopeBytes = 64 * 1024;
export const maxBodyLimit = maxPayloadBytes + bodyEnvelopeBytes;
export const defaultBodyLimit = 1024 * 1024;

/** A configuration that failed validation; `problems` names every bad variable. */
export class ConfigError extends KernelError {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super('invalid_server_config', `invalid server configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = Object.freeze([...problems]);
  }
}

/**
 * What a start may ask for when `SCOPE_GRANTS` says nothing: finite where an unbounded value would let
 * one client grow one tree without end (every commit rewrites the whole head), large enough for the
 * demos and for workloads like a 100-child fan-out or a 4,000-entry mailbox. The README lists them.
 */
export const grantDefaults = {
  /** Signals one process may accept over its life: its mailbox is append-only, so this bounds its entries. */
  signalsPerProcess: 10_000,
  /** Snapshot bytes of one process (its mailbox included), with the engine's reservations. */
  processSnapshotBytes: 4 * 1024 * 1024,
  /** Snapshot bytes of a whole tree. */
  treeSnapshotBytes: 16 * 1024 * 1024,
} as const;

/** The grant when `SCOPE_GRANTS` is absent: {@link grantDefaults}, steps and effects unlimited, no capabilities. */
export function defaultGrants(): Grant {
  return {
    budget: Budget.of({ steps: Quota.unlimited(), effects: Quota.unlimited(), signals: Quota.of(grantDefaults.signalsPerProcess) }),
    treeLimits: TreeLimits.of({
      maxSnapshotBytes: Quota.of(grantDefaults.treeSnapshotBytes),
      maxProcessSnapshotBytes: Quota.of(grantDefaults.processSnapshotBytes),
    }),
    capabilities: CapabilitySet.empty,
  };
}

type Env = Readonly<Record<string, string | undefined>>;

/** Reads and validates the configuration; throws {@link ConfigError} listing every bad variable. */
export function loadConfig(env: Env = process.env): ServerConfig {
  const problems: string[] = [];
  const read = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const text = read(name);
    if (text === undefined) return fallback;
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)) || Number(text) < min || Number(text) > max) {
      problems.push(`${name}=${JSON.stringify(text)}: expected an integer in ${min}..${max}`);
      return fallback;
    }
    return Number(text);
  };

  const redisUrl = read('SCOPE_REDIS_URL');
  if (redisUrl !== undefined) {
    let valid = false;
    try {
      const url = new URL(redisUrl);
      valid = url.protocol === 'redis:' || url.protocol === 'rediss:';
    } catch {
      valid = false;
    }
    if (!valid) problems.push(`SCOPE_REDIS_URL=${JSON.stringify(redactUrl(redisUrl))}: expected a redis:// or rediss:// URL`);
  }
  const redisCluster = parseClusterSeeds(read('SCOPE_REDIS_CLUSTER'), problems);
  if (redisCluster !== undefined && redisUrl !== undefined) problems.push('SCOPE_REDIS_URL and SCOPE_REDIS_CLUSTER are both set: choose one Redis');
  const redisMode = redisUrl !== undefined || redisCluster !== undefined;
  const waitReplicas = integer('SCOPE_REDIS_WAIT_REPLICAS', 0, 0, 16);
  const waitTimeoutMs = integer('SCOPE_REDIS_WAIT_TIMEOUT_MS', 1_000, 1, 4_000);
  if (waitReplicas > 0 && !redisMode) problems.push('SCOPE_REDIS_WAIT_REPLICAS needs SCOPE_REDIS_URL or SCOPE_REDIS_CLUSTER');

  const port = integer('PORT', 3000, 0, 65_535);
  const host = read('HOST') ?? '127.0.0.1';
  if (/\s/.test(host)) problems.push(`HOST=${JSON.stringify(host)}: expected a host name or address`);

  const levelText = read('SCOPE_LOG_LEVEL')?.toLowerCase() ?? 'info';
  let logLevel: LogLevel = 'info';
  if ((logLevelValues as readonly string[]).includes(levelText)) logLevel = levelText as LogLevel;
  else problems.push(`SCOPE_LOG_LEVEL=${JSON.stringify(levelText)}: expected one of ${logLevelValues.join(', ')}`);

  let keyPrefix = read('SCOPE_KEY_PREFIX') ?? 'scope';
  try {
    keyPrefix = checkKeyPrefix(keyPrefix);
  } catch {
    problems.push(`SCOPE_KEY_PREFIX=${JSON.stringify(keyPrefix)}: expected 1-64 characters of [A-Za-z0-9_.:-]`);
    keyPrefix = 'scope';
  }

  let demos = true;
  const demosText = read('SCOPE_DEMOS')?.toLowerCase();
  if (demosText !== undefined) {
    if (['on', 'true', '1', 'yes'].includes(demosText)) demos = true;
    else if (['off', 'false', '0', 'no'].includes(demosText)) demos = false;
    else problems.push(`SCOPE_DEMOS=${JSON.stringify(demosText)}: expected on or off`);
  }

  let bodyLimit = defaultBodyLimit;
  const bodyText = read('SCOPE_BODY_LIMIT');
  if (bodyText !== undefined) {
    const parsed = parseByteSize(bodyText);
    if (parsed === undefined || parsed < 1 || parsed > maxBodyLimit) {
      problems.push(`SCOPE_BODY_LIMIT=${JSON.stringify(bodyText)}: expected a size in 1..${maxBodyLimit} bytes (e.g. 1048576, 512KiB, 8MiB)`);
    } else {
      bodyLimit = parsed;
    }
  }

  const sse: SseConfig = {
    keepAliveMs: integer('SCOPE_SSE_KEEPALIVE_MS', 15_000, 100, 15_000),
    bufferEntries: integer('SCOPE_SSE_BUFFER', 1_000, 1, 1_000_000),
    maxStreams: integer('SCOPE_SSE_MAX_STREAMS', 1_000, 1, 1_000_000),
    maxStreamsPerKey: integer('SCOPE_SSE_MAX_STREAMS_PER_KEY', 100, 1, 1_000_000),
  };
  const requestTimeoutMs = integer('SCOPE_REQUEST_TIMEOUT_MS', 30_000, 0, 3_600_000);
  const size = (name: string, fallback: number): number => {
    const text = read(name);
    if (text === undefined) return fallback;
    const bytes = parseByteSize(text);
    if (bytes === undefined) {
      problems.push(`${name}=${JSON.stringify(text)}: expected a size (e.g. 1073741824, 512MiB) or 0`);
      return 0;
    }
    return bytes;
  };
  const pressure: PressureConfig = Object.freeze({
    maxEventLoopDelayMs: integer('SCOPE_MAX_EVENT_LOOP_DELAY_MS', 0, 0, 600_000),
    maxHeapBytes: size('SCOPE_MAX_HEAP_BYTES', defaultMaxHeapBytes()),
    maxRssBytes: size('SCOPE_MAX_RSS_BYTES', 0),
  });
  const eventLogMaxLen = integer('SCOPE_EVENT_LOG_MAXLEN', 10_000, 1, 10_000_000);
  // Above 10 ms a live SSE stream (it follows the log) would no longer look live (issue 13's bound for batching).
  const logAppendDelayMs = integer('SCOPE_LOG_APPEND_DELAY_MS', defaultLogAppendDelayMs, 0, 10);
  const shutdownMs = integer('SCOPE_SHUTDOWN_MS', 10_000, 0, 600_000);
  const hibernateAfterMs = integer('SCOPE_HIBERNATE_AFTER_MS', 300_000, 0, 30 * 86_400_000);
  const timerPollMs = integer('SCOPE_TIMER_POLL_MS', 1_000, 10, 60_000);
  const idempotencyTtlMs = integer('SCOPE_IDEMPOTENCY_TTL_MS', 86_400_000, 1_000, 30 * 86_400_000);
  const node = readNodeConfig(read, integer, problems);
  const model = readModelConfig(read, integer, problems);

  let grants = defaultGrants();
  const grantText = read('SCOPE_GRANTS');
  if (grantText !== undefined) {
    try {
      grants = parseGrants(grantText);
    } catch (error) {
      problems.push(`SCOPE_GRANTS: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  let tenantGrants: ReadonlyMap<string, Grant> = new Map();
  const tenantGrantText = read('SCOPE_TENANT_GRANTS');
  if (tenantGrantText !== undefined) {
    try {
      tenantGrants = parseTenantGrants(tenantGrantText, grants);
    } catch (error) {
      problems.push(`SCOPE_TENANT_GRANTS: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  const keysFile = read('SCOPE_API_KEYS_FILE');
  const jwksFile = read('SCOPE_JWKS_FILE');
  const authText = read('SCOPE_AUTH')?.toLowerCase() ?? (keysFile !== undefined ? 'keys' : jwksFile !== undefined ? 'jwt' : 'off');
  let auth: AuthConfig = { mode: 'off' };
  const jwt =
    jwksFile === undefined
      ? undefined
      : {
          jwksFile,
          ...(read('SCOPE_JWT_ISSUER') === undefined ? {} : { issuer: read('SCOPE_JWT_ISSUER') as string }),
          ...(read('SCOPE_JWT_AUDIENCE') === undefined ? {} : { audience: read('SCOPE_JWT_AUDIENCE') as string }),
          ...(read('SCOPE_JWT_TENANT_CLAIM') === undefined ? {} : { tenantClaim: read('SCOPE_JWT_TENANT_CLAIM') as string }),
        };
  if (authText === 'keys' || authText === 'jwt') {
    // Either name turns authentication on; every credential source configured is accepted.
    if (authText === 'keys' && keysFile === undefined) problems.push('SCOPE_AUTH=keys needs SCOPE_API_KEYS_FILE (a JSON file of key digests; `scope keys create` makes entries)');
    else if (authText === 'jwt' && jwt === undefined) problems.push('SCOPE_AUTH=jwt needs SCOPE_JWKS_FILE (a JSON Web Key Set of the public keys tokens are signed with)');
    else auth = { mode: 'on', ...(keysFile === undefined ? {} : { keysFile }), ...(jwt === undefined ? {} : { jwt: Object.freeze(jwt) }) };
  } else if (authText !== 'off') {
    problems.push(`SCOPE_AUTH=${JSON.stringify(authText)}: expected off, keys or jwt`);
  }
  const insecure = read('SCOPE_ALLOW_UNAUTHENTICATED')?.toLowerCase();
  if (auth.mode === 'off' && !isLoopbackHost(host) && !['1', 'true', 'yes', 'on'].includes(insecure ?? '')) {
    problems.push(
      `HOST=${JSON.stringify(host)} is not a loopback address and authentication is off: set SCOPE_AUTH=keys with SCOPE_API_KEYS_FILE ` +
        '(or, knowingly, SCOPE_ALLOW_UNAUTHENTICATED=1)',
    );
  }
  let rateLimit: RateLimitConfig | undefined = auth.mode === 'on' ? defaultRateLimit : undefined;
  const rateText = read('SCOPE_RATE_LIMIT');
  if (rateText !== undefined) {
    if (rateText.toLowerCase() === 'off') rateLimit = undefined;
    else {
      const parsed = parseRate(rateText);
      if (parsed === undefined) problems.push(`SCOPE_RATE_LIMIT=${JSON.stringify(rateText)}: expected <requests>/<window> (e.g. 1200/1m, 50/1s, 100/500ms) or off`);
      else rateLimit = parsed;
    }
  }
  const transportText = read('SCOPE_TRANSPORT')?.toLowerCase() ?? 'inprocess';
  let transport: 'inprocess' | 'bullmq' = 'inprocess';
  if (transportText === 'bullmq') {
    transport = 'bullmq';
    if (!redisMode) problems.push('SCOPE_TRANSPORT=bullmq needs SCOPE_REDIS_URL or SCOPE_REDIS_CLUSTER (workers reach the API through Redis)');
  } else if (transportText !== 'inprocess') {
    problems.push(`SCOPE_TRANSPORT=${JSON.stringify(transportText)}: expected inprocess or bullmq`);
  }
  const transportTiming: TransportTiming = Object.freeze({
    claimWindowMs: integer('SCOPE_TRANSPORT_CLAIM_MS', defaultTransportTiming.claimWindowMs, 50, 86_400_000),
    dispatchDeadlineMs: integer('SCOPE_TRANSPORT_DEADLINE_MS', defaultTransportTiming.dispatchDeadlineMs, 50, 7 * 86_400_000),
    leaseMs: integer('SCOPE_TRANSPORT_LEASE_MS', defaultTransportTiming.leaseMs, 30, 600_000),
    lockDurationMs: integer('SCOPE_TRANSPORT_LOCK_MS', defaultTransportTiming.lockDurationMs, 100, 600_000),
    stalledIntervalMs: integer('SCOPE_TRANSPORT_STALL_MS', defaultTransportTiming.stalledIntervalMs, 100, 600_000),
  });
  const workerConcurrency = integer('SCOPE_WORKER_CONCURRENCY', 4, 1, 1_000);
  const workerHeartbeatMs = integer('SCOPE_WORKER_HEARTBEAT_MS', 1_000, 50, 60_000);
  const processSupervisor = Object.freeze({
    idleTtlMs: integer('SCOPE_PROCESS_IDLE_MS', 600_000, 1_000, 86_400_000),
    startTimeoutMs: integer('SCOPE_PROCESS_START_TIMEOUT_MS', 30_000, 100, 600_000),
  });

  const corsOrigins: string[] = [];
  for (const origin of (read('SCOPE_CORS_ORIGINS') ?? '').split(',').map((text) => text.trim()).filter((text) => text !== '')) {
    let valid = false;
    try {
      const url = new URL(origin);
      valid = (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === origin;
    } catch {
      valid = false;
    }
    if (valid) corsOrigins.push(origin);
    else problems.push(`SCOPE_CORS_ORIGINS: ${JSON.stringify(origin)} is not an origin (scheme://host[:port], no path)`);
  }

  const control = readControlConfig(integer);
  const gates = readGateConfig(integer);

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    mode: redisMode ? 'redis' : 'embedded',
    redisUrl,
    ...(redisCluster === undefined ? {} : { redisCluster }),
    ...(waitReplicas === 0 ? {} : { redisWait: Object.freeze({ replicas: waitReplicas, timeoutMs: waitTimeoutMs }) }),
    port,
    host,
    logLevel,
    keyPrefix,
    demos,
    bodyLimit,
    sse: Object.freeze(sse),
    eventLogMaxLen,
    logAppendDelayMs,
    shutdownMs,
    hibernateAfterMs,
    timerPollMs,
    idempotencyTtlMs,
    grants: Object.freeze(grants),
    tenantGrants,
    auth: Object.freeze(auth),
    rateLimit,
    requestTimeoutMs,
    pressure,
    deploymentsModule: read('SCOPE_DEPLOYMENTS'),
    corsOrigins,
    transport,
    transportTiming,
    workerConcurrency,
    workerHeartbeatMs,
    processSupervisor,
    node,
    model,
    control,
    gates,
  });
}

/** `SCOPE_NODE_*` and `SCOPE_ADVERTISE_URL` (problems are added to `problems`). */
function readNodeConfig(
  read: (name: string) => string | undefined,
  integer: (name: string, fallback: number, min: number, max: number) => number,
  problems: string[],
): NodeConfig {
  const id = read('SCOPE_NODE_ID') ?? `node-${randomBytes(6).toString('hex')}`;
  if (!nodeIdPattern.test(id)) problems.push(`SCOPE_NODE_ID=${JSON.stringify(id)}: expected 1-64 of [A-Za-z0-9._-]`);
  const advertiseUrl = read('SCOPE_ADVERTISE_URL');
  if (advertiseUrl !== undefined) {
    let valid = false;
    try {
      const url = new URL(advertiseUrl);
      valid = url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      valid = false;
    }
    if (!valid) problems.push(`SCOPE_ADVERTISE_URL=${JSON.stringify(advertiseUrl)}: expected an http:// or https:// URL`);
  }
  const leaseMs = integer('SCOPE_NODE_LEASE_MS', 10_000, 300, 600_000);
  const renewMs = integer('SCOPE_NODE_RENEW_MS', 2_000, 50, 200_000);
  // Three renewals per lease: one lost reply, or one slow round trip, never costs the lease.
  if (renewMs * 3 > leaseMs) problems.push(`SCOPE_NODE_RENEW_MS=${renewMs}: at most a third of SCOPE_NODE_LEASE_MS (${leaseMs})`);
  return Object.freeze({ id, advertiseUrl: advertiseUrl?.replace(/\/+$/, ''), leaseMs, renewMs });
}

/** A node id: safe in a Redis key and an HTTP header. */
export const nodeIdPattern = /^[A-Za-z0-9._-]{1,64}$/;

/** `SCOPE_GRANTS`: `{budget?, treeLimits?, capabilities?}`, members in the API's view shapes. */
export function parseGrants(text: string): Grant {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('expected a JSON object {budget?, treeLimits?, capabilities?}');
  }
  return grantOf(value, defaultGrants(), '');
}

/**
 * `SCOPE_TENANT_GRANTS`: `{"<tenant>": {budget?, treeLimits?, capabilities?}}`. Each narrows the server's
 * grant for the trees that tenant starts (omitted members keep the server's); one that asks for more
 * than the server grants is a configuration error, since the Engine could never honour it.
 */
export function parseTenantGrants(text: string, server: Grant): ReadonlyMap<string, Grant> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('expected a JSON object {"<tenant>": {budget?, treeLimits?, capabilities?}}');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('expected a JSON object {"<tenant>": {budget?, treeLimits?, capabilities?}}');
  }
  const grants = new Map<string, Grant>();
  for (const [tenant, member] of Object.entries(value as Record<string, unknown>)) {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(tenant)) throw new Error(`${JSON.stringify(tenant)} is not a tenant (1-64 of [A-Za-z0-9._-])`);
    const grant = grantOf(member, server, `/${tenant}`);
    const excess = excessOf(server, grant);
    if (excess.length > 0) throw new Error(`/${tenant} asks for more than SCOPE_GRANTS: ${excess.join('; ')}`);
    grants.set(tenant, Object.freeze(grant));
  }
  return grants;
}

function grantOf(value: unknown, defaults: Grant, at: string): Grant {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${at || '/'}: expected a JSON object {budget?, treeLimits?, capabilities?}`);
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!['budget', 'treeLimits', 'capabilities'].includes(key)) throw new Error(`${at}/${key} is not a known member`);
  }
  try {
    return {
      budget: record.budget === undefined ? defaults.budget : parseBudget(record.budget, `${at}/budget`, defaults.budget),
      treeLimits: record.treeLimits === undefined ? defaults.treeLimits : parseTreeLimits(record.treeLimits, `${at}/treeLimits`, defaults.treeLimits),
      capabilities: record.capabilities === undefined ? defaults.capabilities : parseCapabilities(record.capabilities, `${at}/capabilities`),
    };
  } catch (error) {
    if (error instanceof AuthorityShapeError) throw new Error(error.message);
    throw error;
  }
}

/** `1200/1m`, `50/1s`, `100/s`, `10/500ms`: at least one request per window of 1 ms to 1 day. */
export function parseRate(text: string): RateLimitConfig | undefined {
  const match = /^(\d+)\s*\/\s*(\d*)\s*(ms|s|m|h)$/i.exec(text.trim());
  if (match === null) return undefined;
  const max = Number(match[1]);
  const count = match[2] === '' ? 1 : Number(match[2]);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[(match[3] as string).toLowerCase() as 'ms' | 's' | 'm' | 'h'];
  const windowMs = count * unit;
  if (!Number.isSafeInteger(max) || max < 1 || max > 1_000_000_000 || windowMs < 1 || windowMs > 86_400_000) return undefined;
  return Object.freeze({ max, windowMs });
}

/** `123`, `512KiB`, `8MiB`, `1kb`, `2mb` (binary multiples); undefined when unparseable. */
export function parseByteSize(text: string): number | undefined {
  const match = /^(\d+)\s*(b|k|kb|kib|m|mb|mib)?$/i.exec(text.trim());
  if (match === null) return undefined;
  const amount = Number(match[1]);
  const unit = (match[2] ?? 'b').toLowerCase();
  const factor = unit === 'b' ? 1 : unit.startsWith('k') ? 1024 : 1024 * 1024;
  const bytes = amount * factor;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** Where the configuration points Redis: one URL, a cluster's seeds, or nowhere (embedded). */
export function redisTargetOf(config: Pick<ServerConfig, 'redisUrl' | 'redisCluster'>): RedisTarget | undefined {
  return config.redisCluster === undefined ? config.redisUrl : { cluster: config.redisCluster };
}

/** `SCOPE_REDIS_CLUSTER`: comma-separated `redis://`/`rediss://` host:port URLs sharing scheme and credentials. */
function parseClusterSeeds(text: string | undefined, problems: string[]): readonly string[] | undefined {
  if (text === undefined) return undefined;
  const seeds = text.split(',').map((part) => part.trim()).filter((part) => part !== '');
  const parsed: URL[] = [];
  for (const seed of seeds) {
    let url: URL | undefined;
    try {
      url = new URL(seed);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '') {
      problems.push(`SCOPE_REDIS_CLUSTER: ${JSON.stringify(redactUrl(seed))} is not a redis:// or rediss:// URL`);
    } else if (url.pathname !== '' && url.pathname !== '/' && url.pathname !== '/0') {
      problems.push(`SCOPE_REDIS_CLUSTER: ${JSON.stringify(redactUrl(seed))} names a database; a cluster has only database 0`);
    } else parsed.push(url);
  }
  if (seeds.length === 0) problems.push('SCOPE_REDIS_CLUSTER: expected at least one redis:// URL');
  const [first] = parsed;
  if (first !== undefined && parsed.some((url) => url.protocol !== first.protocol || url.username !== first.username || url.password !== first.password)) {
    problems.push('SCOPE_REDIS_CLUSTER: every seed URL must use the same scheme and credentials (one set serves every node)');
  }
  return Object.freeze(seeds);
}

/** A URL with its password hidden, for error messages and logs. */
export function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return text.replace(/:[^:@/]*@/, ':***@');
  }
}
