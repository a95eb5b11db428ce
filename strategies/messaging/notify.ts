import { ClassifiedError } from '../../src/kernel/classified-error.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { Failure } from '../../src/kernel/failure.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import { Transition } from '../../src/kernel/transition.js';
import { invalidState, machineDefinition, objectOf, stateRecord, statePhase } from '../internal/machine.js';
import { message, messageEffect, messageWire } from './message.js';

/**
 * example.messaging.notify: sends one Message to the process its input names, then completes with the
 * delivery receipt `{recipient, signalId}`. Input `{recipient, waitId?, payload}`: `waitId` addresses the
 * recipient's current wait (an answer), without it the payload is unaddressed input for the recipient's
 * signal schema.
 *
 * Step 1 declares the message Effect (it requires `scope.messaging.send`: a start must grant it). Step 2
 * reads the settlement: succeeded → complete; failed (refused: no capability, no such recipient,
 * refused by the recipient) → fail with `example.messaging.notify.refused` and the dispatcher's
 * diagnostic. An Unknown outcome blocks the process until a replay (same SignalId, delivered at most
 * once) or a Host resolution settles it. State: `{phase: ready | sent, message}` (the message wire).
 */
export const notifyName = 'example.messaging.notify';

const inputSchema = {
  type: 'object',
  properties: {
    recipient: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,256}$' },
    waitId: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,256}$' },
    payload: {},
  },
  required: ['recipient', 'payload'],
  additionalProperties: false,
} as const;

export const notifyDescriptor: Descriptor = Descriptor.create({
  name: notifyName,
  description: 'Sends one message {payload} to another process (optionally answering its wait) and completes with the receipt.',
  inputSchema: Schema.of(inputSchema),
  outputSchema: Schema.of({
    type: 'object',
    properties: { recipient: { type: 'string' }, signalId: { type: 'string' } },
    required: ['recipient', 'signalId'],
    additionalProperties: false,
  }),
});

const missingSettlement = new ClassifiedError('contract', `${notifyName}.missing_settlement`, 'the step after the message received no settlement');

type Phase = 'ready' | 'sent';
const phases: readonly Phase[] = ['ready', 'sent'];
const kind = 'example.messaging.notify';

interface NotifyState {
  readonly phase: Phase;
  /** The message wire `{recipient, wait_id?, payload}`. */
  readonly message: Record<string, unknown>;
}

export const notifyDefinition = machineDefinition<NotifyState>({
  descriptor: notifyDescriptor,
  stateKind: kind,
  initial(input) {
    const { recipient, waitId, payload } = input.decode<{ recipient: string; waitId?: string; payload: unknown }>();
    return { phase: 'ready', message: messageWire(message({ recipient, waitId, payload })) };
  },
  check(value) {
    const record = stateRecord(kind, value, ['phase', 'message']);
    const phase = statePhase(kind, record, phases);
    const wire = record.message;
    if (typeof wire !== 'object' || wire === null || Array.isArray(wire)) throw invalidState(kind, 'message must be an object');
    const members = wire as Record<string, unknown>;
    try {
      message({ recipient: members.recipient as string, waitId: members.wait_id as string | undefined, payload: members.payload });
    } catch {
      throw invalidState(kind, 'message is not a message');
    }
    return { phase, message: members };
  },
  step(state, signals) {
    const current = message({ recipient: state.message.recipient as string, waitId: state.message.wait_id as string | undefined, payload: state.message.payload });
    if (state.phase === 'ready') {
      // The descriptor accepts no unaddressed input, so the first window is empty.
      return { state: { ...state, phase: 'sent' }, transition: Transition.continue(0, [messageEffect(current)]) };
    }
    const settlement = signals[0];
    // The Engine delivers the settlement first in the next window; anything else is a broken contract.
    if (settlement === undefined || settlement.status === undefined) throw missingSettlement.wrap('the step after the message');
    const receipt = objectOf(settlement.payload);
    if (settlement.status !== 'succeeded' || typeof receipt?.signal_id !== 'string') {
      const error = objectOf(Payload.encode(receipt?.error ?? null));
      const detail = typeof error?.code === 'string' ? `${error.code}: ${String(error.message)}` : 'the message was not delivered';
      return { state, transition: Transition.fail(1, Failure.create('external', `${notifyName}.refused`, boundedDiagnostic(detail))) };
    }
    return { state, transition: Transition.complete(1, Payload.encode({ recipient: current.recipient.toString(), signalId: receipt.signal_id })) };
  },
});

/** A Failure message within the kernel's diagnostic bound (non-empty, trimmed, ≤ 4096 bytes; ASCII-safe cut). */
function boundedDiagnostic(text: string): string {
  const trimmed = text.replace(/[^\x20-\x7e]/g, '?').trim();
  return trimmed.length === 0 ? 'the message was not delivered' : trimmed.slice(0, 4000);
}
