import type { Definition } from '../../src/kernel/definition.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { Effect } from '../../src/kernel/effect.js';
import { Failure } from '../../src/kernel/failure.js';
import { Payload } from '../../src/kernel/payload.js';
import { Transition } from '../../src/kernel/transition.js';
import { invalidState, machineDefinition, objectOf, statePhase, stateRecord } from '../internal/machine.js';
import { decisionSchema, turnSchema, type Decision, type Turn } from './schemas.js';

/**
 * A coordinator Definition from a pure decision function: its input is one {@link Turn}, its
 * output one {@link Decision}. Optionally it consults its Dispatcher once first (`consult` builds
 * the Effect payload, e.g. a model request; the settlement's payload and status reach `decide`).
 * Everything `decide` reads is the Turn and that settlement, so a turn is deterministic and
 * order-insensitive coordinators make a collaboration whose output timing cannot change.
 */
export interface CoordinatorSpec {
  readonly name: string;
  readonly description: string;
  /** The Dispatcher Effect payload to consult before deciding, or undefined to decide at once. */
  readonly consult?: (turn: Turn) => unknown;
  /** The Decision, or a Failure that fails the turn (and so the collaboration, unchanged). */
  decide(turn: Turn, consulted?: { readonly status: string; readonly payload: unknown }): Decision | Failure;
}

type Phase = 'ready' | 'consulting';

interface CoordinatorState {
  readonly phase: Phase;
  readonly turn: Turn;
}

export function coordinatorDefinition(spec: CoordinatorSpec): Definition {
  const kind = `${spec.name}.state`;
  const descriptor = Descriptor.create({ name: spec.name, description: spec.description, inputSchema: turnSchema, outputSchema: decisionSchema });
  const finish = (decision: Decision | Failure, consumed: number): Transition =>
    decision instanceof Failure ? Transition.fail(consumed, decision) : Transition.complete(consumed, Payload.encode(decision));
  return machineDefinition<CoordinatorState>({
    descriptor,
    stateKind: kind,
    initial: (input) => ({ phase: 'ready', turn: input.decode<Turn>() }),
    check(value) {
      const record = stateRecord(kind, value, ['phase', 'turn']);
      const phase = statePhase<Phase>(kind, record, ['ready', 'consulting']);
      if (!turnSchema.accepts(Payload.encode(record.turn))) throw invalidState(kind, 'turn is not a Turn');
      return { phase, turn: record.turn as Turn };
    },
    step(state, signals) {
      if (state.phase === 'ready') {
        const request = spec.consult?.(state.turn);
        if (request === undefined) return { state, transition: finish(spec.decide(state.turn), 0) };
        return { state: { ...state, phase: 'consulting' }, transition: Transition.continue(0, [Effect.dispatcher(Payload.encode(request))]) };
      }
      const settlement = signals[0];
      if (settlement?.status === undefined) {
        return { state, transition: Transition.fail(0, Failure.create('contract', `${spec.name}.missing_settlement`, 'the consultation settled without a settlement')) };
      }
      return { state, transition: finish(spec.decide(state.turn, { status: settlement.status, payload: objectOf(settlement.payload) ?? settlement.payload.decode() }), 1) };
    },
  });
}
