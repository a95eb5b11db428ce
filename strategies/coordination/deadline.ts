import type { Definition } from '../../src/kernel/definition.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { Effect } from '../../src/kernel/effect.js';
import { Failure } from '../../src/kernel/failure.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import { Transition } from '../../src/kernel/transition.js';
import { invalidState, machineDefinition, stateRecord, statePhase, stateString } from '../internal/machine.js';
import { protocolError } from './protocol.js';

/**
 * Deadline: completes at an absolute instant. The input is the instant (an RFC 3339 date-time
 * string); the first Step declares one dispatcher Effect, the timer request
 * `{"operation":"coordination.deadline","at":<instant>}`, and the second reads its settlement:
 * `succeeded` completes with the same instant, anything else fails with the external
 * `coordination.deadline.interrupted`.
 *
 * Determinism: the Step never reads a clock — the instant is data, and whether it has passed is
 * the dispatcher's business (`src/server/dispatchers/deadline.ts`). The timer is a `same_identity`
 * Effect, durable through its pending boundary: a restore or takeover replays it under the same
 * identity and the replayed timer fires at the same instant (at once when it has passed).
 *
 * Phases (stored): `ready` → `timing`.
 */
export const deadlineOperation = 'coordination.deadline';
export const deadlineInterrupted = 'coordination.deadline.interrupted';

export interface DeadlineConfig {
  readonly name: string;
  readonly description: string;
}

/** The timer request a Deadline sends its dispatcher. */
export interface DeadlineRequest {
  readonly operation: typeof deadlineOperation;
  readonly at: string;
}

/**
 * RFC 3339 `date-time` with an explicit offset (`Z` or `±hh:mm`). Checked twice: as the schema's
 * `format` (ajv-formats validates the calendar) and by this pattern, so the instant's text is
 * exactly what a dispatcher parses.
 */
export const instantPattern = '^\\d{4}-\\d{2}-\\d{2}[Tt]\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?([Zz]|[+-]\\d{2}:\\d{2})$';

export const instantSchema: Schema = Schema.of({ type: 'string', format: 'date-time', pattern: instantPattern });

type Phase = 'ready' | 'timing';
const phases: readonly Phase[] = ['ready', 'timing'];

interface DeadlineState {
  readonly phase: Phase;
  readonly at: string;
}

export function deadlineDefinition(config: DeadlineConfig): Definition {
  const kind = config.name;
  const descriptor = Descriptor.create({ name: config.name, description: config.description, inputSchema: instantSchema, outputSchema: instantSchema });
  return machineDefinition<DeadlineState>({
    descriptor,
    stateKind: kind,
    initial: (input) => ({ phase: 'ready', at: input.decode<string>() }),
    check(value) {
      const record = stateRecord(kind, value, ['phase', 'at']);
      const phase = statePhase(kind, record, phases);
      const at = stateString(kind, record, 'at');
      // Restore keeps the absolute instant: a state whose instant is not one is refused.
      if (!instantSchema.accepts(Payload.encode(at))) throw invalidState(kind, 'at must be an RFC 3339 instant');
      return { phase, at };
    },
    step(state, signals) {
      if (state.phase === 'ready') {
        if (signals.length > 0) protocolError(`the deadline received ${signals[0]?.id.toString()} before its timer`);
        const request: DeadlineRequest = { operation: deadlineOperation, at: state.at };
        return { state: { ...state, phase: 'timing' }, transition: Transition.continue(0, [Effect.dispatcher(Payload.encode(request))]) };
      }
      const settlement = signals[0];
      if (settlement === undefined || settlement.status === undefined) protocolError('the deadline expected its timer settlement');
      if (signals.length > 1) protocolError(`the deadline expected only its timer settlement, got ${signals[1]?.id.toString()} too`);
      if (settlement.status === 'succeeded') return { state, transition: Transition.complete(1, Payload.encode(state.at)) };
      const failure = Failure.create('external', deadlineInterrupted, `the timer for ${state.at} settled ${settlement.status}`);
      return { state, transition: Transition.fail(1, failure) };
    },
  });
}
