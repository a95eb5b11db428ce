import { notifyDefinition, notifyName } from '../../../strategies/messaging/notify.js';
import { Deployment, Digest } from '../../kernel/index.js';
import { type DeliveryPort, messagingDispatcher } from '../dispatchers/messaging.js';
import { type DeliveryHost, hostDeliveryPort } from '../messaging-delivery.js';

/**
 * The messaging example deployments (docs/strategies/messaging.md): `example.messaging.notify`, served by the
 * messaging dispatcher over the Host's delivery port (`host`), or over `delivery` when given. Without either
 * (a catalog built outside a Host, e.g. a `scope worker`) every message is refused definitely
 * (`messaging.no_port`), never delivered.
 */
export function messagingDeployments(options: { readonly host?: () => DeliveryHost; readonly delivery?: DeliveryPort } = {}): Deployment[] {
  const host = options.host;
  const port = options.delivery ?? (host === undefined ? undefined : hostDeliveryPort({ host }));
  return [
    Deployment.create({
      definition: notifyDefinition,
      dispatcher: messagingDispatcher({ port }),
      implementationDigest: Digest.of(`scope:${notifyName}:implementation:v1`),
      configurationDigest: Digest.of(`scope:${notifyName}:configuration:v1`),
    }),
  ];
}
