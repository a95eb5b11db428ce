/** The nodes on one Redis: their leases, and eviction of a sick one. */
import { Type, type TSchema } from '@sinclair/typebox';
import { closedObject, nullable, ref, stringEnum } from '../shared.js';

export const Node = closedObject(
  {
    nodeId: Type.String({ description: 'The node id (`SCOPE_NODE_ID`, or random per process).', example: 'node-a' }),
    url: nullable(Type.String({ description: 'Where other nodes forward commands for its trees (null: its lease is gone, or it runs alone).' })),
    epoch: nullable(Type.Integer({ minimum: 1, description: 'Its registration: a restart under the same id is a new epoch.' })),
    lease: stringEnum(['live', 'lapsed'], { description: 'live: its lease is held on the server; lapsed: gone (its unfinished trees are being taken over).' }),
    leaseTtlMs: nullable(Type.Integer({ minimum: 0, description: 'What is left of its lease on the server.' })),
    trees: Type.Integer({ minimum: 0, description: 'Roots in its directory (a hint: each tree\'s owner record decides).' }),
    self: Type.Boolean({ description: 'Whether it is the node answering.' }),
  },
  { $id: 'Node', description: 'One node of the cluster.' },
);

export const NodeList = closedObject({ items: Type.Array(ref(Node)) }, { $id: 'NodeList', description: 'Every registered node.' });

export const NodeParams = closedObject({
  nodeId: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'The node id.', example: 'node-a' }),
});

export const nodeComponents: readonly TSchema[] = [Node, NodeList];
