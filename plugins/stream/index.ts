/**
 * `GET /v1/trees/{rootId}/stream`: the tree's events and deltas as server-sent events (rest-api.md,
 * "The SSE stream"), over the Host only.
 *
 * A stream has two phases:
 * 1. history: pages of the durable log (`host.events`) after the client's cursor, written at the
 *    client's pace. Waiting here holds back nobody but this client (the log is read, not pushed); a
 *    client that takes nothing for `stallTimeoutMs` is dropped.
 * 2. live: `host.stream` strictly after the last position written, pulled as fast as the Host yields and
 *    never waiting on the socket, so the tail does not slow down because one client reads slowly. What the
 *    socket has not taken yet is bounded (`bufferEntries`, `maxBufferBytes`); past the bound the client is
 *    dropped with a final `scope.stream.error` and can reconnect with its last id to resume.
 * Each phase starts strictly after the last position actually written, so across phases and reconnects
 * no committed entry is skipped or repeated.
 *
 * Trimmed history is never skipped silently: a cursor whose successors the bounded log no longer holds is
 * a 410 `history_trimmed` before any header; a client that falls behind the retention while streaming gets
 * a final `scope.stream.error` (`reason: "history_trimmed"`, `firstAvailable`); a stream from the beginning
 * of a trimmed log opens with a `scope.stream.notice` naming where it starts.
 *
 * The stream ends with `scope.stream.end` (no id) when the Host's tail ends (the root is terminal and its
 * subtree drained) or the server closes; `preClose` writes it to every open stream and waits (briefly) for
 * it to reach the clients before Fastify reaps connections.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import { eventNameValues } from '../../src/kernel/index.js';
import type { Host, LogEntry, LogQuery, Page, StreamEndReason } from '../../src/server/host.js';
import { ProblemError, problemResponses } from '../problem-details.js';
import { TreeParams } from '../shared.js';
import { StreamHeaders, StreamQuery, StreamResponse, streamDescription } from './schemas.js';
import { SseWriter, streamEndEvent, streamErrorEvent, streamNoticeEvent, type SseMessage } from './sse-writer.js';

export interface StreamPluginOptions {
  /** Interval of the `: keep-alive` comment (default 15 000 ms; `SCOPE_SSE_KEEPALIVE_MS`). */
  readonly keepAliveMs?: number;
  /** Messages a live client may fall behind before it is dropped (default 1 000; `SCOPE_SSE_BUFFER`). */
  readonly bufferEntries?: number;
  /** Bytes a live client may fall behind before it is dropped (default 16 MiB, at least 64 KiB). */
  readonly maxBufferBytes?: number;
  /** While history is replayed, how long a client may take nothing before it is dropped (default 30 000 ms). */
  readonly stallTimeoutMs?: number;
  /** After the last message, how long a client that does not read keeps its socket (default 10 000 ms). */
  readonly lingerMs?: number;
  /** The reconnection delay announced to EventSource with `retry:` (default 1 000 ms). */
  readonly retryMs?: number;
  /** Entries per history page (default 500). */
  readonly pageSize?: number;
  /** How long server shutdown waits for the final events to reach clients (default 2 000 ms). */
  readonly closeGraceMs?: number;
}

export const streamDefaults = {
  keepAliveMs: 15_000,
  bufferEntries: 1_000,
  maxBufferBytes: 16 * 1024 * 1024,
  stallTimeoutMs: 30_000,
  lingerMs: 10_000,
  retryMs: 1_000,
  pageSize: 500,
  closeGraceMs: 2_000,
} as const;

type Settings = { readonly [K in keyof typeof streamDefaults]: number };

const minimums: Settings = {
  keepAliveMs: 1,
  bufferEntries: 1,
  maxBufferBytes: 64 * 1024,
  stallTimeoutMs: 1,
  lingerMs: 0,
  retryMs: 0,
  pageSize: 1,
  closeGraceMs: 0,
};

function settingsOf(options: StreamPluginOptions): Settings {
  const settings: { -readonly [K in keyof Settings]: number } = { ...streamDefaults };
  for (const key of Object.keys(streamDefaults) as (keyof Settings)[]) {
    const value = options[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < minimums[key]) {
      throw new RangeError(`stream option ${key} must be an integer >= ${minimums[key]}, got ${String(value)}`);
    }
    settings[key] = value;
  }
  return settings;
}

/** Named components this plugin adds (none: its schemas are inline). */
export const streamComponents: readonly TSchema[] = [];

/** What `?types=` may name: the kernel's event names and `agent.delta`. */
export const streamTypeNames: readonly string[] = Object.freeze([...eventNameValues, 'agent.delta']);

