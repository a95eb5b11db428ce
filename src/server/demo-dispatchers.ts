import { type DeltaEmitter, type Dispatcher, type Effect, type EffectRequest, Payload, type ReplayPolicy, Settlement } from '../kernel/index.js';

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

/**
 * demo.sleep: waits `ms` with a real timer, honouring the abort signal (an aborted sleep rejects,
 * which the Engine records as an Unknown outcome of a canceled dispatch); settles `{sleptMs}`.
 * Sleeping again under the same identity is harmless, so replay is allowed. The host's `shutdown`
 * signal also ends the sleep (Unknown outcome; a restore replays it).
 */
export function sleepDispatcher(shutdown?: AbortSignal): Dispatcher {
  return Object.freeze({
    async dispatch(request: EffectRequest, _emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
      const ms = effectObject(request.effect)?.ms;
      if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) return rejected('sleep needs {ms: non-negative integer}');
      await sleep(ms, shutdown === undefined ? signal : AbortSignal.any([signal, shutdown]));
      return Settlement.of('succeeded', Payload.encode({ sleptMs: ms }));
    },
    replayPolicy(): ReplayPolicy {
      return 'same_identity';
    },
  });
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
