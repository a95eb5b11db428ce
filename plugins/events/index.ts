/**
 * `GET /v1/processes/{id}/events?after=&limit=`: a JSON page of the log of the process's tree —
 * committed events, attempt events and deltas, oldest first — for clients that poll rather than
 * stream. Positions are the SSE stream's ids, so a client can page up to a point and stream from
 * there (or the reverse) without a gap.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import { problemResponses } from '../problem-details.js';
import type { LogEntry as LogEntryView, LogPage as LogPageView } from '../../src/server/host.js';
import { ProcessParams, ref } from '../shared.js';
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
          'attempt events and deltas (best-effort). `position` is the SSE `id` of the same entry on ' +
          '`/v1/trees/{rootId}/stream`; pass `nextCursor` as `after` for the next page. An unparseable cursor is 400 `invalid_request`. ' +
          'The log is bounded (`SCOPE_EVENT_LOG_MAXLEN`): retention trims the oldest entries. Without `after` (or with `0`) a page ' +
          'starts at the oldest entry still held. A cursor whose successors were trimmed is never skipped over: it is ' +
          '410 `history_trimmed`, whose `firstAvailable` names the oldest position still held (read again without a cursor to ' +
          'start there); when trimmed entries lie inside a page, the page ends before them and the next one is the 410. ' +
          'A cursor beyond the newest position of the log (never issued for this tree) is 409 `cursor_ahead`.',
        params: ProcessParams,
        querystring: EventsQuery,
        response: { 200: ref(LogPage), ...problemResponses('process_not_found', 'tree_not_found', 'cursor_ahead', 'history_trimmed') },
      },
    },
    async (request, reply) => {
      const { after, limit, processId } = request.query;
      const page = await app.host.events(request.params.id, {
        ...(after === undefined ? {} : { after }),
        ...(processId === undefined ? {} : { processId }),
        limit: limit ?? defaultEventsPageLimit,
      });
      // A string with a JSON content type is sent as it is (the typed reply expects the object it encodes).
      return reply.type('application/json; charset=utf-8').send(pageJson(page) as never);
    },
  );
};

/**
 * The page as JSON text, each entry's `data` spliced in as the canonical JSON the log holds: the
 * server does not change it, so it does not parse and re-serialise it. (Fastify sends a string with a
 * JSON content type as is.)
 */
export function pageJson(page: LogPageView): string {
  return `{"items":[${page.items.map(entryJson).join(',')}],"nextCursor":${JSON.stringify(page.nextCursor)}}`;
}

function entryJson(entry: LogEntryView): string {
  return `{"position":${JSON.stringify(entry.position)},"type":${JSON.stringify(entry.type)},"processId":${JSON.stringify(entry.processId)},"data":${entry.data}}`;
}

export default eventsPlugin;
