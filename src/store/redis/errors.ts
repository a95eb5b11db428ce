import { commitConflict, ErrorCode, KernelError, treeIncarnationConflict } from '../../kernel/index.js';

/**
 * The one place where the Lua scripts' return codes and Redis transport failures become the
 * kernel's typed errors. Every script replies with an array whose first element is a status:
 *
 * | status | meaning                                                        | result / error                |
 * |--------|----------------------------------------------------------------|-------------------------------|
 * | 1      | installed (host writes applied; event-log ids follow)          | `installed`                   |
 * | 2      | an identical retry while its sequence is current (no writes)   | `duplicate`                   |
 * | 0      | nothing to act on (purge of an absent head)                    | `absent`                      |
 * | -1     | the identity is taken by other content, or history is replayed | `commit_conflict`             |
 * | -2     | absent head, another writer, not the successor, head moved     | `tree_incarnation_conflict`   |
 * | -4     | the caller broke the script's ARGV contract (reason follows)   | `invalid_commit`              |
 * | -5     | a spliced snapshot does not fit the stored one (no writes)     | `stale` (the caller resends)  |
 * | other  | a reply no script produces                                     | `committer_unavailable`       |
 *
 * The pointer scripts (idempotency, start fence) answer a bare 1 or 0 instead: {@link mapFlagReply}.
 *
 * Only `commit_conflict` and `tree_incarnation_conflict` prove something about the head. Every
 * failure that is not a script reply — a timeout, a lost connection, a server error, a shutdown —
 * becomes `committer_unavailable`, whose message says the head is unknown: it is never read as
 * "unchanged" (kernel-contract §3.1, §3.7).
 */
export const scriptStatus = {
  installed: 1,
  duplicate: 2,
  absent: 0,
  commitConflict: -1,
  incarnationConflict: -2,
  invalidArguments: -4,
  spliceStale: -5,
} as const;

/** `stale`: a commit sent as a splice of the stored snapshot found other bytes there; nothing was written. */
export type ScriptOutcome = 'installed' | 'duplicate' | 'absent' | 'stale';

/** A successful script reply: its outcome and, for `installed`, the appended event-log ids. */
export interface ScriptResult {
  readonly outcome: ScriptOutcome;
  readonly entryIds: readonly string[];
}

/** The error for any failure that leaves the head unknown. */
export function committerUnavailable(what: string, detail: string, cause?: unknown): KernelError {
  return new KernelError(
    ErrorCode.committerUnavailable,
    `${what}: ${detail}; the tree head is unknown (not unchanged): load it and reconcile before acting on it`,
    cause === undefined ? undefined : { cause },
  );
}

function asStatus(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'bigint') return Number(value);
  return undefined;
}

/** Maps one script reply to its result, or throws the kernel error its status stands for. */
export function mapScriptReply(what: string, reply: unknown): ScriptResult {
  const items = Array.isArray(reply) ? (reply as unknown[]) : undefined;
  const status = asStatus(items?.[0]);
  switch (status) {
    case scriptStatus.installed: {
      const ids = (items as unknown[]).slice(1);
      if (!ids.every((id): id is string => typeof id === 'string')) {
        throw committerUnavailable(what, `unexpected reply ${describeReply(reply)}`);
      }
      return { outcome: 'installed', entryIds: ids };
    }
    case scriptStatus.duplicate:
      return { outcome: 'duplicate', entryIds: [] };
    case scriptStatus.absent:
      return { outcome: 'absent', entryIds: [] };
    case scriptStatus.spliceStale:
      return { outcome: 'stale', entryIds: [] };
    case scriptStatus.commitConflict:
      throw commitConflict();
    case scriptStatus.incarnationConflict:
      throw treeIncarnationConflict();
    case scriptStatus.invalidArguments:
      throw new KernelError(
        ErrorCode.invalidCommit,
        `${what}: the redis script refused its arguments (${String(items?.[1] ?? 'no reason')}); nothing was written`,
      );
    default:
      throw committerUnavailable(what, `unexpected reply ${describeReply(reply)}`);
  }
}

/**
 * The reply of a compare-and-set script that answers 1 (done) or 0 (the precondition did not hold,
 * nothing written): true or false. A `{-4, why}` reply is the caller's ARGV mistake
 * (`invalid_commit`); anything else leaves the outcome unknown (`committer_unavailable`).
 */
export function mapFlagReply(what: string, reply: unknown): boolean {
  const status = asStatus(reply);
  if (status === 1) return true;
  if (status === 0) return false;
  if (Array.isArray(reply) && asStatus(reply[0]) === scriptStatus.invalidArguments) {
    throw new KernelError(ErrorCode.invalidCommit, `${what}: the redis script refused its arguments (${String(reply[1] ?? 'no reason')}); nothing was written`);
  }
  throw committerUnavailable(what, `unexpected reply ${describeReply(reply)}`);
}

