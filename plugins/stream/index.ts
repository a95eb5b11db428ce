/**
 * `GET /v1/trees/{rootId}/stream`: the tree's events and deltas as server-sent events (rest-api.md,
 * "The SSE stream"), over the Host only.
 *
 * The Host opens one stream (`host.openStream`) after every check a client must hear as a problem
 * response rather than a stream that ends at once: an unknown tree (404), a bad cursor (400), a cursor
 * beyond the log (409 `cursor_ahead`), one whose successors retention trimmed (410 `history_trimmed`).
 * Its entries then come in two kinds, and are written differently:
 * - history (stored entries after the cursor) at the client's pace: waiting holds back nobody but this
 *   client (the log is read, not pushed); a client that takes nothing for `stallTimeoutMs` is dropped;
 * - live entries as fast as the Host yields, never waiting on the socket, so the tail does not slow down
 *   because one client reads slowly. What the socket has not taken yet is bounded (`bufferEntries`,
 *   `maxBufferBytes`); past the bound the client is dropped with a final `scope.stream.error` and can
 *   reconnect with its last id to resume.
 * Entry data passes through as the canonical JSON the log holds.
 *
 * Endings: `scope.stream.end` (no id) only when the root is terminal and its subtree drained — the tree
 * is done. Everything else that ends a stream is a final `scope.stream.error` with a `reason`: `shutdown`
 * (this server is stopping: reconnect after `retryMs`, here or on another node, with the last id),
 * `history_trimmed` (the client fell behind retention), `log_unavailable`, or a drop (`slow_client`).
 * A stream from the beginning of a log that retention already trimmed opens with `scope.stream.notice`.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import { eventNameValues } from '../../src/kernel/index.js';
import type { LogEntry, LogQuery, StreamBatch, StreamEndReason, TreeStream } from '../../src/server/host.js';
import { ProblemError, problemResponses } from '../problem-details.js';
import { TreeParams } from '../shared.js';
import { StreamHeaders, StreamQuery, StreamResponse, streamDescription } from './schemas.js';
import { batchFrames, entryFrame } from './entry-frames.js';
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
  /** Open streams at once (default 1 000; `SCOPE_SSE_MAX_STREAMS`); one more is 503 `stream_capacity`. */
  readonly maxStreams?: number;
  /**
   * A cap per caller on top of the server's (`SCOPE_SSE_MAX_STREAMS_PER_KEY`): the slots (this node's,
   * or every node's on one Redis), the cap, and who the caller is (undefined: not counted).
   */
  readonly perCaller?: {
    readonly slots: CallerSlots;
    readonly max: number;
    readonly holderOf: (request: FastifyRequest) => string | undefined;
  };
}

/** Open-stream slots per caller (src/store/stream-slots.ts has this node's and every node's on Redis). */
export interface CallerSlots {
  /** A slot for `holder`, or undefined when it already holds `cap`. */
  acquire(holder: string, cap: number): Promise<StreamSlot | undefined>;
  close(): Promise<void>;
}

interface StreamSlot {
  release(): void;
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
  maxStreams: 1_000,
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
  maxStreams: 1,
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
 * The next items of `source` until it ends or `signal` aborts, even while the source waits for its
 * next item; on abort the source's `return()` is requested without waiting for it. One listener for
 * the whole iteration (a race against one long-lived "aborted" promise would keep a reaction per item),
 * and no generator in between: the pump of every stream calls it for every batch.
 */
class UntilAborted<T> {
  readonly #iterator: AsyncIterator<T>;
  readonly #signal: AbortSignal;
  #interrupt: ((value: undefined) => void) | undefined;
  readonly #onAbort = (): void => this.#interrupt?.(undefined);
  #exhausted = false;

