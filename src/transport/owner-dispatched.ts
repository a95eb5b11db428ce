import type { Dispatcher } from '../kernel/index.js';

const marked = new WeakSet<Dispatcher>();

/**
 * Marks a Dispatcher to run in the process that owns the tree, whatever the transport: a timer
 * that fires for the tree's owner, or a port into this Host (cross-tree messaging) has nothing a
 * queue worker could do. With the BullMQ transport such a deployment is not bound to a queue, no
 * worker consumes it, and readiness does not wait for one. Returns the same dispatcher.
 */
export function ownerDispatched<D extends Dispatcher>(dispatcher: D): D {
  marked.add(dispatcher);
  return dispatcher;
}

export function isOwnerDispatched(dispatcher: Dispatcher | undefined): boolean {
  return dispatcher !== undefined && marked.has(dispatcher);
}
