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
