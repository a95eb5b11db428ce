import type { RedisClient } from './connection.js';
import { checkKeyPrefix, defaultKeyPrefix, workerLiveKey, workerStatusKey } from './keys.js';
import { runScript } from './scripts.js';

/**
 * The registry of live `scope worker` processes (lua/workers/): each worker heartbeats its entry —
 * the DeploymentRefs it consumes and, per ref, the readiness of the supervised commands (process
 * dispatcher keys) it would run them with — and an entry whose TTL passed (a dead worker) drops out
 * of {@link RedisWorkerRegistry.live}. Expiry is judged on the Redis clock, so the workers' and the
 * API servers' own clocks never disagree about who is alive. A directory, not tree state.
 */

/** One process dispatcher key as a worker reports it (the shape of `ProcessDispatchers.status()`). */
export interface WorkerProcessKey {
  readonly key: string;
  readonly command: string;
  /** Whether the command is an executable file on the worker's machine. */
  readonly resolvable: boolean;
  /** The last start's outcome, once one was tried: `started`, or the failure code. */
  readonly lastStart?: string;
  /** The key's generations the worker's supervisor holds (starting, live, retiring). */
  readonly generations: readonly { readonly serial: number; readonly state: string; readonly leases: number; readonly current: boolean }[];
}

/** What a worker serves: ref digests (hex), and per ref digest the process keys its dispatcher runs. */
export interface WorkerStatus {
  readonly refs: readonly string[];
  readonly processes: Readonly<Record<string, readonly WorkerProcessKey[]>>;
}

export interface LiveWorker extends WorkerStatus {
  readonly workerId: string;
}

export class RedisWorkerRegistry {
  readonly #redis: RedisClient;
  readonly #keys: readonly [string, string];

  constructor(options: { readonly redis: RedisClient; readonly keyPrefix?: string }) {
    this.#redis = options.redis;
    const prefix = checkKeyPrefix(options.keyPrefix ?? defaultKeyPrefix);
    this.#keys = [workerLiveKey(prefix), workerStatusKey(prefix)];
  }

  /** `workerId` serves `status` until `ttlMs` from now (Redis clock); answers that expiry (ms). */
  async heartbeat(workerId: string, status: WorkerStatus, ttlMs: number): Promise<number> {
    return Number(await runScript(this.#redis, 'workerBeat', this.#keys, [workerId, String(Math.max(1, Math.round(ttlMs))), JSON.stringify(status)]));
  }

  /** Removes a worker at once (graceful shutdown). */
  async leave(workerId: string): Promise<void> {
    await runScript(this.#redis, 'workerLeave', this.#keys, [workerId]);
  }

  /** The workers whose last heartbeat has not expired, with what they serve. */
  async live(): Promise<LiveWorker[]> {
    const flat = (await runScript(this.#redis, 'workersLive', this.#keys, [])) as string[];
    const workers: LiveWorker[] = [];
    for (let index = 0; index + 1 < flat.length; index += 2) workers.push({ workerId: flat[index] as string, ...parseStatus(flat[index + 1] as string) });
    return workers;
  }

  /** Live workers per DeploymentRef digest (hex). */
  static counts(workers: readonly LiveWorker[]): Map<string, number> {
    const counts = new Map<string, number>();
    for (const worker of workers) for (const ref of new Set(worker.refs)) counts.set(ref, (counts.get(ref) ?? 0) + 1);
    return counts;
  }
}

/**
 * A status as stored; a malformed one (another version's, or a damaged one) serves nothing, so
 * readiness never counts a worker it cannot read.
 */
function parseStatus(text: string): WorkerStatus {
  const nothing: WorkerStatus = { refs: [], processes: {} };
  let value: { refs?: unknown; processes?: unknown };
  try {
    value = JSON.parse(text) as typeof value;
  } catch {
    return nothing;
  }
  if (!isStringArray(value?.refs) || typeof value.processes !== 'object' || value.processes === null || Array.isArray(value.processes)) return nothing;
  const processes: Record<string, readonly WorkerProcessKey[]> = {};
  for (const [ref, keys] of Object.entries(value.processes as Record<string, unknown>)) {
    if (!Array.isArray(keys) || !keys.every(isProcessKey)) return nothing;
    processes[ref] = keys.map((key) => ({
      key: key.key,
      command: key.command,
      resolvable: key.resolvable,
      ...(key.lastStart === undefined ? {} : { lastStart: key.lastStart }),
      generations: key.generations.map(({ serial, state, leases, current }) => ({ serial, state, leases, current })),
    }));
  }
  return { refs: value.refs, processes };
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((entry) => typeof entry === 'string');
}

function isProcessKey(value: unknown): value is WorkerProcessKey {
  if (typeof value !== 'object' || value === null) return false;
  const entry = value as Partial<Record<keyof WorkerProcessKey, unknown>>;
  return (
    typeof entry.key === 'string' &&
    typeof entry.command === 'string' &&
    typeof entry.resolvable === 'boolean' &&
    (entry.lastStart === undefined || typeof entry.lastStart === 'string') &&
    Array.isArray(entry.generations) &&
    entry.generations.every((generation: unknown) => {
      const g = generation as Record<string, unknown> | null;
      return typeof g === 'object' && g !== null && Number.isInteger(g.serial) && typeof g.state === 'string' && Number.isInteger(g.leases) && typeof g.current === 'boolean';
    })
  );
}
