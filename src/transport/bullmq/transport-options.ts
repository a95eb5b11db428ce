/**
 * Timing of the BullMQ transport, shared by the owner (API) and the workers. BullMQ's 30 s
 * defaults are far too slow for takeover and for tests, so everything is configurable.
 */
export interface TransportTiming {
  /** An attempt unclaimed this long is revoked and fails definitely with `transport.unclaimed`. */
  readonly claimWindowMs: number;
  /** A claimed attempt unsettled this long after its offer becomes Unknown. */
  readonly dispatchDeadlineMs: number;
  /** The claimant's lease; it renews every third of it, and the owner declares Unknown when it lapses. */
  readonly leaseMs: number;
  /** BullMQ job lock duration. */
  readonly lockDurationMs: number;
  /** BullMQ stalled-job check interval. */
  readonly stalledIntervalMs: number;
}

export const defaultTransportTiming: TransportTiming = Object.freeze({
  claimWindowMs: 30_000,
  dispatchDeadlineMs: 300_000,
  leaseMs: 10_000,
  lockDurationMs: 10_000,
  stalledIntervalMs: 5_000,
});

/** The definite failure code of an attempt no worker claimed in time. */
export const unclaimedCode = 'transport.unclaimed';

/** The definite failure code of a claimed attempt whose job could not be rebuilt (it never ran). */
export const malformedJobCode = 'transport.malformed_job';
