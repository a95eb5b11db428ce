import { Type, type Static } from '@sinclair/typebox';
import { anyJson, closedObject, identity, nullable, ref } from '../shared.js';

/**
 * Schemas of the tree event log as HTTP sees it: one position syntax shared by the `/events` cursor and
 * the SSE stream's `id`, `Last-Event-ID` and `?after=`, and the JSON page of log entries.
 */

/**
 * A log position: `<n>` or `<n>-<m>`, decimal without leading zeros (the in-memory log counts from 1, the
 * Redis log uses stream ids `<ms>-<seq>`; `0` is before everything). Positions compare numerically, part
 * by part; the Host also refuses parts beyond uint64. The syntax admits no CR, LF or other control
 * character, which is what makes a position safe to echo on an SSE `id:` line.
 */
export const positionPattern = '^(0|[1-9][0-9]{0,19})(-(0|[1-9][0-9]{0,19}))?$';
export function position(description: string, example: string): ReturnType<typeof Type.String> {
  return Type.String({ pattern: positionPattern, maxLength: 41, description, example });
}

export const LogEntry = closedObject(
  {
    position: position('The resumable position of the entry (its SSE `id`); compare numerically.', '42'),
    type: Type.String({ description: 'The event name (`agent.process.started`, …) or `agent.delta`.', example: 'agent.step.committed' }),
    processId: Type.String({ description: 'The process the event or delta belongs to.', example: 'process:0123456789abcdef0123456789abcdef' }),
    data: anyJson('The Event or Delta wire JSON.'),
  },
  { $id: 'LogEntry', description: 'One entry of a tree log: a committed or attempt event, or a delta.' },
);

export const LogPage = closedObject(
  {
    items: Type.Array(ref(LogEntry)),
    nextCursor: nullable(position('Pass as `after` to read the next page; null when the log holds nothing further now.', '42')),
  },
  { $id: 'LogPage', description: 'A page of a tree log, oldest entry first.' },
);
export type LogPageBody = Static<typeof LogPage>;

export const defaultEventsPageLimit = 100;
export const maxEventsPageLimit = 1_000;

export const EventsQuery = closedObject({
  after: Type.Optional(
    position(
      'Return entries strictly after this position (a previous `nextCursor` or an SSE `id`); omit (or `0`) to start at the oldest entry the log still holds. ' +
        'A position whose successors retention trimmed is 410 `history_trimmed`.',
      '0',
    ),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: maxEventsPageLimit, description: `Entries per page (default ${defaultEventsPageLimit}).`, example: 100 }),
  ),
  processId: Type.Optional(
    identity('Keep only the entries of this process of the tree (the log holds the whole tree).', 'process:0123456789abcdef0123456789abcdef'),
  ),
});
