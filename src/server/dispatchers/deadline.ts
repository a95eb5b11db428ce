import { deadlineOperation, instantSchema } from '../../../strategies/coordination/deadline.js';
import { type DeltaEmitter, type Dispatcher, type Effect, type EffectRequest, Payload, type ReplayPolicy, Settlement } from '../../kernel/index.js';
import { linkedAbort } from '../../kernel/deferred.js';
import { ownerDispatched } from '../../transport/placement.js';
import { durableTimer, type TimerKind } from '../timers/timer-effects.js';
import type { TimerService } from '../timers/timer-service.js';

/**
 * The Deadline timer (`strategies/coordination/deadline.ts`): one dispatch waits until the
 * Effect's absolute instant, then settles `succeeded` with `{at, firedAt}`. An instant in the past
 * fires at once. It runs where the owner runs the tree's Effects, holding nothing but a timer.
 *
 * Cancellable: the dispatch's AbortSignal (process cancellation or kill) or the Host's shutdown
 * signal clears the timer and rejects with the abort reason, which the Engine records as an Unknown
 * outcome. The policy is `same_identity`, so a restore or takeover replays the timer under its own
 * identity — the instant is in the Effect, so the replay fires at the same instant (or at once).
 * A malformed request is a definite `failed` settlement, before any waiting.
 */

/** The time source and timer, injectable for tests (defaults: `Date.now`, `setTimeout`). */
export interface DeadlineClock {
  now(): number;
  setTimer(callback: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export interface DeadlineDispatcherOptions {
  /** Aborted when the Host stops waiting for dispatches: every pending timer ends (Unknown; replayed on restore). */
  readonly shutdown?: AbortSignal;
  readonly clock?: DeadlineClock;
  /**
   * The Host's timer service: the deadline is then a durable timer (src/server/timers/): it waits on
   * the service, not on a timer of its own, and its tree may hibernate until the instant.
   */
  readonly timers?: () => TimerService | undefined;
}

/** setTimeout's longest delay; a later instant is reached in several hops. */
const maxTimerMs = 2_147_483_647;

const systemClock: DeadlineClock = Object.freeze({
  now: () => Date.now(),
  setTimer: (callback: () => void, ms: number) => setTimeout(callback, ms),
  clearTimer: (handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>),
});

function rejected(message: string): Settlement {
  return Settlement.of('failed', Payload.encode({ error: message }));
}

/** The instant a deadline request names, in epoch milliseconds, or undefined when it names none. */
export function deadlineInstant(request: EffectRequest): { readonly at: string; readonly ms: number } | undefined {
  return instantOf(request.effect);
}

function instantOf(effect: Effect): { readonly at: string; readonly ms: number } | undefined {
  const body = effect.payload.decode<unknown>();
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { operation, at } = body as Record<string, unknown>;
  if (operation !== deadlineOperation || typeof at !== 'string' || !instantSchema.accepts(Payload.encode(at))) return undefined;
  const ms = Date.parse(at);
  return Number.isFinite(ms) ? { at, ms } : undefined;
}

/** Resolves once `clock.now()` reaches `targetMs`; rejects with the reason as soon as `signal` aborts. */
function until(clock: DeadlineClock, targetMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    let handle: unknown;
    const onAbort = (): void => {
      clock.clearTimer(handle);
      reject(signal.reason);
    };
    const arm = (): void => {
      const left = targetMs - clock.now();
      if (left <= 0) {
        signal.removeEventListener('abort', onAbort);
        resolve();
        return;
      }
      handle = clock.setTimer(arm, Math.min(left, maxTimerMs));
    };
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    arm();
  });
}

/** A deadline's instant is its Effect's `at`, whenever it became pending. */
export const deadlineTimer: TimerKind = Object.freeze({
  dueOf: (effect: Effect): number | undefined => instantOf(effect)?.ms,
});

export function deadlineDispatcher(options: DeadlineDispatcherOptions = {}): Dispatcher {
  const clock = options.clock ?? systemClock;
  const timers = options.timers;
  const dispatcher: Dispatcher = Object.freeze({
    async dispatch(request: EffectRequest, _emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
      const instant = deadlineInstant(request);
      if (instant === undefined) return rejected(`a deadline needs {operation: "${deadlineOperation}", at: RFC 3339 instant}`);
      const link = linkedAbort([signal, options.shutdown]);
      try {
        const service = timers?.();
        if (service === undefined) await until(clock, instant.ms, link.signal);
        else await service.until(instant.ms, link.signal);
      } finally {
        link.release();
      }
      return Settlement.of('succeeded', Payload.encode({ at: instant.at, firedAt: new Date(clock.now()).toISOString() }));
    },
    replayPolicy(): ReplayPolicy {
      return 'same_identity';
    },
    ...(timers === undefined ? {} : { parkable: () => true }),
  });
  if (timers !== undefined) durableTimer(dispatcher, deadlineTimer);
  // A timer holds no resource a worker pool would spread, and its guarantee ("fires at the instant,
  // or within the lease TTL + 5 s of a node returning") is the owner's: a takeover replays it where
  // the tree now lives. So it stays in the owner under the BullMQ transport too.
  return ownerDispatched(dispatcher);
}
