/**
 * What the Supervisor needs of a process, and how a driver starts one. The Supervisor decides
 * when a process is started, shared, replaced and closed; a driver only says how to start it and
 * which configuration (fingerprint) it would start from.
 */

/** A running long-lived process. */
export interface SupervisedProcess {
  /** Settles (never rejects) as soon as the process can serve no more: it exited or is being killed. */
  readonly done: Promise<void>;
  /** The synchronous view of `done`, so a lease never hands out a process that has already died. */
  readonly isDone: boolean;
  /** Kills the process and resolves once it is gone. Safe to call more than once. */
  close(): Promise<void>;
}

/** What a start receives. */
export interface StartContext {
  readonly key: string;
  /** The fingerprint of the lease that asked for this start. */
  readonly fingerprint: string;
  /**
   * Bounds the start, not the process: it aborts when the start timeout expires or the
   * supervisor closes or drains the key while the start runs. A starter must never tie the
   * process's lifetime to it (no `spawn(..., { signal })`).
   */
  readonly signal: AbortSignal;
}

/** A finished start. */
export interface Started<P> {
  readonly process: P;
  /**
   * The fingerprint the process actually started from, when the start learned what the lease could
   * not know (a version reported in a handshake). Absent keeps the lease's fingerprint.
   */
  readonly fingerprint?: string;
}

/**
 * Starts one process. Rejecting fails the start for every lease waiting on it. A process it
 * returns after its signal aborted is closed by the supervisor, never handed out.
 */
export type Starter<P> = (context: StartContext) => Promise<Started<P>>;

/** A duck-typed check of a starter's result (the starter is caller code). */
export function isSupervisedProcess(value: unknown): value is SupervisedProcess {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<SupervisedProcess>;
  return candidate.done instanceof Promise && typeof candidate.isDone === 'boolean' && typeof candidate.close === 'function';
}