function parseTypes(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  const names = [...new Set(text.split(','))];
  const unknown = names.filter((name) => !streamTypeNames.includes(name));
  if (unknown.length > 0) {
    throw new ProblemError('invalid_request', `unknown event type ${unknown.join(', ')}; known: ${streamTypeNames.join(', ')}`, [
      { pointer: '/query/types', message: `names an unknown event type (${unknown.join(', ')})`, keyword: 'enum' },
    ]);
  }
  return names;
}

function messageOf(entry: LogEntry): SseMessage {
  return { id: entry.position, event: entry.type, data: entry.data };
}

/** One open stream, as the route and shutdown see it. */
interface OpenStream {
  readonly rootId: string;
  readonly writer: SseWriter;
  /** Ends the Host's tail: aborted when the writer stops for any reason. */
  readonly abort: AbortController;
  /** The last position written (or the client's cursor); where a reconnect resumes. */
  lastEventId: string | null;
  /** Records the end in the Host's SSE metrics (first call counts). */
  readonly ended: (reason: StreamEndReason) => void;
}

/**
 * Iterates `source` until it ends or `signal` aborts, even while the source waits for its next entry;
 * on abort the source's `return()` is requested without waiting for it.
 */
async function* untilAborted<T>(source: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T, void, undefined> {
  const iterator = source[Symbol.asyncIterator]();
  const aborted = new Promise<'aborted'>((resolve) => {
    if (signal.aborted) resolve('aborted');
    else signal.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  let exhausted = false;
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), aborted]);
      if (next === 'aborted') return;
      if (next.done === true) {
        exhausted = true;
        return;
      }
      yield next.value;
    }
  } finally {
    if (!exhausted) void Promise.resolve(iterator.return?.()).catch(() => undefined);
  }
}

type Filters = Pick<LogQuery, 'types' | 'processId'>;

/**
 * Writes history, then live entries, until the Host's tail ends (true), or the client goes or is dropped
 * (false). Throws what the Host throws.
 */
async function pump(host: Host, settings: Settings, stream: OpenStream, filters: Filters, first: Page<LogEntry>): Promise<boolean> {
  const { writer } = stream;
  let page = first;
  let cursor = stream.lastEventId;
  for (;;) {
    for (const entry of page.items) {
      if (!(await writer.sendPaced(messageOf(entry), settings.stallTimeoutMs))) return false;
      stream.lastEventId = entry.position;
    }
    if (page.nextCursor === null || page.nextCursor === cursor) break;
    if (writer.state !== 'open') return false;
    cursor = page.nextCursor;
    page = await host.events(stream.rootId, { ...filters, after: cursor, limit: settings.pageSize });
  }
  if (writer.state !== 'open') return false;
  const after = stream.lastEventId === null ? {} : { after: stream.lastEventId };
  const tail = host.stream(stream.rootId, { ...filters, ...after, signal: stream.abort.signal });
  for await (const entry of untilAborted(tail, stream.abort.signal)) {
    if (!writer.send(messageOf(entry))) return false;
    stream.lastEventId = entry.position;
    await writer.relieve();
  }
  return writer.state === 'open';
}

