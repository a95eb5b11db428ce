/** `GET /v1/waits`: the inbox of unanswered waits. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses } from '../problem-details.js';
import { ref, wire } from '../shared.js';
import { WaitList, WaitQuery } from './schemas.js';

export { waitComponents } from './schemas.js';

const waits: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/waits',
    {
      schema: {
        operationId: 'listWaits',
        tags: ['waits'],
        summary: 'Unanswered waits',
        querystring: WaitQuery,
        response: { 200: { description: 'Every non-terminal process with an unanswered wait.', ...ref(WaitList) }, ...problemResponses() },
      },
    },
    async (request) => {
      const { deployment, rootId } = request.query;
      return { items: wire([...(await app.host.waits({ ...(deployment === undefined ? {} : { deployment }), ...(rootId === undefined ? {} : { rootId }), ...(request.principal === undefined ? {} : { tenant: request.principal.tenant }) }))]) };
    },
  );
};

export default waits;
