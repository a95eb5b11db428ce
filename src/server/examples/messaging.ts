import { notifyDefinition, notifyName } from '../../../strategies/messaging/notify.js';
import { Deployment, Digest } from '../../kernel/index.js';
import { ownerDispatched } from '../../transport/placement.js';
import { type DeliveryPort, messagingDispatcher } from '../dispatchers/messaging.js';
import { type DeliveryHost, hostDeliveryPort } from '../messaging-delivery.js';

/**
 * The messaging example deployments (docs/strategies/messaging.md): `example.messaging.notify`, served by the
 * messaging dispatcher over the Host's delivery port (`host`), or over `delivery` when given. The
 * dispatcher runs in the tree's owner whatever the transport (`ownerDispatched`); a catalog built outside
 * a Host (a `scope worker`) holds it without a port, and never runs it.
 */
export function messagingDeployments(options: { readonly host?: () => DeliveryHost; readonly delivery?: DeliveryPort } = {}): Deployment[] {
  const host = options.host;
  const port = options.delivery ?? (host === undefined ? undefined : hostDeliveryPort({ host }));
  return [
    Deployment.create({
      definition: notifyDefinition,
      // Only the tree's owner holds the Host port: with the BullMQ transport no worker takes it.
      dispatcher: ownerDispatched(messagingDispatcher({ port })),
      implementationDigest: Digest.of(`scope:${notifyName}:implementation:v1`),
      configurationDigest: Digest.of(`scope:${notifyName}:configuration:v1`),
    }),
  ];
}
