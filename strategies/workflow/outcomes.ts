import { ClassifiedError } from '../../src/kernel/classified-error.js';
import { Failure, isFailureKind, normalizeDiagnostic } from '../../src/kernel/failure.js';
import { isQualifiedName, type WaitId } from '../../src/kernel/identity.js';
import type { Signal } from '../../src/kernel/signal.js';
import { objectOf } from '../internal/machine.js';
import type { Json, StageKind } from './stages.js';

/**
 * Reading the Engine's answers to the workflow's Framework Effects (start results and child-wait
 * answers) and turning a child's terminal facts into the next value or a Failure.
 */

/** The Step got a window the Engine never delivers for the state it is in: a rejected Step, nothing is adopted. */
export const unexpectedSignals = new ClassifiedError('contract', 'workflow.signal.unexpected', 'the delivered signals do not answer the workflow effects');

export function unexpected(context: string): Error {
  return unexpectedSignals.wrap(context);
}

export type StartResult = { readonly processId: string } | { readonly failure: Failure };

/** A `start_child` settlement: `{"operation":"start_child","process_id"}` or `{"failure","operation":"start_child"}`. */
export function startResultOf(signal: Signal | undefined): StartResult {
  const body = signal === undefined ? undefined : objectOf(signal.payload);
  if (body?.operation !== 'start_child') throw unexpected('a child start result was expected');
  if (typeof body.process_id === 'string') return { processId: body.process_id };
  const failure = failureFrom(body.failure);
  if (failure === undefined) throw unexpected('a child start result carries neither a process id nor a failure');
  return { failure };
}

/** The WaitId of a child-wait opening (`{"operation":"child_wait_opened"}`, addressed to the wait). */
export function openedWaitOf(signal: Signal | undefined): WaitId {
  const waitId = signal?.waitId;
  if (signal === undefined || waitId === undefined || objectOf(signal.payload)?.operation !== 'child_wait_opened') {
    throw unexpected('a child wait opening was expected');
  }
  return waitId;
}

/** One child's facts from a `subtree_drained` answer. */
export interface ChildFacts {
  readonly processId: string;
  readonly status: string;
  readonly output: Json | undefined;
  readonly hasOutput: boolean;
  readonly failure: Failure | undefined;
  readonly unresolved: number;
}

/** The answer to `waitId` in the window, by child id, or undefined when it has not arrived. */
export function answerOf(signals: readonly Signal[], waitId: WaitId): { readonly position: number; readonly facts: Map<string, ChildFacts> } | undefined {
  const position = signals.findIndex((signal) => waitId.equals(signal.waitId));
  if (position < 0) return undefined;
  const body = objectOf((signals[position] as Signal).payload);
  if (body?.operation !== 'child_wait_satisfied' || !Array.isArray(body.outcomes)) throw unexpected('a child wait answer was expected');
  const facts = new Map<string, ChildFacts>();
  for (const outcome of body.outcomes as unknown[]) {
    const result = (outcome as { result?: Record<string, unknown> } | null)?.result;
    const termination = result?.termination as Record<string, unknown> | undefined;
    if (typeof result?.process_id !== 'string' || typeof termination?.status !== 'string') throw unexpected('a child wait answer carries a malformed outcome');
    const unresolved = (outcome as { subtree_unresolved_effects?: unknown }).subtree_unresolved_effects;
    facts.set(result.process_id, {
      processId: result.process_id,
      status: termination.status,
      output: result.output,
      hasOutput: Object.hasOwn(result, 'output'),
      failure: failureFrom(termination.failure),
      unresolved: Array.isArray(unresolved) ? unresolved.length : 0,
    });
  }
  return { position, facts };
}

export type Outcome = { readonly ok: true; readonly output: Json } | { readonly ok: false; readonly failure: Failure };

/**
 * What a drained child means for the stage: its Failure unchanged (kind, code, diagnostic); a
 * subtree with unresolved Effects is external `workflow.<kind>.unresolved_effects` (its outcome is
 * not known, so its output is not trusted); a child that ended otherwise (canceled, killed, timed
 * out) is external `workflow.<kind>.not_completed`; a completion without output is contract
 * `workflow.<kind>.output_missing`.
 */
export function outcomeOf(kind: StageKind, facts: ChildFacts): Outcome {
  if (facts.failure !== undefined) return { ok: false, failure: facts.failure };
  if (facts.unresolved > 0) {
    return {
      ok: false,
      failure: Failure.create('external', `workflow.${kind}.unresolved_effects`, `child ${facts.processId} left ${facts.unresolved} unresolved effects in its subtree`),
    };
  }
  if (facts.status !== 'completed') {
    return { ok: false, failure: Failure.create('external', `workflow.${kind}.not_completed`, `child ${facts.processId} ended ${facts.status} without completing`) };
  }
  if (!facts.hasOutput) return { ok: false, failure: Failure.create('contract', `workflow.${kind}.output_missing`, `child ${facts.processId} completed without an output`) };
  return { ok: true, output: facts.output };
}

/**
 * A fan-out member's Failure: the same kind, the code prefixed (`branch_` for fork, `item_` for
 * map) and the diagnostic led by the member's name, so the failing branch or item is visible.
 */
export function prefixed(failure: Failure, prefix: 'branch_' | 'item_', member: string): Failure {
  const code = `${prefix}${failure.code}`.slice(0, 128);
  return Failure.create(failure.kind, code, normalizeDiagnostic(`${prefix === 'branch_' ? 'branch' : 'item'} ${member}: ${failure.message}`));
}

function failureFrom(value: unknown): Failure | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { kind, code, message } = value as Record<string, unknown>;
  if (!isFailureKind(kind) || !isQualifiedName(code) || typeof message !== 'string') return undefined;
  try {
    return Failure.create(kind, code, message);
  } catch {
    return undefined;
  }
}