/** Whether the root is terminal: the tail ended because the tree is done, not because the Host closed. */
async function rootFinished(host: Host, rootId: string, withinMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), withinMs);
  });
  try {
    return await Promise.race([host.inspectProcess(rootId).then((view) => view.result !== null), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** The oldest position still held, when `error` is the Host's `history_trimmed` (host.ts, `stream`). */
function trimmedAt(error: unknown): string | undefined {
  const candidate = error as { code?: unknown; firstAvailable?: unknown } | null;
  return candidate?.code === 'history_trimmed' && typeof candidate.firstAvailable === 'string' ? candidate.firstAvailable : undefined;
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[a-z][a-z_]{0,63}$/.test(code) ? code : 'internal_error';
}

const streamPlugin: FastifyPluginAsyncTypebox<StreamPluginOptions> = async (app, options) => {
  const settings = settingsOf(options);
  /** Streams still taking messages. */
  const open = new Set<OpenStream>();
  /** Responses not yet fully handed to their socket (an ended stream may still be flushing). */
  const unflushed = new Set<SseWriter>();

  // The app's own preClose (closing the Host) may already have ended the tails; whatever is still
  // open ends here, and every final event gets a bounded chance to leave before connections are reaped.
  app.addHook('preClose', async () => {
    for (const stream of [...open]) {
      stream.ended('shutdown');
      stream.writer.end({ event: streamEndEvent, data: { rootId: stream.rootId, reason: 'shutdown', lastEventId: stream.lastEventId } });
    }
    if (unflushed.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, settings.closeGraceMs);
    });
    await Promise.race([Promise.all([...unflushed].map((writer) => writer.finished())), grace]);
    clearTimeout(timer);
  });

  app.get(
    '/v1/trees/:rootId/stream',
    {
      exposeHeadRoute: false,
      schema: {
        operationId: 'streamTree',
        tags: ['stream'],
        summary: 'Stream the events and deltas of a tree (SSE)',
        description: streamDescription,
        params: TreeParams,
        querystring: StreamQuery,
        headers: StreamHeaders,
        response: { 200: StreamResponse, ...problemResponses('tree_not_found', 'history_trimmed') },
      },
    },
    async (request, reply) => {
      const { host } = app;
      const { rootId } = request.params;
      // EventSource reconnects with its original URL plus the header: the header is the newer cursor.
      const after = request.headers['last-event-id'] ?? request.query.after;
      const types = parseTypes(request.query.types);
      const filters: Filters = {
        ...(types === undefined ? {} : { types }),
        ...(request.query.processId === undefined ? {} : { processId: request.query.processId }),
      };
      const cursor = after === undefined ? {} : { after };

      // Before any byte is sent: an unknown tree (404), a cursor the log refuses (400) or one whose
      // successors retention trimmed (410) is still a problem response, not a 200 stream that ends at
      // once. `openStream` checks all three (and the first page again); the history is then read in
      // pages and the live tail opened where the history ends.
      const check = new AbortController();
      await host.openStream(rootId, { ...filters, ...cursor, signal: check.signal }).finally(() => check.abort());
      const first = await host.events(rootId, { ...filters, ...cursor, limit: settings.pageSize });

      reply.hijack();
      const writer = new SseWriter(reply.raw, {
        maxBufferEntries: settings.bufferEntries,
        maxBufferBytes: settings.maxBufferBytes,
        keepAliveMs: settings.keepAliveMs,
        lingerMs: settings.lingerMs,
        retryMs: settings.retryMs,
      });
      const stream: OpenStream = {
        rootId,
        writer,
        abort: new AbortController(),
        lastEventId: after ?? null,
        ended: host.telemetry.sseClientConnected(),
      };
      open.add(stream);
      unflushed.add(writer);
      void writer.finished().then(() => unflushed.delete(writer));
      writer.onStop(() => {
        open.delete(stream);
        stream.abort.abort();
        // Endings the route decides are recorded before it stops the writer; a drop happens inside a
        // write, and anything else is the client going away.
        stream.ended(writer.dropReason === undefined ? 'client_closed' : 'dropped');
      });
      writer.open(reply.getHeaders() as Record<string, string | number | readonly string[]>);
      // A stream from the beginning of a log that retention already trimmed says where it starts.
      if (first.trimmed !== undefined) {
        writer.send({ event: streamNoticeEvent, data: { reason: 'history_trimmed', firstAvailable: first.trimmed.firstAvailable } });
      }

      try {
        if (await pump(host, settings, stream, filters, first)) {
          const reason = (await rootFinished(host, rootId, settings.closeGraceMs)) ? 'completed' : 'shutdown';
          stream.ended(reason);
          writer.end({ event: streamEndEvent, data: { rootId, reason, lastEventId: stream.lastEventId } });
        } else if (writer.dropReason !== undefined) {
          request.log.warn({ rootId, reason: writer.dropReason, lastEventId: stream.lastEventId }, 'SSE client dropped');
        }
      } catch (error) {
        stream.ended('error');
        const firstAvailable = trimmedAt(error);
        if (firstAvailable !== undefined) {
          // The client fell behind the log's retention: what it has not received yet is gone. Said once,
          // at the point it happened; a reconnect from the last id would be refused with 410.
          request.log.info({ rootId, lastEventId: stream.lastEventId, firstAvailable }, 'SSE client fell behind the log retention');
          writer.end({
            event: streamErrorEvent,
            data: {
              reason: 'history_trimmed',
              code: 'history_trimmed',
              firstAvailable,
              lastEventId: stream.lastEventId,
              detail: 'the log trimmed entries this stream had not delivered yet; reconnect without Last-Event-ID to start at firstAvailable',
            },
          });
          return;
        }
        request.log.warn({ err: error, rootId, lastEventId: stream.lastEventId }, 'SSE stream failed');
        writer.end({
          event: streamErrorEvent,
          data: { reason: 'log_unavailable', code: errorCode(error), detail: 'reading the event log failed; reconnect with the last id to resume' },
        });
      } finally {
        stream.abort.abort();
      }
    },
  );
};

export default streamPlugin;
