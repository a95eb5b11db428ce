import type { Dispatcher } from '../kernel/index.js';

const trusting = new WeakSet<Dispatcher>();

/**
 * Opts a Dispatcher in to resolution from late reports. An effect that became Unknown while a BullMQ
 * worker was still running its attempt (a takeover, a lapsed deadline) stays Unknown by default: the
 * worker's later report is evidence a person may resolve from. A deployment whose reports are
 * trustworthy (the worker's answer is the outcome, not a guess) may let the owner resolve the
 * Unknown from a definite report itself; the resolution is committed as any other, and a report of
 * doubt leaves the effect Unknown. Returns the same dispatcher.
 */
export function resolvesFromLateReports<D extends Dispatcher>(dispatcher: D): D {
  trusting.add(dispatcher);
  return dispatcher;
}

export function trustsLateReports(dispatcher: Dispatcher | undefined): boolean {
  return dispatcher !== undefined && trusting.has(dispatcher);
}
