import { Descriptor } from '../../src/kernel/descriptor.js';
import { Effect } from '../../src/kernel/effect.js';
import { WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import type { Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import {
  contractFailure,
  invalidState,
  isUnaddressedInput,
  isWaitOpening,
  machineDefinition,
  objectOf,
  stateRecord,
  statePhase,
  stateString,
} from '../internal/machine.js';

/**
 * demo.approval: opens one external wait (Engine-minted WaitID) and completes with the answer
 * `{approved, comment?}` addressed to it. Unaddressed notes `{note}` (its signal schema) may arrive
 * at any time: they queue without releasing the wait and are read with the answer. Output
 * `{subject, approved, comment?, notes}` with the notes in arrival order.
 *
 * Steps: `ready` declares the wait Effect; `opening` consumes the opening (and notes before it)
 * and waits; `waiting` consumes notes and, once the answer is in the window, the whole window, and
 * completes. The descriptor declares the wait's answer schema, so the Engine refuses an answer
 * that is not `{approved: boolean, comment?: string}` at admission; the Step keeps its own check
 * (`demo.approval.invalid_answer`) for answers admitted without that contract.
 */
export const approvalName = 'demo.approval';
export const approvalWaitKey = 'approval';

const noteSchema = {
  type: 'object',
  properties: { note: { type: 'string', maxLength: 4096 } },
  required: ['note'],
  additionalProperties: false,
} as const;

/** The answer addressed to the approval wait. */
export const approvalAnswerSchema: Schema = Schema.of({
  type: 'object',
  properties: { approved: { type: 'boolean' }, comment: { type: 'string', maxLength: 4096 } },
  required: ['approved'],
  additionalProperties: false,
});

export const approvalDescriptor: Descriptor = Descriptor.create({
  name: approvalName,
  description: 'Waits for an approval answer {approved, comment?} addressed to its wait; queues unaddressed notes {note} and reports them.',
  inputSchema: Schema.of({
    type: 'object',
    properties: { subject: { type: 'string', maxLength: 4096 } },
    required: ['subject'],
    additionalProperties: false,
  }),
  outputSchema: Schema.of({
    type: 'object',
    properties: {
      subject: { type: 'string' },
      approved: { type: 'boolean' },
      comment: { type: 'string' },
      notes: { type: 'array', items: { type: 'string' } },
    },
    required: ['subject', 'approved', 'notes'],
    additionalProperties: false,
  }),
  signalSchema: Schema.of(noteSchema),
  waits: [
    {
      key: WaitKey.parse(approvalWaitKey),
      description: 'The approval decision on the subject: {approved: boolean, comment?: string}.',
      answerSchema: approvalAnswerSchema,
    },
  ],
});

type Phase = 'ready' | 'opening' | 'waiting';
const phases: readonly Phase[] = ['ready', 'opening', 'waiting'];

interface ApprovalState {
  readonly phase: Phase;
  readonly subject: string;
  readonly notes: readonly string[];
  /** Present from `waiting` on. */
  readonly wait_id?: string;
}

const kind = 'demo.approval';

function noteOf(signal: Signal): string | undefined {
  if (!isUnaddressedInput(signal)) return undefined;
  const note = objectOf(signal.payload)?.note;
  return typeof note === 'string' ? note : undefined;
}

const unexpected = (signal: Signal) =>
  contractFailure('demo.approval.unexpected_signal', `signal ${signal.id.toString()} is neither a note nor the approval answer`);

export const approvalDefinition = machineDefinition<ApprovalState>({
  descriptor: approvalDescriptor,
  stateKind: kind,
  initial: (input) => ({ phase: 'ready', subject: input.decode<{ subject: string }>().subject, notes: [] }),
  check(value) {
    const record = stateRecord(kind, value, ['phase', 'subject', 'notes'], ['wait_id']);
    const phase = statePhase(kind, record, phases);
    const subject = stateString(kind, record, 'subject');
    const notes = record.notes;
    if (!Array.isArray(notes) || notes.some((note) => typeof note !== 'string')) throw invalidState(kind, 'notes must be strings');
    if ((phase === 'waiting') !== Object.hasOwn(record, 'wait_id')) throw invalidState(kind, 'wait_id is present exactly while waiting');
    if (phase !== 'waiting') return { phase, subject, notes: notes as string[] };
    const waitId = stateString(kind, record, 'wait_id');
    try {
      WaitId.parse(waitId);
    } catch {
      throw invalidState(kind, 'wait_id is not a wait id');
    }
    return { phase, subject, notes: notes as string[], wait_id: waitId };
  },
  step(state, signals) {
    switch (state.phase) {
      case 'ready': {
        const notes = [...state.notes];
        for (const signal of signals) {
          const note = noteOf(signal);
          if (note === undefined) return { state, transition: Transition.fail(0, unexpected(signal)) };
          notes.push(note);
        }
        return {
          state: { phase: 'opening', subject: state.subject, notes },
          transition: Transition.continue(signals.length, [Effect.wait(WaitKey.parse(approvalWaitKey))]),
        };
      }
      case 'opening': {
        const notes = [...state.notes];
        for (const [index, signal] of signals.entries()) {
          if (isWaitOpening(signal)) {
            const waitId = signal.waitId as WaitId;
            return {
              state: { phase: 'waiting', subject: state.subject, notes, wait_id: waitId.toString() },
              transition: Transition.wait(index + 1, waitId),
            };
          }
          const note = noteOf(signal);
          if (note === undefined) return { state, transition: Transition.fail(0, unexpected(signal)) };
          notes.push(note);
        }
        return {
          state,
          transition: Transition.fail(0, contractFailure('demo.approval.missing_opening', 'the wait opening did not arrive after the wait effect')),
        };
      }
      case 'waiting': {
        const waitId = WaitId.parse(state.wait_id);
        const notes = [...state.notes];
        let answer: Signal | undefined;
        for (const signal of signals) {
          if (answer === undefined && !signal.engineOwned && waitId.equals(signal.waitId)) {
            answer = signal;
            continue;
          }
          const note = noteOf(signal);
          if (note === undefined) return { state, transition: Transition.fail(0, unexpected(signal)) };
          notes.push(note);
        }
        if (answer === undefined) {
          // Only notes so far: keep them and keep waiting.
          return { state: { ...state, notes }, transition: Transition.wait(signals.length, waitId) };
        }
        if (!approvalAnswerSchema.accepts(answer.payload)) {
          const failure = contractFailure('demo.approval.invalid_answer', 'the answer must be {approved: boolean, comment?: string}');
          return { state, transition: Transition.fail(signals.length, failure) };
        }
        const { approved, comment } = answer.payload.decode<{ approved: boolean; comment?: string }>();
        const output = comment === undefined ? { subject: state.subject, approved, notes } : { subject: state.subject, approved, comment, notes };
        return { state: { ...state, notes }, transition: Transition.complete(signals.length, Payload.encode(output)) };
      }
    }
  },
});
