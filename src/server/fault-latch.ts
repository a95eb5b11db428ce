import { ErrorCode, Event, KernelError } from '../kernel/index.js';
import type { TreeFaultView } from './host.js';

/**
 * Fail-secure on persistence faults (issue 16): when a tree's commit fails (storage unavailable or too
 * slow, a head that moved under it), its runtime stops; the tree then latches that FIRST cause. While
 * latched it refuses new input with 503 `runtime_stopped` saying what to do, wakes the long polls and
 * waits blocked on it with that error, and keeps serving reads. Only a fenced restore — a new
 * incarnation from the stored head, which the owner attempts by itself once storage answers — clears
 * it; later failures (a restore attempt that fails too) never replace the first cause.
 *
 * A writer fenced by another incarnation (a takeover elsewhere) is not a fault: the tree lives on there.
 */
export type TreeFault = TreeFaultView;

/** Incarnations that never latch: another writer owns the tree now. */
const notFaults: ReadonlySet<string> = new Set(['engine.tree.incarnation_conflict']);

/** Seconds a client waits before sending its input again: a restore is attempted within about that. */
const retryAfterSeconds = 1;

/** The refusal of input to a latched tree: 503 `runtime_stopped`, with a detail written for the client. */
export class TreeFaultedError extends KernelError {
  /** This 5xx's detail is written for the client (problem-details keeps it). */
  readonly detailIsPublic = true;
  readonly retryAfterSeconds = retryAfterSeconds;
  readonly fault: TreeFault;

  constructor(rootId: string, fault: TreeFault) {
    super(
      ErrorCode.runtimeStopped,
      `tree ${rootId} stopped at ${fault.since} because a commit failed (${fault.code}: ${fault.message}); nothing of this request was recorded. ` +
        `Reads still work. The owner restores the tree from its stored head by itself once storage answers (a new incarnation): ` +
        `send the request again then, or restore it now with POST /v1/trees/${encodeURIComponent(rootId)}/restore.`,
    );
    this.name = 'TreeFaultedError';
    this.fault = fault;
  }
}

export class FaultLatch {
  readonly #faults = new Map<string, TreeFault>();
  readonly #sleepers = new Map<string, Set<(error: TreeFaultedError) => void>>();

  /**
   * The runtime of `root` stopped with classification `code`. Latches unless a fault is already
   * latched (the first cause stays) or the code is not a fault. `describe` gives the stopped runtime's
   * own words, read on the next microtask (the Engine refuses calls from inside its listener); the
   * sleepers on the tree are woken right after, so their answer carries them.
   */
  trip(root: string, fault: TreeFault, describe?: () => string | undefined): boolean {
    if (notFaults.has(fault.code) || this.#faults.has(root)) return false;
    this.#faults.set(root, fault);
    queueMicrotask(() => {
      let message: string | undefined;
      try {
        message = describe?.();
      } catch {
        // The classification stays the message.
      }
      if (message !== undefined && this.#faults.get(root) === fault) this.#faults.set(root, { ...fault, message });
      const sleepers = this.#sleepers.get(root);
      this.#sleepers.delete(root);
      const latched = this.#faults.get(root);
      if (latched === undefined) return;
      const error = new TreeFaultedError(root, latched);
      for (const wake of sleepers ?? []) wake(error);
    });
    return true;
  }

  /** The latched fault, if any. */
  get(root: string): TreeFault | undefined {
    return this.#faults.get(root);
  }

  /** A restore installed a new incarnation (or the tree left this node): the fault is over. */
  clear(root: string): void {
    this.#faults.delete(root);
  }

  /** The refusal for input to `root`, if it is latched. */
  refusal(root: string): TreeFaultedError | undefined {
    const fault = this.#faults.get(root);
    return fault === undefined ? undefined : new TreeFaultedError(root, fault);
  }

  /**
   * An AbortSignal that aborts with the refusal when `root` latches (at once if it is latched), for
   * a wait blocked on the tree; `release` when the wait ends.
   */
  wakeOnFault(root: string): { readonly signal: AbortSignal; release(): void } {
    const refusal = this.refusal(root);
    if (refusal !== undefined) return { signal: AbortSignal.abort(refusal), release: () => undefined };
    const abort = new AbortController();
    const wake = (error: TreeFaultedError): void => abort.abort(error);
    let sleepers = this.#sleepers.get(root);
    if (sleepers === undefined) {
      sleepers = new Set();
      this.#sleepers.set(root, sleepers);
    }
    sleepers.add(wake);
    return {
      signal: abort.signal,
      release: () => {
        const current = this.#sleepers.get(root);
        current?.delete(wake);
        if (current?.size === 0) this.#sleepers.delete(root);
      },
    };
  }
}

/**
 * The fault a tree's `agent.runtime.stopped` log entry announces, as the refusal its owner answers
 * with — for a long poll on another node, which learns of the owner's latch from the tree's log (the
 * owner appends the event there like every attempt event). Undefined for an entry that is not a
 * fault (a writer fenced by another incarnation) or that cannot be read.
 */
export function faultOfStoppedEntry(rootId: string, data: string): TreeFaultedError | undefined {
  let event: Event;
  try {
    event = Event.parse(data);
  } catch {
    return undefined;
  }
  const failure = event.runtimeStopped()?.failure;
  const incarnationId = event.treeIncarnationId?.toString();
  if (failure === undefined || incarnationId === undefined || notFaults.has(failure.code)) return undefined;
  return new TreeFaultedError(rootId, { code: failure.code, message: failure.code, since: event.occurredAt, incarnationId });
}
