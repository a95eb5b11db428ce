import type { ServerPhaseName, ShutdownPhase } from './shutdown.js';

/**
 * The Host's part of each server shutdown phase (src/server/shutdown.ts), in order, and the places
 * where the app adds its own part (the supervisor's processes, the HTTP listener, its Redis for
 * the guards). The Host's steps are given as closures over its private parts.
 */
export interface HostShutdownSteps {
  /** stop_admitting: starts and restores answer `shutting_down`; the HTTP edge refuses mutations. */
  stopAdmitting(): void;
  /** settle_dispatches: resolves once every local tree reached a safe boundary. */
  settle(signal: AbortSignal): Promise<void>;
  /** Trees still settling (for the log when the phase runs out of time). */
  unsettled(): readonly string[];
  /** abort_dispatches: seal the committer (nothing new commits), then abort the running dispatches. */
  sealAndAbort(): void;
  /** finish_commits: resolves once no commit is in flight. */
  commitsDrained(): Promise<void>;
  /** Trees with a commit in flight. */
  committing(): readonly string[];
  /** flush_deltas. */
  flushDeltas(): Promise<void>;
  /** end_streams: ends every stream with `shutdown`; resolves once each has written its last event. */
  endStreams(): Promise<void>;
  /** Streams still open. */
  openStreams(): number;
  /** release_ownership: deletes the node lease (the live nodes take the unfinished trees over). */
  handOver(): Promise<void>;
  /** close_connections: the transport, the stores and the Engine. */
  closeStores(graceMs: number): Promise<void>;
}

/** What the app adds to the Host's phases (`scope serve`); each part is bounded by its phase. */
export interface ShutdownParts {
  /** abort_dispatches, after the Host's dispatches are aborted: the app's own (the supervisor's processes). */
  readonly abortDispatches?: (signal: AbortSignal, boundMs: number) => Promise<void>;
  /** close_connections, before the Host's stores close: the HTTP listener, then the app's own connections. */
  readonly closeConnections?: (signal: AbortSignal, boundMs: number) => Promise<void>;
}

export function hostShutdownPhases(steps: HostShutdownSteps, bounds: Readonly<Record<ServerPhaseName, number>>, parts: ShutdownParts = {}): ShutdownPhase<ServerPhaseName>[] {
  return [
    { name: 'stop_admitting', run: async () => steps.stopAdmitting() },
    { name: 'settle_dispatches', run: (signal) => steps.settle(signal), left: () => ({ trees: steps.unsettled() }) },
    {
      name: 'abort_dispatches',
      run: async (signal) => {
        steps.sealAndAbort();
        await parts.abortDispatches?.(signal, bounds.abort_dispatches);
      },
    },
    { name: 'finish_commits', run: () => steps.commitsDrained(), left: () => ({ committing: steps.committing() }) },
    { name: 'flush_deltas', run: () => steps.flushDeltas() },
    { name: 'end_streams', run: () => steps.endStreams(), left: () => ({ openStreams: steps.openStreams() }) },
    { name: 'release_ownership', run: () => steps.handOver(), left: () => 'the node lease was not deleted: the other nodes take its trees over once it lapses' },
    {
      name: 'close_connections',
      run: async (signal) => {
        const started = performance.now();
        await parts.closeConnections?.(signal, bounds.close_connections);
        await steps.closeStores(Math.max(0, bounds.close_connections - (performance.now() - started)));
      },
    },
  ];
}

/** Counts open streams, so end_streams can wait for the last one to write its final event. */
export class OpenStreams {
  #open = 0;
  #idle: Array<() => void> = [];

  /** One stream opened; the returned function (idempotent) says it ended. */
  opened(): () => void {
    this.#open += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#open -= 1;
      if (this.#open === 0) for (const resolve of this.#idle.splice(0)) resolve();
    };
  }

  get count(): number {
    return this.#open;
  }

  /** Resolves once no stream is open. */
  idle(): Promise<void> {
    if (this.#open === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }
}
