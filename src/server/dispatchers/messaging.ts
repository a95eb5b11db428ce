import { decodeMessage, messageSignalRequest } from '../../../strategies/messaging/message.js';
import { type DeltaEmitter, type Dispatcher, type Effect, type EffectRequest, Payload, type ProcessId, type ReplayPolicy, Settlement, type SignalRequest } from '../../kernel/index.js';

/**
 * The messaging dispatcher (contract §7): delivers the Message an Effect carries to another tree
 * through a {@link DeliveryPort}, under a SignalId derived from the EffectId.
 *
 * Outcomes, never guessed:
 * - admitted (or already admitted under that SignalId: a replay) → `succeeded`, receipt `{signal_id}`;
 * - refused by the dispatcher (undecodable message, no port) or definitely refused by the port
 *   ({@link DeliveryRefusedError}: nothing was admitted) → `failed` with a JSON diagnostic;
 * - any other port error → the dispatch rejects, so the outcome is Unknown: the port may have admitted
 *   the signal before it failed, and nothing here can disprove it. A replay (same EffectId) delivers the
 *   same SignalId, which the recipient's mailbox deduplicates.
 *
 * The sender's and the recipient's trees acknowledge separately: the recipient holds the signal once the
 * port returns; the sender's settlement commits later, in its own tree. No cross-tree atomicity.
 */

/**
 * Where a message goes: authorises `sender` for `recipient`, validates, and admits exactly one signal
 * (atomically). Resolves `{admitted: false}` when that SignalId was already admitted with identical
 * content (a duplicate is a success). Throws {@link DeliveryRefusedError} only when it knows nothing was
 * admitted; any other error means "unknown".
 */
export interface DeliveryPort {
  deliver(sender: ProcessId, recipient: ProcessId, request: SignalRequest, signal: AbortSignal): Promise<{ readonly admitted: boolean }>;
}

/** A definite refusal of a delivery: nothing was admitted (the sender lacks authority, no such recipient, invalid). */
export class DeliveryRefusedError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DeliveryRefusedError';
    this.code = code;
  }
}

export interface MessagingDispatcherOptions {
  /** Absent: every message is refused (`messaging.no_port`) — a deployment registered without a Host. */
  readonly port: DeliveryPort | undefined;
}

function failed(code: string, message: string): Settlement {
  return Settlement.of('failed', Payload.encode({ error: { code, message } }));
}

export function messagingDispatcher(options: MessagingDispatcherOptions): Dispatcher {
  const port = options.port;
  return Object.freeze({
    async dispatch(request: EffectRequest, _emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
      const decoded = decodeMessage(request.effect.payload);
      if (!decoded.ok) return failed('messaging.invalid_message', decoded.problem);
      if (port === undefined) return failed('messaging.no_port', 'no delivery port is configured for this dispatcher');
      const signalRequest = messageSignalRequest(request.id, decoded.message);
      signal.throwIfAborted();
      try {
        await port.deliver(request.processId, decoded.message.recipient, signalRequest, signal);
      } catch (error) {
        if (error instanceof DeliveryRefusedError) return failed(error.code, error.message);
        throw error;
      }
      return Settlement.of('succeeded', Payload.encode({ signal_id: signalRequest.id.toString() }));
    },
    replayPolicy(effect: Effect): ReplayPolicy {
      return decodeMessage(effect.payload).ok ? 'same_identity' : 'never';
    },
  });
}