/** A reply as short text for an error message. */
export function describeReply(reply: unknown): string {
  try {
    const text = JSON.stringify(reply, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
    return text === undefined ? String(reply) : text.slice(0, 200);
  } catch {
    return String(reply);
  }
}

const maxTimerMs = 2_147_483_647;

/** Checks a per-call deadline option. */
export function checkTimeoutMs(value: unknown, name = 'timeoutMs'): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > maxTimerMs) {
    throw new TypeError(`${name} must be an integer number of milliseconds in 1..${maxTimerMs}, got ${String(value)}`);
  }
  return value;
}

function asUnavailable(what: string, error: unknown): KernelError {
  if (error instanceof KernelError) return error;
  return committerUnavailable(what, `redis failed: ${error instanceof Error ? error.message : String(error)}`, error);
}

interface PendingCall {
  readonly what: string;
  readonly deadline: number;
  readonly reject: (error: KernelError) => void;
  settled: boolean;
}

/**
 * The deadlines of one store's storage calls: each call gets its own bounded deadline and the
 * host's shutdown signal. Kernel errors (the mapped script statuses, snapshot validation) pass
 * through; anything else — the deadline, the shutdown, a connection or server error — rejects with
 * `committer_unavailable`. The abandoned call is not cancelled (Redis cannot take a command back):
 * it may still land, which is exactly why the head is then unknown.
 *
 * All calls share one timeout, so they expire in the order they started: one timer serves them all
 * (it holds the process open only while a call is outstanding) and one shutdown listener releases
 * them all, instead of a timer and a listener per call on the commit path.
 */
export class StorageDeadlines {
  readonly #timeoutMs: number;
  readonly #shutdown: AbortSignal | undefined;
  /** Calls in start order (= deadline order); `#head` is the first that may still be pending. */
  #pending: PendingCall[] = [];
  #head = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(timeoutMs: number, shutdown?: AbortSignal) {
    this.#timeoutMs = checkTimeoutMs(timeoutMs);
    this.#shutdown = shutdown;
    shutdown?.addEventListener('abort', () => this.#rejectAll(), { once: true });
  }

  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** Runs `operation` under a fresh deadline; see the class comment for what a rejection means. */
  run<T>(what: string, operation: () => Promise<T>): Promise<T> {
    if (this.#shutdown?.aborted === true) return Promise.reject(this.#shutDown(what));
    return new Promise<T>((resolve, reject) => {
      const call: PendingCall = { what, deadline: performance.now() + this.#timeoutMs, reject, settled: false };
      this.#pending.push(call);
      if (this.#timer === undefined) this.#arm();
      else if (this.#pending.length - this.#head === 1) this.#timer.ref();
      let promise: Promise<T>;
      try {
        promise = operation();
      } catch (error) {
        promise = Promise.reject(error);
      }
      promise.then(
        (value) => {
          if (this.#settle(call)) resolve(value);
        },
        (error: unknown) => {
          if (this.#settle(call)) reject(asUnavailable(what, error));
        },
      );
    });
  }

  #shutDown(what: string): KernelError {
    return committerUnavailable(what, 'the host shut the store down', this.#shutdown?.reason);
  }

  /** Marks `call` settled (false if the deadline or shutdown already did) and drops settled heads. */
  #settle(call: PendingCall): boolean {
    if (call.settled) return false;
    call.settled = true;
    while (this.#head < this.#pending.length && (this.#pending[this.#head] as PendingCall).settled) this.#head += 1;
    if (this.#head === this.#pending.length) {
      this.#pending = [];
      this.#head = 0;
      // Nothing outstanding: the armed timer may fire later, but must not keep the process alive.
      this.#timer?.unref();
    } else if (this.#head > 1_024 && this.#head * 2 > this.#pending.length) {
      this.#pending = this.#pending.slice(this.#head);
      this.#head = 0;
    }
    return true;
  }

  #arm(): void {
    const next = this.#pending[this.#head];
    if (next === undefined) return;
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, Math.ceil(next.deadline - performance.now())));
  }

  #expire(): void {
    this.#timer = undefined;
    const now = performance.now();
    for (let next = this.#pending[this.#head]; next !== undefined && (next.settled || next.deadline <= now); next = this.#pending[this.#head]) {
      if (!next.settled) {
        next.settled = true;
        next.reject(committerUnavailable(next.what, `no reply within ${this.#timeoutMs} ms`));
      }
      this.#head += 1;
    }
    if (this.#head === this.#pending.length) {
      this.#pending = [];
      this.#head = 0;
    }
    this.#arm();
  }

  #rejectAll(): void {
    const pending = this.#pending.slice(this.#head);
    this.#pending = [];
    this.#head = 0;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const call of pending) {
      if (call.settled) continue;
      call.settled = true;
      call.reject(this.#shutDown(call.what));
    }
  }
}
