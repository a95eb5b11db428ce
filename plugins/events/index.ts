/**
 * `GET /v1/processes/{id}/events?after=&limit=`: a JSON page of the log of the process's tree —
 * committed events, attempt events and deltas, oldest first — for clients that poll rather than
 * stream. Positions are the SSE stream's ids, so a client can page up to a point and stream from
 * there (or the reverse) without a gap.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import { problemResponses } from '../problem-details.js';
import { ProcessParams, ref, wire } from '../shared.js';
import { EventsQuery, LogEntry, LogPage, defaultEventsPageLimit } from './schemas.js';

/** Named components the routes reference; `buildApp` adds them at the root. */
export const eventsComponents: readonly TSchema[] = [LogEntry, LogPage];

const eventsPlugin: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/processes/:id/events',
    {
      schema: {
        operationId: 'listProcessEvents',
        tags: ['events'],
        summary: 'Page through the events and deltas of the tree of a process',
        description:
          'Entries of the log of the tree the process belongs to, strictly after `after`, oldest first: committed events, ' +
          'attempt events and deltas (best-effort; retention may trim them). `position` is the SSE `id` of the same entry on ' +
          '`/v1/trees/{rootId}/stream`; pass `nextCursor` as `after` for the next page. An unparseable cursor is 400 `invalid_request`.',
        params: ProcessParams,
        querystring: EventsQuery,
        response: { 200: ref(LogPage), ...problemResponses('process_not_found', 'tree_not_found') },
      },
    },
    async (request) => {
      const { after, limit } = request.query;
      const page = await app.host.events(request.params.id, {
        ...(after === undefined ? {} : { after }),
        limit: limit ?? defaultEventsPageLimit,
      });
      return wire(page);
    },
  );
};

export default eventsPlugin;
