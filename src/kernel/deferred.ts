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
