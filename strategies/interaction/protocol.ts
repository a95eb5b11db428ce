import { ClassifiedError } from '../../src/kernel/classified-error.js';
import { SignalId, type WaitId } from '../../src/kernel/identity.js';
import type { Signal } from '../../src/kernel/signal.js';
import { isWaitOpening, objectOf } from '../internal/machine.js';

/**
 * Reading the Engine's answers to the interaction's framework Effects: child start results, the
 * batch wait's opening and its `subtree_drained` answers. A window the interaction's own phase
 * cannot have produced is a Step error wrapping {@link protocolInvalid} (contract
 * `interaction.protocol.invalid`): nothing of that Step is adopted.
 */
export const protocolInvalid = new ClassifiedError('contract', 'interaction.protocol.invalid', 'the window breaks the interaction protocol');

export function protocol(problem: string): never {
  throw protocolInvalid.wrap(problem);
}

/** A `start_child` settlement: the started child, or the refusal's code (all the model is shown of it). */
export function startResult(signal: Signal | undefined): { readonly processId: string } | { readonly code: string } {
  const body = signal?.engineOwned === true && signal.waitId === undefined && signal.status === undefined ? objectOf(signal.payload) : undefined;
  if (body?.operation !== 'start_child') protocol('a child start result was expected');
  if (typeof body.process_id === 'string') return { processId: body.process_id };
  const code = recordOf(body.failure)?.code;
  if (typeof code !== 'string') protocol('a child start result carries neither a process id nor a failure code');
  return { code };
}

export function waitOpening(signal: Signal | undefined): WaitId {
  if (signal === undefined || !isWaitOpening(signal) || objectOf(signal.payload)?.operation !== 'child_wait_opened') protocol('the opening of the batch wait was expected');
  return signal.waitId as WaitId;
}

export function isWaitAnswer(signal: Signal, waitId: WaitId): boolean {
  return signal.id.equals(SignalId.childWaitSatisfied(waitId)) && waitId.equals(signal.waitId);
}

/** One drained child as a child-wait answer reports it. */
export interface AnsweredChild {
  readonly processId: string;
  readonly status: string;
  readonly output?: unknown;
  readonly failure?: { readonly code: string; readonly message: string };
  readonly unresolved: number;
}

export function answeredChildren(answer: Signal): AnsweredChild[] {
  const body = objectOf(answer.payload);
  if (body?.operation !== 'child_wait_satisfied' || !Array.isArray(body.outcomes)) protocol('a child wait answer was expected');
  return body.outcomes.map((entry: unknown) => {
    const outcome = recordOf(entry);
    const result = recordOf(outcome?.result);
    const termination = recordOf(result?.termination);
    if (result === undefined || typeof result.process_id !== 'string' || typeof termination?.status !== 'string') protocol('a child wait answer carries a malformed outcome');
    const failure = recordOf(termination.failure);
    const unresolved = outcome?.subtree_unresolved_effects;
    return {
      processId: result.process_id,
      status: termination.status,
      ...(Object.hasOwn(result, 'output') ? { output: result.output } : {}),
      ...(typeof failure?.code === 'string' && typeof failure.message === 'string' ? { failure: { code: failure.code, message: failure.message } } : {}),
      unresolved: Array.isArray(unresolved) ? unresolved.length : 0,
    };
  });
}

function recordOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
