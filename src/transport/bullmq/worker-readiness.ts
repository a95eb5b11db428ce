import type { DeploymentRef } from '../../kernel/index.js';
import type { LiveWorker, WorkerProcessKey } from '../../store/redis/worker-registry.js';
import { processKeyProblem } from '../process-readiness.js';

/**
 * The API's readiness for the deployments it sends to `scope worker` processes, from the worker
 * registry. The rule, per queued deployment (its exact DeploymentRef):
 *
 * - a live worker (its last heartbeat's TTL not yet passed) **can run** the ref when every process
 *   dispatcher key it reports for that ref has a resolvable command and no failed last start
 *   (a ref whose dispatcher runs no supervised command has no keys, so any live worker can run it);
 * - the check `worker:<deployment>` is `ok` when at least one live worker can run the ref; otherwise
 *   it says why: no live worker holds the ref, or, naming each worker and key, why none can run it.
 *
 * One usable worker is enough: the others still take jobs, but a job they take fails definitely
 * (`start_failed`: nothing was sent), which is visible per worker in {@link ServedRefView}.
 * A command that starts and then crashes is not caught here (its start succeeded); its Effects
 * become Unknown, and `generations` show the replacements.
 */

/** One process key of one live worker, as `/readyz` shows it. */
export interface WorkerProcessKeyView {
  readonly key: string;
  readonly resolvable: boolean;
  readonly lastStart?: string;
  readonly generations: WorkerProcessKey['generations'];
  /** `ok`, or why this key cannot run Effects. */
  readonly check: string;
}

/** One live worker serving a ref. */
export interface ServingWorkerView {
  readonly workerId: string;
  /** Whether every process key it runs for the ref can run Effects. */
  readonly ready: boolean;
  readonly processes: readonly WorkerProcessKeyView[];
}

/** A queued deployment's ref and the live workers holding it. */
export interface ServedRefView {
  readonly deployment: string;
  readonly ref: string;
  readonly workers: readonly ServingWorkerView[];
}

export interface WorkerReadiness {
  /** `worker:<deployment>` → `ok` or why not. */
  readonly checks: Record<string, string>;
  /** What `/readyz` shows, one entry per queued deployment. */
  readonly refs: ServedRefView[];
  /** The same entries by ref digest (hex), as metrics label them. */
  readonly byDigest: ReadonlyMap<string, ServedRefView>;
}

/** Workers named in a not-ready reason before the rest are counted (the reason stays one line). */
const namedWorkers = 3;

/** Applies the rule to the queued deployments and the live workers. */
export function workerReadiness(deployments: readonly { readonly ref: DeploymentRef }[], live: readonly LiveWorker[]): WorkerReadiness {
  const checks: Record<string, string> = {};
  const byDigest = new Map<string, ServedRefView>();
  const ordered = [...live].sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0));
  for (const { ref } of deployments) {
    const hex = ref.digest.hex;
    const workers = ordered.filter((worker) => worker.refs.includes(hex)).map((worker) => servingView(worker, hex));
    byDigest.set(hex, { deployment: ref.name, ref: ref.toString(), workers });
    checks[`worker:${ref.name}`] = refCheck(ref, workers);
  }
  return { checks, refs: [...byDigest.values()], byDigest };
}

function servingView(worker: LiveWorker, hex: string): ServingWorkerView {
  const processes = (worker.processes[hex] ?? []).map((key) => ({
    key: key.key,
    resolvable: key.resolvable,
    ...(key.lastStart === undefined ? {} : { lastStart: key.lastStart }),
    generations: key.generations,
    check: processKeyProblem(key) ?? 'ok',
  }));
  return { workerId: worker.workerId, ready: processes.every((key) => key.check === 'ok'), processes };
}

function refCheck(ref: DeploymentRef, workers: readonly ServingWorkerView[]): string {
  if (workers.length === 0) return `no live worker holds ${ref.toString()}`;
  if (workers.some((worker) => worker.ready)) return 'ok';
  const reasons = workers.slice(0, namedWorkers).map((worker) => {
    const broken = worker.processes.filter((key) => key.check !== 'ok');
    return `worker ${worker.workerId}: ${broken.map((key) => `process ${key.key}: ${key.check}`).join(', ')}`;
  });
  const more = workers.length - namedWorkers;
  return `no live worker can run ${ref.toString()}: ${reasons.join('; ')}${more > 0 ? `; and ${more} more` : ''}`;
}
