/** `GET /v1/nodes` (the nodes on this Redis and their leases) and `POST /v1/nodes/{nodeId}/evict`. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses } from '../problem-details.js';
import { NoQuery, ref, wire } from '../shared.js';
import { NodeList, NodeParams } from './schemas.js';

export { nodeComponents } from './schemas.js';

const nodes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/nodes',
    {
      schema: {
        operationId: 'listNodes',
        tags: ['nodes'],
        summary: 'The nodes on this Redis',
        description: 'Every registered node with its lease state. A server that runs alone (embedded mode) lists itself.',
        querystring: NoQuery,
        response: { 200: { description: 'The nodes.', ...ref(NodeList) }, ...problemResponses() },
      },
    },
    async () => ({ items: wire([...(await app.host.nodes())]) }),
  );

  app.post(
    '/v1/nodes/:nodeId/evict',
    {
      schema: {
        operationId: 'evictNode',
        tags: ['nodes'],
        summary: 'Evict a node (alive but sick)',
        description:
          'Deletes the node\'s lease: the live nodes take its unfinished trees over (restored from their heads) within one renewal period, and the evicted node, finding its lease gone, changes no tree (`node_lease_lost`) for one lease period, then joins again under a new epoch without them.',
        params: NodeParams,
        querystring: NoQuery,
        response: { 204: { description: 'Evicted.', type: 'null' }, ...problemResponses('node_not_found') },
      },
    },
    async (request, reply) => {
      await app.host.evictNode(request.params.nodeId);
      return reply.code(204).send();
    },
  );
};

export default nodes;
