/** Signals: an ordered, atomic batch delivered to one process. */
import { Type, type TSchema } from '@sinclair/typebox';
import { anyJson, closedObject, identity, ref } from '../shared.js';

/** The largest batch one request may deliver. */
export const maxSignalsPerBatch = 1_000;

export const SignalInput = closedObject(
  {
    id: identity('The signal id: delivering the same id with the same content again is a no-op.', 'approval-1'),
    waitId: Type.Optional(identity("Addresses the answer to this wait (the process's current wait).", 'wait:0123abcd')),
    payload: anyJson('The signal payload.'),
  },
  { $id: 'SignalInput', description: 'One signal of a batch.' },
);

export const SignalBatch = closedObject(
  {
    signals: Type.Array(ref(SignalInput), {
      minItems: 1,
      maxItems: maxSignalsPerBatch,
      description: `Admitted all together, in order, or not at all; at most ${maxSignalsPerBatch} per batch.`,
    }),
  },
  {
    $id: 'SignalBatch',
    description: 'An ordered, atomic batch of signals.',
    example: { signals: [{ id: 'note-1', payload: { note: 'looks good' } }] },
  },
);

export const SignalOutcome = closedObject(
  { accepted: Type.Boolean({ description: 'False when every id in the batch had already been accepted (with identical content).' }) },
  { $id: 'SignalOutcome', description: 'Whether the batch was newly accepted.' },
);

export const signalComponents: readonly TSchema[] = [SignalInput, SignalBatch, SignalOutcome];
