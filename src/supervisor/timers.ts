/**
 * The time seam of the supervisor, the child-process handle and the process dispatcher: a
 * monotonic clock and one-shot timers. Every duration rule (idle TTL, start timeout, reconcile
 * interval, not-reading bound, request timeout) reads time only through it, so tests drive those
 * rules with a manual implementation instead of sleeping.
 */
export interface Timers {
  /** Milliseconds on a monotonic clock (never wall-clock time: it must not jump backwards). */
  now(): number;
  /** Calls `callback` once, `ms` milliseconds from now, unless cancelled first. */
  after(ms: number, callback: () => void): Timer;
}

/** A scheduled callback; `cancel()` is idempotent and harmless after the callback ran. */
export interface Timer {
  cancel(): void;
}

/**
 * Real time: `performance.now()` and `setTimeout`. Timers are unref'd: a pending idle check or
 * timeout never keeps the Node process alive by itself (live children hold their own handles).
 */
export const systemTimers: Timers = Object.freeze({
  now(): number {
    return performance.now();
  },
  after(ms: number, callback: () => void): Timer {
    const handle = setTimeout(callback, Math.max(0, Math.min(ms, maxTimerMs)));
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
});

/** The largest delay `setTimeout` honours (a larger one fires at once). */
export const maxTimerMs = 2_147_483_647;
