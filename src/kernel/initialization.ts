import { thrownBy, type CallbackOperation } from './callback-panic-error.js';
import { stepFailure } from './classified-error.js';
import type { Definition } from './definition.js';
import type { ExecutionState } from './execution-state.js';
import { Failure, normalizeDiagnostic } from './failure.js';
import type { Payload } from './payload.js';

/**
 * The initialisation of a root or child Process (kernel-contract §4.2 step 3): `Definition.start`,
 * then a `snapshot` → `restore` round trip, so only a state the Definition can restore is ever
 * committed. A failure carries the Failure its initialisation outcome reports (the seed's
 * ProcessInitializationOutcome.Failure) and the error the caller sees, a CallbackPanicError when
 * the Definition threw something that is not an Error.
 */
export type Initialization =
  | { readonly kind: 'initialized'; readonly state: ExecutionState }
  | { readonly kind: 'failed'; readonly failure: Failure; readonly error: unknown };

type Stage = 'start' | 'snapshot' | 'restore';

const stages: Record<Stage, { operation: CallbackOperation; code: string; text: string }> = {
  start: { operation: 'Definition.start', code: 'engine.process.start.failed', text: 'the execution did not start' },
  snapshot: { operation: 'Execution.snapshot', code: 'engine.process.snapshot.failed', text: 'the initial state could not be captured' },
  restore: { operation: 'Definition.restore', code: 'engine.process.snapshot.unrestorable', text: 'the initial state does not restore' },
};

export async function initialize(definition: Definition, input: Payload): Promise<Initialization> {
  let stage: Stage = 'start';
  try {
    const execution = await definition.start(input);
    stage = 'snapshot';
    const state = execution.snapshot();
    stage = 'restore';
    await definition.restore(state, new AbortController().signal);
    return { kind: 'initialized', state };
  } catch (thrown) {
    const { operation, code, text } = stages[stage];
    return { kind: 'failed', failure: initializationFailure(thrown, code, text), error: thrownBy(operation, thrown) };
  }
}

/** A ClassifiedError keeps its kind and code (kernel-contract §4.15); a thrown non-Error is a panic. */
function initializationFailure(thrown: unknown, code: string, text: string): Failure {
  if (!(thrown instanceof Error)) return Failure.create('panic', code, `${text}: the definition panicked`);
  try {
    return stepFailure(thrown) ?? Failure.create('execution', code, normalizeDiagnostic(thrown.message.trim() === '' ? text : `${text}: ${thrown.message}`));
  } catch {
    // Reading the error panicked (a throwing getter): still an outcome, never a stranded admission.
    return Failure.create('panic', code, `${text}: interpreting the error panicked`);
  }
}
