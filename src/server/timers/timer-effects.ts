import type { Dispatcher, Effect, ProcessSnapshot, TreeSnapshot } from '../../kernel/index.js';

/**
 * Which Effects are durable timers. A dispatcher marked {@link durableTimer} says how each of its
 * Effects names its due instant; the Host then fixes that instant when the Effect becomes pending
 * (the one boundary where the Host may read the clock: a Step never does) and records it with that
 * commit, so a restore, a takeover or a wake from hibernation ends the wait at the same instant.
 */
export interface TimerKind {
  /**
   * The absolute due instant (epoch ms) of `effect` becoming pending at `nowMs`: an instant in the
   * Effect as it stands, or `nowMs` plus a relative duration. Undefined for a malformed Effect (the
   * dispatcher fails it before waiting).
   */
  dueOf(effect: Effect, nowMs: number): number | undefined;
}

const kinds = new WeakMap<Dispatcher, TimerKind>();

/** Marks `dispatcher` as a durable timer whose Effects' due instants `kind` reads. Returns it. */
export function durableTimer<D extends Dispatcher>(dispatcher: D, kind: TimerKind): D {
  kinds.set(dispatcher, kind);
  return dispatcher;
}

export function timerKindOf(dispatcher: Dispatcher | undefined): TimerKind | undefined {
  return dispatcher === undefined ? undefined : kinds.get(dispatcher);
}

/** One timer Effect a head holds pending. */
export interface PendingTimer {
  readonly processId: string;
  readonly effectId: string;
  readonly effect: Effect;
  readonly kind: TimerKind;
}

/** The timer kind of a process's deployment (undefined: not a timer, or not held here). */
export type TimerKindOfProcess = (process: ProcessSnapshot) => TimerKind | undefined;

/** Every dispatcher Effect of `tree` that is pending (dispatch permitted, no settlement) on a durable timer. */
export function pendingTimersOf(tree: TreeSnapshot, kindOf: TimerKindOfProcess): PendingTimer[] {
  const timers: PendingTimer[] = [];
  for (const process of tree.processSnapshots()) {
    const prepared = process.prepared;
    if (process.isTerminal || prepared === undefined) continue;
    for (const effect of prepared.effects()) {
      if (effect.phase !== 'pending' || effect.effect.target !== 'dispatcher') continue;
      const kind = kindOf(process);
      if (kind !== undefined) timers.push({ processId: process.processId.toString(), effectId: effect.id.toString(), effect: effect.effect, kind });
    }
  }
  return timers;
}

/** The suffix of a timer's record under its tree (`<prefix>:{<root>}:record:timer:<effect>`). */
export function timerRecordSuffix(effectId: string): string {
  return `timer:${effectId}`;
}

/** The record's value: the due instant (epoch ms, decimal). */
export function decodeTimerRecord(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,16}$/.test(value)) return undefined;
  return Number(value);
}
