import type { EffectId, ProcessId, TreeIncarnationId } from '../kernel/identity.js';
import type { SettlementStatus } from '../kernel/settlement.js';
import type { TreeSnapshot } from '../kernel/tree-snapshot.js';
import {
  fixtureEffectId,
  parkedRootTree,
  rootWithPreparedEffect,
  runningRootTree,
  terminalRootTree,
} from './snapshot-fixtures.js';

/**
 * The recovery cuts one writer of one tree commits in the committer conformance suite. Every
 * method is deterministic, so calling it twice yields byte-identical snapshots (what a store sees
 * when execution returns to an earlier cut).
 */
export interface ConformanceTrees {
  readonly rootId: ProcessId;
  readonly incarnationId: TreeIncarnationId;
  /** The Effect the `effect…` cuts prepare (Step 1, batch index 0). */
  readonly effectId: EffectId;
  /** A running root after `committedSteps` Steps. */
  running(committedSteps: number): TreeSnapshot;
  /** A running root at Step 0 with one pending input: same start identity, other content. */
  runningWithPendingInput(): TreeSnapshot;
  waiting(): TreeSnapshot;
  pausedWhileWaiting(): TreeSnapshot;
  completed(): TreeSnapshot;
  /** The root with its Step-1 Effect in `phase` (settled with `status`). */
  effect(phase: 'pending' | 'settled', status?: SettlementStatus): TreeSnapshot;
  /** Like `effect`, with other content elsewhere in the tree (a competing history). */
  competingEffect(phase: 'pending' | 'settled', status?: SettlementStatus): TreeSnapshot;
}

export function conformanceTrees(rootId: ProcessId, incarnationId: TreeIncarnationId): ConformanceTrees {
  const base = { rootId, incarnationId };
  return {
    rootId,
    incarnationId,
    effectId: fixtureEffectId(rootId, 0n),
    running: (committedSteps) => runningRootTree({ ...base, committedSteps: BigInt(committedSteps) }),
    runningWithPendingInput: () => runningRootTree({ ...base, pendingSignals: 1 }),
    waiting: () => parkedRootTree({ ...base, parked: 'waiting' }),
    pausedWhileWaiting: () => parkedRootTree({ ...base, parked: 'paused' }),
    completed: () => terminalRootTree({ ...base, committedSteps: 2n }),
    effect: (phase, status) => rootWithPreparedEffect(phase, status, base),
    competingEffect: (phase, status) => rootWithPreparedEffect(phase, status, { ...base, pendingSignals: 1 }),
  };
}
