/** A promise with its settle functions: internal plumbing of the kernel, the supervisor and the Host (not on the public surface). */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * Waits for `promise`, giving up with the signal's reason when `signal` aborts first. Nothing is left
 * behind either way: the abort listener is removed, and a wait that gave up leaves no reaction on
 * `promise`. A `then` per wait could not be taken back, so each wait that gave up on a long-lived
 * promise (a waiting Process's result under repeated long polls) kept its closures until that
 * promise settled: about 3 KB per poll. Waits on one promise share one reaction (see `subscribe`).
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      unsubscribe();
      reject(signal.reason);
    };
    const unsubscribe = subscribe(promise, {
      resolve: (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      reject: (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    });
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

interface Waiter<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** The waiters of each pending promise that `abortable` watches: one reaction per promise, not per wait. */
const waitersOf = new WeakMap<Promise<unknown>, Set<Waiter<unknown>>>();

/** Adds `waiter` to `promise`'s waiters; returns its removal. */
function subscribe<T>(promise: Promise<T>, waiter: Waiter<T>): () => void {
  let waiters = waitersOf.get(promise) as Set<Waiter<T>> | undefined;
  if (waiters === undefined) {
    const created = new Set<Waiter<T>>();
    waiters = created;
    waitersOf.set(promise, created as Set<Waiter<unknown>>);
    promise.then(
      (value) => {
        waitersOf.delete(promise);
        for (const each of created) each.resolve(value);
      },
      (error: unknown) => {
        waitersOf.delete(promise);
        for (const each of created) each.reject(error);
      },
    );
  }
  const joined = waiters;
  joined.add(waiter);
  return () => joined.delete(waiter);
}

/**
 * A signal that aborts when any of `sources` does (with that source's reason), or after `timeoutMs`
 * (with a `TimeoutError`, as `AbortSignal.timeout` gives), and `release()`, which detaches it from
 * every source and clears the timer.
 *
 * Why not `AbortSignal.any`: on Node 20 each combined signal stays among a long-lived source's
 * dependants for as long as that source lives, once it has been observed and aborted, or even when
 * it never aborts (nodejs/node#55351, #64476). A server combines its shutdown signal with one short
 * signal per long poll, stream and sleep, so that is a leak of one entry per request. Call
 * `release()` when the operation ends (a `finally`); an aborted link releases itself.
 */
export interface LinkedAbort {
  readonly signal: AbortSignal;
  release(): void;
}

export function linkedAbort(sources: readonly (AbortSignal | undefined)[], timeoutMs?: number): LinkedAbort {
  const controller = new AbortController();
  const detach: Array<() => void> = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const release = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    for (const undo of detach.splice(0)) undo();
  };
  const abort = (reason: unknown): void => {
    release();
    controller.abort(reason);
  };
  for (const source of sources) {
    if (source === undefined) continue;
    if (source.aborted) {
      abort(source.reason);
      return { signal: controller.signal, release };
    }
    const onAbort = (): void => abort(source.reason);
    source.addEventListener('abort', onAbort, { once: true });
    detach.push(() => source.removeEventListener('abort', onAbort));
  }
  if (timeoutMs !== undefined) {
    timer = setTimeout(() => abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), timeoutMs);
    // Like AbortSignal.timeout: a pending timeout alone does not keep the process alive.
    timer.unref?.();
  }
  return { signal: controller.signal, release };
}
