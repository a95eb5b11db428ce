import { notifyDefinition, notifyName } from '../../../strategies/messaging/notify.js';
import { Deployment, Digest } from '../../kernel/index.js';
import { type DeliveryPort, messagingDispatcher } from '../dispatchers/messaging.js';

/**
 * The messaging example deployments (docs/strategies/messaging.md): `example.messaging.notify`, served by the
 * messaging dispatcher over the Host's delivery port. Without a port (a catalog built outside a Host, e.g.
 * a `scope worker`) every message is refused definitely (`messaging.no_port`), never delivered.
 */
export function messagingDeployments(options: { readonly delivery?: DeliveryPort } = {}): Deployment[] {
  return [
    Deployment.create({
      definition: notifyDefinition,
      dispatcher: messagingDispatcher({ port: options.delivery }),
      implementationDigest: Digest.of(`scope:${notifyName}:implementation:v1`),
      configurationDigest: Digest.of(`scope:${notifyName}:configuration:v1`),
    }),
  ];
}
