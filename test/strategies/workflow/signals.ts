/**
 * Engine-shaped signals for stepping a workflow Execution by hand: start results, child-wait
 * openings and `subtree_drained` answers, built with the kernel's own payload renderers.
 */
import { ChildWaitCondition, ChildWaitSpec } from '../../../src/kernel/effect.js';
import type { Failure } from '../../../src/kernel/failure.js';
import { EffectId, ProcessId, SignalId, WaitId, WaitKey } from '../../../src/kernel/identity.js';
import { childWaitOpenedPayload, childWaitSatisfiedPayload } from '../../../src/kernel/mailbox.js';
import { Payload } from '../../../src/kernel/payload.js';
import { frameworkSettlementPayload } from '../../../src/kernel/prepared-step.js';
import { Result } from '../../../src/kernel/result.js';
import { Signal } from '../../../src/kernel/signal.js';
import { Termination } from '../../../src/kernel/termination.js';
import { Usage } from '../../../src/kernel/usage.js';

export const root = ProcessId.parse('process:workflow-root');
export const effect = (step: bigint, index = 0): EffectId => EffectId.derive(root, step, index);
export const childOf = (step: bigint, index = 0): ProcessId => ProcessId.child(effect(step, index));
export const started = (step: bigint, index = 0): Signal =>
  Signal.create({ id: SignalId.settlement(effect(step, index)), payload: frameworkSettlementPayload(effect(step, index), { operation: 'start_child' } as never) });
export const startFailed = (step: bigint, index: number, failure: Failure): Signal =>
  Signal.create({ id: SignalId.settlement(effect(step, index)), payload: frameworkSettlementPayload(effect(step, index), { operation: 'start_child' } as never, failure) });
export const waitOf = (step: bigint): WaitId => WaitId.derive(effect(step));
export const opened = (step: bigint): Signal => Signal.create({ id: SignalId.waitOpened(waitOf(step)), waitId: waitOf(step), payload: childWaitOpenedPayload });

export interface Drained {
  readonly child: ProcessId;
  readonly output?: unknown;
  readonly termination?: Termination;
  readonly unresolved?: number;
}

/** The Engine's answer to the drained wait opened at `step`, one outcome per child in order. */
export function answer(step: bigint, outcomes: readonly Drained[]): Signal {
  const spec = ChildWaitSpec.create({ key: WaitKey.parse('w'), children: outcomes.map((entry) => entry.child), boundary: 'subtree_drained', condition: ChildWaitCondition.all() });
  const payload = childWaitSatisfiedPayload(
    spec,
    outcomes.map((entry) => ({
      result: Result.create({
        processId: entry.child,
        startedAt: '2026-12-01T00:00:00Z',
        finishedAt: '2026-12-01T00:00:01Z',
        output: entry.output === undefined ? undefined : Payload.encode(entry.output),
        termination: entry.termination ?? Termination.completed(),
        usage: Usage.of(),
      }),
      subtreeUnresolved: Array.from({ length: entry.unresolved ?? 0 }, (_, index) => ({ processId: entry.child, effectId: EffectId.derive(entry.child, 1n, index) })),
    })),
  );
  return Signal.create({ id: SignalId.childWaitSatisfied(waitOf(step)), waitId: waitOf(step), payload });
}

