import type { Dispatcher } from '../kernel/index.js';

/** Where a deployment's Effects run: in the process that owns the tree, or on a `scope worker` through BullMQ. */
export type TransportKind = 'inprocess' | 'bullmq';

const placements = new WeakMap<Dispatcher, TransportKind>();

/**
 * Marks a Dispatcher to run in the process that owns the tree, whatever the server's transport: a
 * timer that fires for the tree's owner, or a port into this Host (cross-tree messaging) has
 * nothing a queue worker could do, and a deployment may simply prefer its Effects in-process. Under
 * `SCOPE_TRANSPORT=bullmq` such a deployment is not bound to a queue, no worker consumes it, and
 * readiness does not wait for one. Returns the same dispatcher.
 */
export function ownerDispatched<D extends Dispatcher>(dispatcher: D): D {
  placements.set(dispatcher, 'inprocess');
  return dispatcher;
}

/**
 * Marks a Dispatcher to run only on `scope worker` processes through BullMQ, whatever the server's
 * default transport: its Effects never run in the API process. A server without Redis refuses to
 * start with such a deployment (it cannot fall back to running it in-process). Returns the same
 * dispatcher.
 */
export function queueDispatched<D extends Dispatcher>(dispatcher: D): D {
  placements.set(dispatcher, 'bullmq');
  return dispatcher;
}

/** The transport a dispatcher's Effects take on a server whose default is `serverDefault`. */
export function transportOf(dispatcher: Dispatcher, serverDefault: TransportKind): TransportKind {
  return placements.get(dispatcher) ?? serverDefault;
}

/** Whether a dispatcher is marked to run in the owner ({@link ownerDispatched}). */
export function isOwnerDispatched(dispatcher: Dispatcher | undefined): boolean {
  return dispatcher !== undefined && placements.get(dispatcher) === 'inprocess';
}
