import { Type } from '@sinclair/typebox';
import { positionPattern } from '../events/schemas.js';
import { closedObject, identity } from '../shared.js';

/** Schemas of `GET /v1/trees/{rootId}/stream`. */

/**
 * `?types=`: a comma list of event names, each dot-separated lowercase words. The syntax admits no CR, LF
 * or space, so nothing a client sends here can reach an SSE line; the names are then checked against
 * the known event names.
 */
export const typesPattern = '^[a-z][a-z0-9_.]{0,63}(,[a-z][a-z0-9_.]{0,63}){0,31}$';

export const StreamQuery = closedObject({
  after: Type.Optional(
    Type.String({
      pattern: positionPattern,
      maxLength: 41,
      description: 'Resume strictly after this position. The `Last-Event-ID` header wins when both are present (EventSource reconnects with the original URL).',
      example: '0',
    }),
  ),
  types: Type.Optional(
    Type.String({
      pattern: typesPattern,
      description: 'Comma list of event names to keep (`agent.delta` for deltas); everything when omitted.',
      example: 'agent.process.started,agent.process.finished,agent.delta',
    }),
  ),
  processId: Type.Optional(identity('Keep only the entries of this process of the tree.', 'process:0123456789abcdef0123456789abcdef')),
});

/** Not closed: only `last-event-id` is described, every other header passes. */
export const StreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: positionPattern,
      maxLength: 41,
      description: 'Sent by EventSource when it reconnects: resume strictly after this position.',
      example: '17',
    }),
  ),
});

export const streamDescription = [
  'Server-sent events of the tree: committed events replayed from the durable log, then live events and',
  'best-effort deltas. Each message has `id:` (a resumable position; `Last-Event-ID` or `?after=` resumes',
  'strictly after it, with no gap and no repeat), `event:` (the event name, `agent.delta` for deltas) and one',
  'JSON `data:` line (the Event or Delta wire JSON). A `: keep-alive` comment is sent at a fixed interval',
  '(15 s by default). The stream ends with `event: scope.stream.end` (no id; data `{rootId, reason,',
  'lastEventId}`) once the root is terminal and its subtree has drained (`reason: "completed"`), or when the',
  'server shuts down (`reason: "shutdown"`: reconnect with `lastEventId`). A client that falls too far behind',
  'or stops reading is dropped with a final `event: scope.stream.error` (data `{reason, detail}`); a failure',
  'to read the log ends the stream the same way (`reason: "log_unavailable"`). Reconnecting with the last',
  'id received resumes losslessly.',
  'The log is bounded (`SCOPE_EVENT_LOG_MAXLEN`), and trimmed history is never skipped silently. A cursor',
  '(`Last-Event-ID` or `?after=`) whose successors retention already trimmed is answered 410 `history_trimmed`',
  'before the stream starts (the problem\'s `firstAvailable` is the oldest position still held; EventSource stops',
  'reconnecting on it): reconnect without a cursor to start there. A client that falls behind retention while',
  'streaming gets a final `event: scope.stream.error` with data `{reason: "history_trimmed", firstAvailable,',
  'lastEventId, detail}`. A stream without a cursor (or from `0`) over a trimmed log starts at the oldest entry',
  'still held and first sends `event: scope.stream.notice` (no id) with data `{reason: "history_trimmed",',
  'firstAvailable}`.',
].join(' ');

export const StreamResponse = {
  description: 'An event stream (`text/event-stream`).',
  content: {
    'text/event-stream': {
      schema: Type.String({
        description: 'SSE frames.',
        example: 'id: 1\nevent: agent.process.started\ndata: {"name":"agent.process.started"}\n\n',
      }),
    },
  },
};
