import { sendCapability } from '../../strategies/messaging/message.js';
import { HostErrorCode } from '../errors.js';
import { ErrorCode, KernelError, type ProcessId, type SignalRequest } from '../kernel/index.js';
import { DeliveryRefusedError, type DeliveryPort } from './dispatchers/messaging.js';
import type { Host, Json, SignalInput } from './host.js';
import { OwnedElsewhereError, type OwnerHint } from './ownership/owned-elsewhere.js';

/**
 * The Host's delivery port for cross-tree messages (docs/strategies/messaging.md).
 *
 * 1. Authorises the sender: the sending Process must hold the capability `scope.messaging.send` in its
 *    own CapabilitySet (granted at its start; a child only with a subset of its parent's).
 * 2. Tenancy: the recipient's tree must belong to the sender's tree's tenant. With authentication off
 *    every tree is the tenant `default`. A recipient of another tenant is refused exactly as an unknown
 *    one is (`process_not_found`, same message), so a message cannot probe other tenants' ids.
 * 3. Admits exactly one signal through {@link Host.deliverSignals}, the path `POST /v1/processes/{id}/signals`
 *    takes: the recipient's schemas and current-wait rule apply, and an identical earlier admission is
 *    `{accepted: false}` (a duplicate: success). A recipient tree a live other node owns is forwarded to
 *    that node's signals route, one hop, like any forwarded command.
 *
 * Refusals the recipient's admission makes before anything is committed (no such process, finished,
 * not its current wait, schema, a full mailbox) are definite ({@link DeliveryRefusedError}); every other
 * failure (storage, an unreachable owner, a conflicting earlier admission) is thrown as is: the
 * dispatcher's outcome is then Unknown.
 */

/** Recipient-side refusals that prove nothing was admitted. */
const definiteCodes: ReadonlySet<string> = new Set([
  HostErrorCode.processNotFound,
  ErrorCode.processFinished,
  ErrorCode.signalRejected,
  ErrorCode.schemaValidationFailed,
  ErrorCode.resourceLimitExceeded,
]);

/** The part of the Host this port uses (the public Host surface, nothing more). */
export type DeliveryHost = Pick<Host, 'inspectProcess' | 'tenantOf' | 'deliverSignals' | 'nodeId'> & {
  /**
   * With authentication on: the bearer token this node presents to another node for `tenant` (a node
   * token, src/app/auth/node-tokens.ts); undefined when authentication is off.
   */
  nodeCredential?(tenant: string): string | undefined;
};

export interface HostDeliveryOptions {
  /** Resolved at the first delivery: the Host that builds its deployments passes itself late. */
  readonly host: () => DeliveryHost;
  /** One forwarded delivery's bound (default 30 s, like a forwarded command). */
  readonly forwardTimeoutMs?: number;
}

export function hostDeliveryPort(options: HostDeliveryOptions): DeliveryPort {
  const timeoutMs = options.forwardTimeoutMs ?? 30_000;
  return Object.freeze({
    async deliver(sender: ProcessId, recipient: ProcessId, request: SignalRequest, signal: AbortSignal): Promise<{ readonly admitted: boolean }> {
      const host = options.host();
      const from = await host.inspectProcess(sender.toString());
      if (!from.capabilities.includes(sendCapability)) {
        throw new DeliveryRefusedError('messaging.capability_denied', `process ${sender.toString()} lacks the capability ${sendCapability}`);
      }
      const [senderTenant, recipientTenant] = await Promise.all([host.tenantOf(sender.toString()), host.tenantOf(recipient.toString())]);
      if (recipientTenant === undefined || recipientTenant !== senderTenant) throw notFound(recipient);
      const input: SignalInput = {
        id: request.id.toString(),
        ...(request.waitId === undefined ? {} : { waitId: request.waitId.toString() }),
        payload: request.payload.decode<Json>(),
      };
      signal.throwIfAborted();
      try {
        const outcome = await host.deliverSignals(recipient.toString(), [input]);
        return { admitted: outcome.accepted };
      } catch (error) {
        if (error instanceof OwnedElsewhereError) {
          const credential = host.nodeCredential?.(recipientTenant);
          return forward(error.owner, host.nodeId, recipient, input, { timeoutMs, signal, credential });
        }
        if (error instanceof KernelError && definiteCodes.has(error.code)) throw new DeliveryRefusedError(error.code, error.message, { cause: error });
        throw error;
      }
    },
  });
}

function notFound(recipient: ProcessId): DeliveryRefusedError {
  // The very words of an unknown id (residency.ts): another tenant's process is not told apart.
  return new DeliveryRefusedError(HostErrorCode.processNotFound, `no process ${recipient.toString()}`);
}

/**
 * Sends the one-signal batch to the owner's signals route with the hop header (src/app/forwarding.ts): a
 * node that does not own the tree either answers `tree_owned_elsewhere` naming the owner it sees, and the
 * delivery follows that hint once. The owner's definite refusals stay definite; anything else throws.
 */
async function forward(
  owner: OwnerHint,
  self: string,
  recipient: ProcessId,
  input: SignalInput,
  options: { readonly timeoutMs: number; readonly signal: AbortSignal; readonly credential: string | undefined },
): Promise<{ readonly admitted: boolean }> {
  const { timeoutMs, signal, credential } = options;
  let target = owner;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const response = await fetch(`${target.url}/v1/processes/${encodeURIComponent(recipient.toString())}/signals`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'scope-forwarded-by': self,
        // A message is the machine's, also when the recipient's owner admits it (plugins/signals).
        'scope-signal-agency': 'machine',
        // The owner authenticates this node as acting for the sender's tenant, and checks the recipient is in it.
        ...(credential === undefined ? {} : { authorization: `Bearer ${credential}` }),
      },
      body: JSON.stringify({ signals: [input] }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      redirect: 'manual',
    });
    const text = await response.text();
    const body = parseBody(text);
    if (response.status === 200 && typeof body?.accepted === 'boolean') return { admitted: body.accepted };
    const code = typeof body?.code === 'string' ? body.code : undefined;
    const hintUrl = response.headers.get('scope-owner-url');
    const hintNode = response.headers.get('scope-owner-node');
    if (attempt === 0 && code === HostErrorCode.treeOwnedElsewhere && hintUrl !== null && hintNode !== null && hintUrl !== target.url) {
      target = { nodeId: hintNode, url: hintUrl };
      continue;
    }
    const detail = typeof body?.detail === 'string' ? body.detail : text.slice(0, 200);
    if (code !== undefined && definiteCodes.has(code)) throw new DeliveryRefusedError(code, detail);
    throw new Error(`delivery to ${recipient.toString()} forwarded to node ${target.nodeId} answered ${response.status}${code === undefined ? '' : ` ${code}`}: ${detail}`);
  }
  throw new Error(`delivery to ${recipient.toString()}: the owner moved twice while forwarding`);
}

function parseBody(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
