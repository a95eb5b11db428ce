/**
 * The wall-clock seam of observation stamps (`Event.occurredAt`, `Delta.emittedAt`). The Engine
 * reads time only through a Clock, so tests inject a fixed or stepping clock instead of sleeping.
 *
 * Wall-clock readings describe when a fact was observed; they never order facts (sequences do)
 * and never measure durations (those come from a monotonic source).
 */
export interface Clock {
  /** The current instant; it must be a valid Date. */
  now(): Date;
}

/** The process's real wall clock. */
export const systemClock: Clock = Object.freeze({
  now(): Date {
    return new Date();
  },
});
