import { EffectId, ProcessId, type TreeSnapshot } from '../../kernel/index.js';
import type { TimerEntry } from '../../store/timer-index.js';
import { OwnedElsewhereError } from '../ownership/owned-elsewhere.js';
import type { Located } from '../residency.js';
import type { WakeOutcome } from './timer-service.js';

export interface TimerWakeOptions {
  readonly loadHead: (root: string) => Promise<TreeSnapshot | undefined>;
  /** Where a command on the process would run, restoring its tree first when that is this node's to do. */
  readonly commandable: (processId: string) => Promise<Located>;
}

/**
 * Wakes the tree of a due timer exactly as a command on it would (src/server/ownership/command-routing.ts):
 * a tree this node hibernated, or an ownerless one, is restored here — its restore replays the pending
 * timer, which finds its instant passed and settles — and one a live other node owns is left to that
 * node. First the head is asked whether it still holds the timer pending: the index is only a hint.
 */
export function timerWake(options: TimerWakeOptions): (entry: TimerEntry) => Promise<WakeOutcome> {
  return async (entry) => {
    const head = await options.loadHead(entry.rootId);
    if (!holdsPending(head, entry)) return 'stale';
    try {
      const located = await options.commandable(entry.processId);
      return located.kind === 'local' ? 'woken' : 'elsewhere';
    } catch (error) {
      if (error instanceof OwnedElsewhereError) return 'elsewhere';
      throw error;
    }
  };
}

function holdsPending(head: TreeSnapshot | undefined, entry: TimerEntry): boolean {
  if (head === undefined) return false;
  let effect;
  try {
    effect = head.process(ProcessId.parse(entry.processId))?.prepared?.effect(EffectId.parse(entry.effectId));
  } catch {
    return false;
  }
  return effect?.phase === 'pending';
}
