import type { Definition } from '../../src/kernel/definition.js';
import type { Descriptor } from '../../src/kernel/descriptor.js';
import { Effect } from '../../src/kernel/effect.js';
import type { Failure } from '../../src/kernel/failure.js';
import { Payload } from '../../src/kernel/payload.js';
import type { Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { contractFailure, invalidState, machineDefinition, stateRecord, statePhase } from '../internal/machine.js';

/**
 * The shape of echo, sleep and unreliable: Step 1 declares one dispatcher Effect built from the
 * input; Step 2 reads its settlement and completes (or fails) with an output derived from the
 * input and the settlement. State: `{phase: ready | dispatched, input}`.
 */
export interface SingleEffectSpec<I> {
  readonly descriptor: Descriptor;
  readonly stateKind: string;
  /** The JSON payload of the one dispatcher Effect. */
  effectPayload(input: I): unknown;
  /** Step 2: the output for a definite settlement, or the Failure that ends the process. */
  finish(input: I, settlement: Signal): { readonly output: unknown } | { readonly failure: Failure };
}

type Phase = 'ready' | 'dispatched';
const phases: readonly Phase[] = ['ready', 'dispatched'];

interface State<I> {
  readonly phase: Phase;
  readonly input: I;
}

export function singleEffectDefinition<I>(spec: SingleEffectSpec<I>): Definition {
  const kind = spec.stateKind;
  const code = (suffix: string): string => `${spec.descriptor.name}.${suffix}`;
  return machineDefinition<State<I>>({
    descriptor: spec.descriptor,
    stateKind: kind,
    initial: (input) => ({ phase: 'ready', input: input.decode<I>() }),
    check(value) {
      const record = stateRecord(kind, value, ['phase', 'input']);
      const phase = statePhase(kind, record, phases);
      if (!spec.descriptor.inputSchema.accepts(Payload.encode(record.input))) throw invalidState(kind, 'input does not satisfy the input schema');
      return { phase, input: record.input as I };
    },
    step(state, signals) {
      if (state.phase === 'ready') {
        // The descriptor accepts no unaddressed input, so the first window is empty.
        return {
          state: { ...state, phase: 'dispatched' },
          transition: Transition.continue(0, [Effect.dispatcher(Payload.encode(spec.effectPayload(state.input)))]),
        };
      }
      const settlement = signals[0];
      if (settlement === undefined || settlement.status === undefined) {
        const failure = contractFailure(code('missing_settlement'), 'the step after the effect received no settlement');
        return { state, transition: Transition.fail(0, failure) };
      }
      const finished = spec.finish(state.input, settlement);
      if ('failure' in finished) return { state, transition: Transition.fail(1, finished.failure) };
      return { state, transition: Transition.complete(1, Payload.encode(finished.output)) };
    },
  });
}
