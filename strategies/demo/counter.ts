import { Descriptor } from '../../src/kernel/descriptor.js';
import { Effect } from '../../src/kernel/effect.js';
import { WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import { Transition } from '../../src/kernel/transition.js';
import {
  contractFailure,
  invalidState,
  isWaitOpening,
  machineDefinition,
  stateInteger,
  stateRecord,
  statePhase,
  stateString,
} from '../internal/machine.js';

/**
 * demo.counter: counts to `target` in rounds. Each round opens a wait (key `round-<n>`), takes the
 * answer `{add: integer}` addressed to it and checkpoints; the process completes with
 * `{total, rounds}` once the total reaches the target, else it opens the next round's wait. It
 * accepts no unaddressed input. Round keys are decided at run time, so each wait Effect carries its
 * answer schema and a prompt: the Engine refuses an answer that is not `{add: integer}` at
 * admission; the Step keeps its own check (`demo.counter.invalid_answer`) for answers admitted
 * without that contract.
 */
export const counterName = 'demo.counter';
export const maxCounterValue = 1_000_000_000;

export const counterDescriptor: Descriptor = Descriptor.create({
  name: counterName,
  description: 'Counts to target in rounds: each round waits for {add: integer} addressed to its wait and checkpoints.',
  inputSchema: Schema.of({
    type: 'object',
    properties: { target: { type: 'integer', minimum: 1, maximum: maxCounterValue } },
    required: ['target'],
    additionalProperties: false,
  }),
  outputSchema: Schema.of({
    type: 'object',
    properties: { total: { type: 'integer' }, rounds: { type: 'integer', minimum: 0 } },
    required: ['total', 'rounds'],
    additionalProperties: false,
  }),
});

/** The answer addressed to a round's wait. */
export const counterAnswerSchema: Schema = Schema.of({
  type: 'object',
  properties: { add: { type: 'integer', minimum: -maxCounterValue, maximum: maxCounterValue } },
  required: ['add'],
  additionalProperties: false,
});

type Phase = 'open' | 'opening' | 'waiting';
const phases: readonly Phase[] = ['open', 'opening', 'waiting'];

interface CounterState {
  readonly phase: Phase;
  readonly target: number;
  readonly total: number;
  readonly rounds: number;
  /** Present while waiting. */
  readonly wait_id?: string;
}

const kind = 'demo.counter';

export const counterDefinition = machineDefinition<CounterState>({
  descriptor: counterDescriptor,
  stateKind: kind,
  initial: (input) => ({ phase: 'open', target: input.decode<{ target: number }>().target, total: 0, rounds: 0 }),
  check(value) {
    const record = stateRecord(kind, value, ['phase', 'target', 'total', 'rounds'], ['wait_id']);
    const phase = statePhase(kind, record, phases);
    const state = {
      phase,
      target: stateInteger(kind, record, 'target', 1),
      total: stateInteger(kind, record, 'total'),
      rounds: stateInteger(kind, record, 'rounds', 0),
    };
    if ((phase === 'waiting') !== Object.hasOwn(record, 'wait_id')) throw invalidState(kind, 'wait_id is present exactly while waiting');
    if (phase !== 'waiting') return state;
    const waitId = stateString(kind, record, 'wait_id');
    try {
      WaitId.parse(waitId);
    } catch {
      throw invalidState(kind, 'wait_id is not a wait id');
    }
    return { ...state, wait_id: waitId };
  },
  step(state, signals) {
    const { target, total, rounds } = state;
    switch (state.phase) {
      case 'open':
        if (total >= target) {
          return { state, transition: Transition.complete(0, Payload.encode({ total, rounds })) };
        }
        return {
          state: { phase: 'opening', target, total, rounds },
          transition: Transition.continue(0, [
            Effect.wait(WaitKey.parse(`round-${rounds + 1}`), {
              answerSchema: counterAnswerSchema,
              prompt: `Round ${rounds + 1}: the total is ${total} of ${target}; answer {add: integer}.`,
            }),
          ]),
        };
      case 'opening': {
        const opening = signals[0];
        if (opening === undefined || !isWaitOpening(opening)) {
          return { state, transition: Transition.fail(0, contractFailure('demo.counter.missing_opening', 'the round wait did not open')) };
        }
        const waitId = opening.waitId as WaitId;
        return { state: { phase: 'waiting', target, total, rounds, wait_id: waitId.toString() }, transition: Transition.wait(1, waitId) };
      }
      case 'waiting': {
        const waitId = WaitId.parse(state.wait_id);
        const answer = signals[0];
        if (answer === undefined) return { state, transition: Transition.wait(0, waitId) };
        if (answer.engineOwned || !waitId.equals(answer.waitId) || !counterAnswerSchema.accepts(answer.payload)) {
          return { state, transition: Transition.fail(1, contractFailure('demo.counter.invalid_answer', 'a round answer must be {add: integer}')) };
        }
        const { add } = answer.payload.decode<{ add: number }>();
        // Checkpoint the round; the next Step completes or opens the next round.
        return { state: { phase: 'open', target, total: total + add, rounds: rounds + 1 }, transition: Transition.checkpoint(1) };
      }
    }
  },
});
