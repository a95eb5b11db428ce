import type { Logger } from 'pino';

/**
 * Ordered shutdown: named phases run one after the other, each within its own bound (a share of
 * `SCOPE_SHUTDOWN_MS`). A phase that runs out of time is logged with its name and what it left, its
 * signal is aborted, and the next phase still runs — so the whole teardown ends within the total
 * however a part of it hangs (a commit Redis does not answer, a lease it cannot delete).
 *
 * `scope serve` runs the server phases below; `scope worker` runs {@link workerPhaseShares}.
 */

/** The server's phases, in the order they run (README "Stopping a server"). */
export const serverPhaseShares = {
  /** New mutations answer 503 `shutting_down` with Retry-After; reads go on; readiness says so. */
  stop_admitting: 0.02,
  /** Running dispatches may still reach a safe boundary and commit their outcome. */
  settle_dispatches: 0.38,
  /** Nothing new commits; the dispatches still running are aborted and the supervisor's processes closed. */
  abort_dispatches: 0.1,
  /** Commits already sent to storage get their answer. */
  finish_commits: 0.2,
  /** Buffered deltas reach the tree logs. */
  flush_deltas: 0.05,
  /** Open SSE streams end with `scope.stream.error` (reason `shutdown`). */
  end_streams: 0.05,
  /** The node lease is deleted, so the live nodes take the unfinished trees over at once. */
  release_ownership: 0.1,
  /** The HTTP listener, then the Redis and BullMQ connections close. */
  close_connections: 0.1,
} as const;

/** The worker's phases: stop taking jobs, let running attempts finish, abort the rest, close. */
export const workerPhaseShares = {
  /** BullMQ stops handing this worker jobs; the registry heartbeat stops. */
  stop_taking_jobs: 0.02,
  /** Running attempts may still finish and settle. */
  finish_attempts: 0.48,
  /** The attempts still running are aborted (they settle Unknown) and the supervisor's processes closed. */
  abort_attempts: 0.4,
  /** The worker leaves the registry; its Redis and BullMQ connections close. */
  close_connections: 0.1,
} as const;

export type ServerPhaseName = keyof typeof serverPhaseShares;
export type WorkerPhaseName = keyof typeof workerPhaseShares;

export interface ShutdownPhase<Name extends string = string> {
  readonly name: Name;
  /** The phase's work; `signal` aborts when the phase's bound passes (work that honours it stops early). */
  readonly run: (signal: AbortSignal) => Promise<void>;
  /** What is still outstanding, for the log line of a phase that ran out of time. */
  readonly left?: () => unknown;
}

export interface PhaseOutcome {
  readonly name: string;
  readonly boundMs: number;
  readonly tookMs: number;
  readonly outcome: 'done' | 'timed_out' | 'failed';
}

/** Each phase's bound in ms: its share of `totalMs`, rounded down (a total of 0 gives every phase 0). */
export function phaseBounds<Name extends string>(shares: Readonly<Record<Name, number>>, totalMs: number): Record<Name, number> {
  const bounds = {} as Record<Name, number>;
  for (const name of Object.keys(shares) as Name[]) bounds[name] = Math.floor(Math.max(0, totalMs) * shares[name]);
  return bounds;
}

/**
 * Runs `phases` in order with the bounds `bounds` gives them. Never throws: a phase that fails or runs
 * out of time is logged (warn, with its name, bound and what it left) and the next one runs.
 */
export async function runPhases<Name extends string>(
  phases: readonly ShutdownPhase<Name>[],
  bounds: Readonly<Record<Name, number>>,
  logger: Logger | undefined,
): Promise<readonly PhaseOutcome[]> {
  const outcomes: PhaseOutcome[] = [];
  for (const phase of phases) {
    const boundMs = bounds[phase.name];
    const started = performance.now();
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timed_out'>((resolve) => {
      timer = setTimeout(() => resolve('timed_out'), boundMs);
    });
    logger?.info({ phase: phase.name, boundMs }, `shutdown phase ${phase.name}`);
    let outcome: PhaseOutcome['outcome'];
    let failure: unknown;
    try {
      outcome = await Promise.race([
        // A phase's work starts on the next tick, so a phase that throws synchronously is a failure, not a crash.
        Promise.resolve().then(() => phase.run(abort.signal)).then(() => 'done' as const),
        timeout,
      ]);
    } catch (error) {
      outcome = 'failed';
      failure = error;
    } finally {
      clearTimeout(timer);
    }
    const tookMs = Math.round(performance.now() - started);
    if (outcome === 'timed_out') {
      abort.abort(new Error(`shutdown phase ${phase.name} ran out of time`));
      logger?.warn({ phase: phase.name, boundMs, tookMs, left: describeLeft(phase) }, `shutdown phase ${phase.name} ran out of time after ${boundMs} ms; the next phase runs`);
    } else if (outcome === 'failed') {
      logger?.warn({ phase: phase.name, boundMs, tookMs, err: failure }, `shutdown phase ${phase.name} failed; the next phase runs`);
    } else {
      logger?.debug({ phase: phase.name, tookMs }, `shutdown phase ${phase.name} done`);
    }
    outcomes.push({ name: phase.name, boundMs, tookMs, outcome });
  }
  return outcomes;
}

function describeLeft(phase: ShutdownPhase): unknown {
  try {
    return phase.left?.();
  } catch (error) {
    return `unknown (${error instanceof Error ? error.message : String(error)})`;
  }
}
