import type { Definition } from '../../src/kernel/definition.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { Effect } from '../../src/kernel/effect.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { maxDescriptionBytes } from '../../src/kernel/failure.js';
import { WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema, SchemaValidationError } from '../../src/kernel/schema.js';
import type { Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { invalidState, machineDefinition, stateRecord, statePhase } from '../internal/machine.js';
import { openedWait, protocolError, stateWaitId } from './protocol.js';

/**
 * InputGate: a bounded human (or system) input step. The process input is the *request*; the gate
 * opens one external wait under {@link inputWaitKey}, publishing the request as the wait's prompt
 * (its canonical JSON) so an inbox shows what is asked, and completes with the one answer addressed
 * to that wait — the original Signal, identity preserved: `{id, wait_id, payload}`.
 *
 * Admission does the refusing, so nothing malformed is ever recorded: the descriptor declares no
 * signal schema (every unaddressed Signal is refused before the mailbox) and declares the wait with
 * the answer schema (an answer that does not satisfy it is refused at admission). A replacement
 * gate is a new process with a new WaitId; an answer is never redirected.
 *
 * Phases (stored): `ready` → `awaiting_open` → `waiting` → `completed`.
 */
export const inputWaitKey = 'coordination.input';

export interface InputGateConfig {
  /** The Definition name (a qualified name). */
  readonly name: string;
  readonly description: string;
  /** The request (the process input). Its canonical JSON must fit a wait prompt (4096 bytes). */
  readonly requestSchema: Schema;
  /** What an answer addressed to the gate's wait must satisfy. */
  readonly answerSchema: Schema;
}

type Phase = 'ready' | 'awaiting_open' | 'waiting' | 'completed';
const phases: readonly Phase[] = ['ready', 'awaiting_open', 'waiting', 'completed'];

interface GateState {
  readonly phase: Phase;
  /** The request, as the process input gave it. */
  readonly request: unknown;
  /** From `waiting` on: the wait the answer must address. */
  readonly wait_id?: string;
}

/** The JSON Schema of the gate's output: the answer Signal's wire form. */
function outputSchema(answer: Schema): Schema {
  return Schema.of({
    type: 'object',
    properties: { id: { type: 'string' }, wait_id: { type: 'string' }, payload: JSON.parse(answer.json()) as unknown },
    required: ['id', 'wait_id', 'payload'],
    additionalProperties: false,
  });
}

/** The request as a wait prompt; a request too large for one is refused at start. */
function promptOf(name: string, request: Payload): string {
  const text = request.json();
  if (new TextEncoder().encode(text).length > maxDescriptionBytes) {
    throw new SchemaValidationError(`${name} input`, [
      { pointer: '', keyword: 'maxBytes', message: `the request is published as the wait prompt: at most ${maxDescriptionBytes} bytes of canonical JSON` },
    ]);
  }
  return text;
}

export function inputGateDefinition(config: InputGateConfig): Definition {
  if (!(config.requestSchema instanceof Schema) || !(config.answerSchema instanceof Schema)) {
    throw new KernelError(ErrorCode.invalidDescriptor, 'invalid input gate: requestSchema and answerSchema must be Schemas');
  }
  const kind = config.name;
  const answerSchema = config.answerSchema;
  const descriptor = Descriptor.create({
    name: config.name,
    description: config.description,
    inputSchema: config.requestSchema,
    outputSchema: outputSchema(answerSchema),
    // No signalSchema: unaddressed Signals are refused at admission.
    waits: [{ key: WaitKey.parse(inputWaitKey), description: `The answer to the request of ${config.name}.`, answerSchema }],
  });
  const machine = machineDefinition<GateState>({
    descriptor,
    stateKind: kind,
    initial(input) {
      promptOf(config.name, input);
      return { phase: 'ready', request: input.decode<unknown>() };
    },
    check(value) {
      const record = stateRecord(kind, value, ['phase', 'request'], ['wait_id']);
      const phase = statePhase(kind, record, phases);
      if (!config.requestSchema.accepts(Payload.encode(record.request))) throw invalidState(kind, 'request does not satisfy the request schema');
      const waiting = phase === 'waiting' || phase === 'completed';
      if (waiting !== Object.hasOwn(record, 'wait_id')) throw invalidState(kind, 'wait_id is present exactly once the wait opened');
      if (!waiting) return { phase, request: record.request };
      return { phase, request: record.request, wait_id: stateWaitId(kind, record, 'wait_id') };
    },
    step(state, signals) {
      switch (state.phase) {
        case 'ready': {
          if (signals.length > 0) protocolError(`the gate received ${signals[0]?.id.toString()} before it asked anything`);
          const prompt = promptOf(config.name, Payload.encode(state.request));
          return {
            state: { ...state, phase: 'awaiting_open' },
            transition: Transition.continue(0, [Effect.wait(WaitKey.parse(inputWaitKey), { prompt })]),
          };
        }
        case 'awaiting_open': {
          const waitId = openedWait(signals[0]);
          if (waitId === undefined) protocolError('the gate expected its wait opening first');
          const waiting: GateState = { ...state, phase: 'waiting', wait_id: waitId.toString() };
          return answer(waiting, signals, 1);
        }
        case 'waiting':
          return answer(state, signals, 0);
        case 'completed':
          return protocolError('the gate has completed');
      }
    },
  });

  /** Reads the window after `from` in `waiting`: nothing yet, or exactly the one addressed answer. */
  function answer(state: GateState, signals: readonly Signal[], from: number): { state: GateState; transition: Transition } {
    const waitId = WaitId.parse(state.wait_id);
    const rest = signals.slice(from);
    if (rest.length === 0) return { state, transition: Transition.wait(from, waitId) };
    const [first, ...others] = rest as [Signal, ...Signal[]];
    if (first.engineOwned || first.status !== undefined || !waitId.equals(first.waitId)) {
      protocolError(`the gate accepts only the answer addressed to ${waitId.toString()}, got ${first.id.toString()}`);
    }
    if (others.length > 0) protocolError(`the gate accepts exactly one answer, got ${others[0]?.id.toString()} after it`);
    if (!answerSchema.accepts(first.payload)) protocolError(`the answer ${first.id.toString()} does not satisfy the answer schema`);
    return { state: { ...state, phase: 'completed' }, transition: Transition.complete(signals.length, Payload.parse(first.json())) };
  }

  return machine;
}
