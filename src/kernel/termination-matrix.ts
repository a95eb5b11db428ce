import type { Failure } from './failure.js';
import type { EffectId } from './identity.js';
import type { PendingControl } from './process-snapshot.js';
import { Termination } from './termination.js';

/** What a Step (or an asynchronous failure) contributed to a terminal decision. */
export type StepOutcome = { readonly kind: 'none' } | { readonly kind: 'completed' } | { readonly kind: 'failed'; readonly failure: Failure };

/**
 * The terminal priority matrix (kernel-contract §4.11): kill, then deadline, then cancellation,
 * then a recorded failure, then the Step outcome. A recorded pending failure overrides the Step's
 * own outcome. Returns undefined when nothing terminal was recorded, so the caller never invents a
 * termination.
 */
export function resolveTermination(
  control: PendingControl,
  outcome: StepOutcome,
  unresolvedEffectIds: readonly EffectId[] = [],
): Termination | undefined {
  if (control.killReason !== undefined) return Termination.interrupted('engine_kill', control.killReason, unresolvedEffectIds);
  if (control.deadline !== undefined) {
    const cause = control.deadline.owner === 'parent' ? 'parent_deadline' : 'host_deadline';
    return Termination.interrupted(cause, control.deadline.reason, unresolvedEffectIds);
  }
  if (control.cancellation !== undefined) {
    const cause = control.cancellation.owner === 'parent' ? 'parent_cancellation' : 'host_cancellation';
    return Termination.interrupted(cause, control.cancellation.reason, unresolvedEffectIds);
  }
  if (control.failure !== undefined) return Termination.failed(control.failure, unresolvedEffectIds);
  if (outcome.kind === 'failed') return Termination.failed(outcome.failure, unresolvedEffectIds);
  if (outcome.kind === 'completed') return Termination.completed();
  return undefined;
}

/** Whether a terminal intent (kill, deadline, cancellation or a recorded failure) is pending. */
export function hasTerminalIntent(control: PendingControl): boolean {
  return (
    control.killReason !== undefined ||
    control.deadline !== undefined ||
    control.cancellation !== undefined ||
    control.failure !== undefined
  );
}