  constructor(source: AsyncIterable<T>, signal: AbortSignal) {
    this.#iterator = source[Symbol.asyncIterator]();
    this.#signal = signal;
    signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** The next item; undefined when the source ended or the signal aborted. */
  async next(): Promise<T | undefined> {
    if (this.#signal.aborted || this.#exhausted) return undefined;
    const next = await new Promise<IteratorResult<T> | undefined>((resolve, reject) => {
      this.#interrupt = resolve;
      this.#iterator.next().then(resolve, reject);
    });
    this.#interrupt = undefined;
    if (next === undefined) return undefined;
    if (next.done === true) {
      this.#exhausted = true;
      return undefined;
    }
    return next.value;
  }

  /** Stops listening; a source that did not end is asked to return. */
  close(): void {
    this.#signal.removeEventListener('abort', this.#onAbort);
    if (!this.#exhausted) void Promise.resolve(this.#iterator.return?.()).catch(() => undefined);
  }
}

/** The stream's batches; a Host stream without them is read as one-entry batches. */
function batchesOf(tree: TreeStream): AsyncIterable<StreamBatch> {
  if (tree.batches !== undefined) return tree.batches();
  return (async function* singles(): AsyncGenerator<StreamBatch, void, undefined> {
    for await (const { entry, live } of tree) yield { entries: [entry], live };
  })();
}

type Filters = Pick<LogQuery, 'types' | 'processId'>;

/**
 * Writes the stream's entries until it ends (true), or the client goes or is dropped (false): history
 * at the client's pace, live entries without waiting, each live batch in one write. Frames come from
 * entry-frames.ts, encoded once per entry (and joined once per batch) for every stream. Throws what
 * the Host throws.
 */
async function pump(settings: Settings, stream: OpenStream, tree: TreeStream): Promise<boolean> {
  const { writer } = stream;
  const batches = new UntilAborted(batchesOf(tree), stream.abort.signal);
  try {
    for (let batch = await batches.next(); batch !== undefined; batch = await batches.next()) {
      const { entries } = batch;
      if (batch.live) {
        const written = writer.sendFrames(batchFrames(entries));
        if (written > 0) stream.lastEventId = (entries[written - 1] as LogEntry).position;
        if (written < entries.length) return false;
        if (writer.backlogged) await writer.relieve();
      } else {
        for (const entry of entries) {
          if (!(await writer.sendFramePaced(entryFrame(entry), settings.stallTimeoutMs))) return false;
          stream.lastEventId = entry.position;
        }
      }
    }
  } finally {
    batches.close();
  }
  return writer.state === 'open';
}

/** The final message of a stream ended by this server's shutdown: reconnect (here or elsewhere) and resume. */
function shutdownMessage(stream: OpenStream, retryMs: number): Omit<SseMessage, 'id'> {
  return {
    event: streamErrorEvent,
    retryMs,
    data: {
      reason: 'shutdown',
      code: 'shutting_down',
      lastEventId: stream.lastEventId,
      retryMs,
      detail: 'this server is shutting down; the tree goes on: reconnect with Last-Event-ID to resume, here or on another node',
    },
  };
}

/** The final message of a stream whose reading fell behind the node's shared log tail: resume from the last id. */
function laggingMessage(stream: OpenStream, retryMs: number): Omit<SseMessage, 'id'> {
  return {
    event: streamErrorEvent,
    retryMs,
    data: {
      reason: 'slow_client',
      lastEventId: stream.lastEventId,
      retryMs,
      detail: 'this stream fell too far behind the live log; reconnect with Last-Event-ID to resume, nothing is lost',
    },
  };
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
  /** Streams past the capacity check and not yet open (their checks are still running). */
  let opening = 0;
  /** Responses not yet fully handed to their socket (an ended stream may still be flushing). */
  const unflushed = new Set<SseWriter>();

  // The app's own preClose (closing the Host) may already have ended the tails; whatever is still
  // open ends here, and every final event gets a bounded chance to leave before connections are reaped.
  app.addHook('preClose', async () => {
    for (const stream of [...open]) {
      stream.ended('shutdown');
      stream.writer.end(shutdownMessage(stream, settings.retryMs));
    }
    if (unflushed.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, settings.closeGraceMs);
    });
    await Promise.race([Promise.all([...unflushed].map((writer) => writer.finished())), grace]);
    clearTimeout(timer);
  });

  const retryAfter = String(Math.max(1, Math.ceil(settings.retryMs / 1000)));
  const { perCaller } = options;
  if (perCaller !== undefined && (!Number.isSafeInteger(perCaller.max) || perCaller.max < 1)) {
    throw new RangeError(`stream option perCaller.max must be an integer >= 1, got ${String(perCaller.max)}`);
  }
  app.addHook('onClose', async () => perCaller?.slots.close());

  /** The caller's slot (undefined when callers are not counted); a caller at its cap is refused. */
  async function callerSlot(request: FastifyRequest, reply: { header(name: string, value: string): unknown }): Promise<StreamSlot | undefined> {
    const holder = perCaller?.holderOf(request);
    if (perCaller === undefined || holder === undefined) return undefined;
    const slot = await perCaller.slots.acquire(holder, perCaller.max);
    if (slot !== undefined) return slot;
    reply.header('retry-after', retryAfter);
    throw new ProblemError('stream_capacity', `this API key already holds ${perCaller.max} open streams; close one, or retry later`);
  }

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
        response: { 200: StreamResponse, ...problemResponses('tree_not_found', 'cursor_ahead', 'history_trimmed', 'stream_capacity') },
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

      // A bound on what one server holds open: past it, come back later (or to another node).
      if (open.size + opening >= settings.maxStreams) {
        reply.header('retry-after', retryAfter);
        throw new ProblemError('stream_capacity', `this server already serves ${settings.maxStreams} streams; retry later or on another node`);
      }
      // Every check a client must hear as a problem (404, 400, 409, 410) happens here, before any byte.
      const abort = new AbortController();
      opening += 1;
      let tree: TreeStream;
      let slot: StreamSlot | undefined;
      try {
        slot = await callerSlot(request, reply);
        tree = await host.openStream(rootId, { ...filters, ...cursor, signal: abort.signal });
      } catch (error) {
        slot?.release();
        throw error;
      } finally {
        opening -= 1;
      }

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
        abort,
        lastEventId: after ?? null,
        ended: host.telemetry.sseClientConnected(),
      };
      open.add(stream);
      unflushed.add(writer);
      void writer.finished().then(() => unflushed.delete(writer));
      writer.onStop(() => {
        slot?.release();
        open.delete(stream);
        stream.abort.abort();
        // Endings the route decides are recorded before it stops the writer; a drop happens inside a
        // write, and anything else is the client going away.
        stream.ended(writer.dropReason === undefined ? 'client_closed' : 'dropped');
      });
      writer.open(reply.getHeaders() as Record<string, string | number | readonly string[]>);
      // A stream from the beginning of a log that retention already trimmed says where it starts.
      if (tree.trimmedStart !== undefined) {
        writer.send({ event: streamNoticeEvent, data: { reason: 'history_trimmed', firstAvailable: tree.trimmedStart } });
      }

      try {
        if (await pump(settings, stream, tree)) {
          if (tree.end === 'completed') {
            stream.ended('completed');
            writer.end({ event: streamEndEvent, data: { rootId, reason: 'completed', lastEventId: stream.lastEventId } });
          } else if (tree.end === 'lagging') {
            stream.ended('dropped');
            request.log.warn({ rootId, lastEventId: stream.lastEventId }, 'SSE stream fell behind the shared log tail');
            writer.end(laggingMessage(stream, settings.retryMs));
          } else {
            stream.ended('shutdown');
            writer.end(shutdownMessage(stream, settings.retryMs));
          }
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
