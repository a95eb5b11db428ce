import { type DeltaEmitter, type Dispatcher, type Effect, type EffectRequest, Payload, type ReplayPolicy, Settlement } from '../kernel/index.js';
import { linkedAbort } from '../kernel/deferred.js';
import { durableTimer, type TimerKind } from './timers/timer-effects.js';
import type { TimerService } from './timers/timer-service.js';

/**
 * The Dispatchers of the demo deployments. Dispatchers may do real work (timers here); the
 * Definitions they serve stay deterministic. Each rejects a malformed request before doing
 * anything with a definite `failed` settlement, as the Dispatcher contract asks.
 */

function effectObject(effect: Effect): Record<string, unknown> | undefined {
  const value = effect.payload.decode<unknown>();
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function rejected(message: string): Settlement {
  return Settlement.of('failed', Payload.encode({ error: message }));
}

/** demo.echo: one delta `{index, char}` per character (code point), then `{value}`; replayable. */
export function echoDispatcher(): Dispatcher {
  return Object.freeze({
    async dispatch(request: EffectRequest, emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
      const value = effectObject(request.effect)?.value;
      if (typeof value !== 'string') return rejected('echo needs {value: string}');
      signal.throwIfAborted();
      if (emit !== undefined) {
        let index = 0;
        for (const char of value) {
          signal.throwIfAborted();
          emit(Payload.encode({ index, char }));
          index += 1;
        }
      }
      return Settlement.of('succeeded', Payload.encode({ value }));
    },
    replayPolicy(): ReplayPolicy {
      return 'same_identity';
    },
  });
}

/** Resolves after `ms`, or rejects with the abort reason as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function sleepMsOf(effect: Effect): number | undefined {
  const ms = effectObject(effect)?.ms;
  return typeof ms === 'number' && Number.isSafeInteger(ms) && ms >= 0 ? ms : undefined;
}

/**
 * A sleep's instant: `ms` after the moment its Effect became pending. The Step only says how long;
 * the Host fixes the instant at the pending commit (the one boundary that may read the clock) and
 * keeps it with the head, so a restore ends the sleep at that instant, not `ms` after the restore.
 */
export const sleepTimer: TimerKind = Object.freeze({
  dueOf(effect: Effect, nowMs: number): number | undefined {
    const ms = sleepMsOf(effect);
    return ms === undefined ? undefined : nowMs + ms;
  },
});

/**
 * demo.sleep: waits `ms`, honouring the abort signal (an aborted sleep rejects, which the Engine
 * records as an Unknown outcome of a canceled dispatch); settles `{sleptMs}`. Sleeping again under
 * the same identity is harmless, so replay is allowed. The host's `shutdown` signal also ends the
 * sleep (Unknown outcome; a restore replays it).
 *
 * With the Host's `timers` (src/server/timers/) the sleep is a durable timer: it waits on the Host's
 * timer service for the instant its pending commit fixed, holds no JS timer of its own, and lets its
 * tree hibernate while it waits (`parkable`); the service wakes the tree at the instant, on whichever
 * node then holds it. Without, it is a plain in-memory timer of `ms` (a restore sleeps `ms` again).
 */
export function sleepDispatcher(shutdown?: AbortSignal, timers?: () => TimerService | undefined): Dispatcher {
  const dispatcher: Dispatcher = Object.freeze({
    async dispatch(request: EffectRequest, _emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
      const ms = sleepMsOf(request.effect);
      if (ms === undefined) return rejected('sleep needs {ms: non-negative integer}');
      const link = linkedAbort([signal, shutdown]);
      try {
        const service = timers?.();
        if (service === undefined) await sleep(ms, link.signal);
        else await service.until(service.dueOf(request, sleepTimer) ?? 0, link.signal);
      } finally {
        link.release();
      }
      return Settlement.of('succeeded', Payload.encode({ sleptMs: ms }));
    },
    replayPolicy(): ReplayPolicy {
      return 'same_identity';
    },
    ...(timers === undefined ? {} : { parkable: () => true }),
  });
  return timers === undefined ? dispatcher : durableTimer(dispatcher, sleepTimer);
}

/**
 * demo.unreliable: by the Effect's `mode` — `ok` succeeds, `fail` settles `failed` (definite),
 * `unknown` throws on the first attempt of an Effect (the outcome is Unknown) and succeeds on any
 * later attempt (a replay). Settlements carry `{mode, attempts}`, the attempts this dispatcher made
 * for the Effect (counted in memory, so a server restart starts over). Replay policy:
 * `same_identity` exactly when the Effect says `replayable: true`.
 */
export function unreliableDispatcher(): Dispatcher {
  const attempts = new Map<string, number>();
  const maxTracked = 10_000;
  return Object.freeze({
    async dispatch(request: EffectRequest, _emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
      const body = effectObject(request.effect);
      const mode = body?.mode;
      if (mode !== 'ok' && mode !== 'fail' && mode !== 'unknown') return rejected('unreliable needs {mode: ok | fail | unknown}');
      signal.throwIfAborted();
      const id = request.id.toString();
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.delete(id);
      if (mode === 'unknown' && attempt === 1) {
        attempts.set(id, attempt);
        while (attempts.size > maxTracked) attempts.delete(attempts.keys().next().value as string);
        throw new Error('demo.unreliable: the outcome of this attempt is unknown');
      }
      const payload = Payload.encode({ mode, attempts: attempt });
      return Settlement.of(mode === 'fail' ? 'failed' : 'succeeded', payload);
    },
    replayPolicy(effect: Effect): ReplayPolicy {
      return effectObject(effect)?.replayable === true ? 'same_identity' : 'never';
    },
  });
}
