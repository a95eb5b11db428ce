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
        description:
          'Oldest first, in pages (`limit`, default and at most 1000; `nextCursor`). In Redis mode the list is read from the wait index and each entry verified against its head on every page.',
        querystring: WaitQuery,
        response: { 200: { description: 'A page of the unanswered waits of non-terminal processes.', ...ref(WaitList) }, ...problemResponses('invalid_request') },
      },
    },
    async (request) => {
      const { deployment, rootId, cursor, limit } = request.query;
      const page = await app.host.waitPage({
        ...(deployment === undefined ? {} : { deployment }),
        ...(rootId === undefined ? {} : { rootId }),
        ...(cursor === undefined ? {} : { cursor }),
        ...(limit === undefined ? {} : { limit }),
        ...(request.principal === undefined ? {} : { tenant: request.principal.tenant }),
      });
      return { items: wire([...page.items]), nextCursor: page.nextCursor };
    },
  );
};

export default waits;
