import { setMaxListeners } from 'node:events';

/**
 * An AbortController for a long-lived signal that many short waits listen to at once: a shutdown that
 * every open poll, stream and sleep links to with `linkedAbort` (kernel/deferred.ts). Node warns of a
 * listener leak past 10 listeners on one signal; here that many is the normal load of 11 concurrent
 * requests, not a leak (each link detaches when its wait ends), so the warning is off for this signal.
 */
export function sharedAbortController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}
