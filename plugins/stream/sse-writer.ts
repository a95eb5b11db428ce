import type { ServerResponse } from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * One server-sent-events response, written by hand on `reply.raw` (stack.md §4 allows the fallback).
 *
 * Why not @fastify/sse: its `send()` awaits 'drain', so whoever feeds a stalled client is held back with
 * it, and the Host's tail must never slow down for one socket; its heartbeat ignores backpressure; and
 * concurrent sends need an outside promise chain to stay ordered. Here every write is one synchronous
 * call, `res.write` or (a batch framed in advance) the same bytes on its socket, ordered by construction;
 * a batch of messages is one write; what a client owes is counted exactly (entries through write
 * callbacks, bytes through `writableLength`), and one encoder decides what may reach an `id:` or
 * `event:` line.
 */

/** What may appear in an `id:` or `event:` field: visible ASCII only, so no CR, LF or NUL can end a line. */
const fieldPattern = /^[\x21-\x7e]{1,256}$/;

export function isSafeField(value: string): boolean {
  return fieldPattern.test(value);
}

export interface SseMessage {
  readonly event: string;
  /** Omitted for messages that must not move the client's Last-Event-ID (`scope.stream.end`). */
  readonly id?: string;
  /** Serialised as one JSON line. */
  readonly data?: unknown;
  /**
   * Instead of `data`: JSON text written as it is (a log entry's canonical JSON, which the server
   * passes through unparsed). It must be one line: text with a CR or LF is refused.
   */
  readonly json?: string;
  /** A new reconnection delay for EventSource, in ms (`retry:`). */
  readonly retryMs?: number;
}

/**
 * Encodes one message. `id` and `event` must be safe fields, else a TypeError (a caller bug, never
 * repaired silently). `data` is serialised as JSON text, which escapes every CR and LF inside strings, so
 * it always fits one `data:` line; `json` text is checked for line breaks.
 */
export function encodeMessage(message: SseMessage): string {
  if (!isSafeField(message.event)) throw new TypeError(`unsafe SSE event name ${JSON.stringify(message.event)}`);
  let frame = '';
  if (message.id !== undefined) {
    if (!isSafeField(message.id)) throw new TypeError(`unsafe SSE id ${JSON.stringify(message.id)}`);
    frame += `id: ${message.id}\n`;
  }
  if (message.retryMs !== undefined) {
    if (!Number.isSafeInteger(message.retryMs) || message.retryMs < 0) throw new TypeError(`unsafe SSE retry ${String(message.retryMs)}`);
    frame += `retry: ${message.retryMs}\n`;
  }
  let data: string;
  if (message.json !== undefined) {
    if (/[\r\n]/.test(message.json)) throw new TypeError('SSE json data must be one line');
    data = message.json;
  } else {
    data = JSON.stringify(message.data) ?? 'null';
  }
  return `${frame}event: ${message.event}\ndata: ${data}\n\n`;
}

/** Encoded messages to send together: each frame's bytes, and all of them concatenated (one write). */
export interface FrameBatch {
  readonly frames: readonly Uint8Array[];
  readonly bytes: Uint8Array;
  /** `bytes` framed as one HTTP/1.1 chunk ({@link httpChunk}), when the sender built it (once, for every stream). */
  readonly chunk?: Uint8Array;
}

const crlf = Buffer.from('\r\n', 'latin1');

/**
 * `bytes` as one chunk of a chunked HTTP/1.1 body: its size in hex, CRLF, the bytes, CRLF — what
 * `res.write(bytes)` sends, built once so that a batch fanned out to many responses is framed once.
 */
export function httpChunk(bytes: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`, 'latin1'), bytes, crlf]);
}

/** What the writer reads of Node's chunked response state (set by Node on every `ServerResponse`). */
interface ChunkedResponse {
  readonly chunkedEncoding?: boolean;
  readonly outputSize?: number;
}

export interface SseWriterOptions {
  /** Messages a client may owe (written, not yet taken by the socket) before it is dropped. */
  readonly maxBufferEntries: number;
  /** Bytes a client may owe before it is dropped (a message given as text counts its UTF-16 units). */
  readonly maxBufferBytes: number;
  /** Interval of the `: keep-alive` comment. */
  readonly keepAliveMs: number;
  /** After the last message, how long a client that does not read keeps its socket. */
  readonly lingerMs: number;
  /** The reconnection delay announced to EventSource (`retry:`). */
  readonly retryMs: number;
}

export type WriterState = 'open' | 'ended' | 'closed';

/**
 * The final message of a stream that ended before the tree did: the client was dropped, fell behind
 * retention, the log failed, or the server is shutting down (`reason: "shutdown"`). Reconnect with the
 * last id to resume (after `retryMs`, to this or another node).
 */
export const streamErrorEvent = 'scope.stream.error';
/**
 * The final message of a stream whose root is terminal and whose subtree drained: nothing more will
 * come. A stream ended for any other reason (shutdown included) ends with {@link streamErrorEvent}.
 */
export const streamEndEvent = 'scope.stream.end';
/** Something the client should know about the stream itself (no id; e.g. it starts after trimmed history). */
export const streamNoticeEvent = 'scope.stream.notice';

export class SseWriter {
  readonly #res: ServerResponse;
  readonly #options: SseWriterOptions;
  #state: WriterState = 'open';
  #keepAlive: NodeJS.Timeout | undefined;
  #linger: NodeJS.Timeout | undefined;
  /** Messages written whose write callback has not run yet. */
  #pendingEntries = 0;
  /** Writes (of one message or a batch) whose callback has not run yet. */
  #pendingWrites = 0;
  /** Woken by the next write callback (progress) or by the end of the response. */
  #progress: (() => void) | undefined;
  readonly #stopListeners: (() => void)[] = [];
  #dropReason: string | undefined;
  readonly #written = (): void => {
    this.#pendingEntries -= 1;
    this.#pendingWrites -= 1;
    this.#wake();
  };

  constructor(res: ServerResponse, options: SseWriterOptions) {
    this.#res = res;
    this.#options = options;
    // The client may have gone while the route was still reading the first page.
    if (res.destroyed || res.socket === null || res.socket.destroyed) this.#state = 'closed';
    else res.once('close', () => this.#closed());
  }

  /** Sends the status line and headers (plus `extraHeaders`, e.g. those hooks set on the reply) and starts the keep-alive. */
  open(extraHeaders: Record<string, string | number | readonly string[]>): void {
    if (this.#state !== 'open') return;
    const headers: Record<string, string | number | readonly string[]> = { ...extraHeaders };
    delete headers['content-length'];
    delete headers['content-type'];
    this.#res.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    // The first bytes also flush the headers, so EventSource opens before the first event.
    this.#res.write(`retry: ${this.#options.retryMs}\n\n`);
    this.#keepAlive = setInterval(() => this.#write(': keep-alive\n\n', false), this.#options.keepAliveMs);
    this.#keepAlive.unref();
  }

  get state(): WriterState {
    return this.#state;
  }

  /** Why the client was dropped, if it was. */
  get dropReason(): string | undefined {
    return this.#dropReason;
  }

  /** Runs `listener` once when the writer stops accepting messages: ended, dropped, or the client went away. */
  onStop(listener: () => void): void {
    if (this.#state !== 'open') listener();
    else this.#stopListeners.push(listener);
  }

  /**
   * Writes a message without ever waiting. When the client already owes as much as the bounds allow, it is
   * dropped instead (a final `scope.stream.error`) and false is returned. A message always fits when
   * nothing is owed, so one large event never drops a client that keeps up.
   */
  send(message: SseMessage): boolean {
    const frame = Buffer.from(encodeMessage(message), 'utf8');
    return this.sendFrames({ frames: [frame], bytes: frame }) === 1;
  }

  /**
   * Writes encoded messages without ever waiting, in one write to the socket. Each counts against the
   * bounds exactly as if sent alone, in order: the frames up to the first one that would break a bound
   * are written, and the client is then dropped. Returns how many were written (all of them, unless
   * the client was dropped or is gone).
   */
  sendFrames(batch: FrameBatch): number {
    const { frames } = batch;
    if (this.#state !== 'open' || frames.length === 0) return 0;
    let owed = this.#pendingEntries;
    let bytes = this.#res.writableLength;
    let accepted = 0;
    let overflow: string | undefined;
    for (const frame of frames) {
      overflow = this.#overflowAt(owed, bytes, frame.length);
      if (overflow !== undefined) break;
      owed += 1;
      bytes += frame.length;
      accepted += 1;
    }
    if (accepted === frames.length) this.#writeCounted(batch.bytes, accepted, batch.chunk);
    else if (accepted > 0) this.#writeCounted(Buffer.concat(frames.slice(0, accepted)), accepted);
    if (overflow !== undefined) this.drop('slow_client', `the client fell more than ${overflow} behind`);
    return accepted;
  }

  /**
   * Writes a message at the client's pace: while the bounds would be exceeded, waits for the socket to
   * take something, for at most `stallMs` each time; a client that takes nothing for that long is dropped.
   * For replaying stored history, where waiting holds back nobody but this client.
   */
  async sendPaced(message: SseMessage, stallMs: number): Promise<boolean> {
    return this.sendFramePaced(encodeMessage(message), stallMs);
  }

  /** {@link sendPaced} for a frame already encoded. */
  async sendFramePaced(frame: string | Uint8Array, stallMs: number): Promise<boolean> {
    while (this.#state === 'open' && this.#overflow(frame) !== undefined) {
      if (!(await this.#progressWithin(stallMs)) && this.#state === 'open') {
        this.drop('slow_client', `the client took no data for ${stallMs} ms`);
        return false;
      }
    }
    return this.#write(frame, true);
  }

  /**
   * Whether the socket has not yet taken an earlier write (or holds more than its high-water mark):
   * entries handed over without I/O in between would then pile up against the client's bounds.
   */
  get backlogged(): boolean {
    return this.#state === 'open' && (this.#pendingWrites > 1 || this.#res.writableLength > this.#res.writableHighWaterMark);
  }

  /**
   * Lets the event loop run the socket's I/O when a backlog builds up ({@link backlogged}), so a burst
   * handed over without I/O in between (thousands of deltas) reaches a fast client instead of counting
   * against its bounds. Waits one turn of the loop at most, never for the client itself.
   */
  async relieve(): Promise<void> {
    if (this.backlogged) await nextTurn();
  }

  /** Sends a last message (never an id) and ends the response. */
  end(message: Omit<SseMessage, 'id'>): void {
    if (this.#state !== 'open') return;
    this.#res.write(encodeMessage({ ...message, id: undefined }));
    this.#finish();
  }

  /** Drops the client: a final `scope.stream.error` carrying the reason, then the end of the response. */
  drop(reason: string, detail: string): void {
    if (this.#state !== 'open') return;
    this.#dropReason = reason;
    this.end({
      event: streamErrorEvent,
      data: {
        reason,
        detail,
        pendingEntries: this.#pendingEntries,
        maxBufferEntries: this.#options.maxBufferEntries,
        maxBufferBytes: this.#options.maxBufferBytes,
      },
    });
  }

  /** Resolves once the response is fully handed to the socket, or the socket closed. */
  finished(): Promise<void> {
    if (this.#res.writableFinished || this.#res.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.#res.off('finish', done);
        this.#res.off('close', done);
        resolve();
      };
      this.#res.on('finish', done);
      this.#res.on('close', done);
    });
  }

  /** Which bound `frame` would break, if any. */
  #overflow(frame: string | Uint8Array): string | undefined {
    return this.#overflowAt(this.#pendingEntries, this.#res.writableLength, frame.length);
  }

  /** Which bound a frame of `size` would break with `owed` messages and `bytes` not yet taken by the socket. */
  #overflowAt(owed: number, bytes: number, size: number): string | undefined {
    if (owed === 0) return undefined;
    if (owed >= this.#options.maxBufferEntries) return `${this.#options.maxBufferEntries} messages`;
    if (bytes + size > this.#options.maxBufferBytes) return `${this.#options.maxBufferBytes} bytes`;
    return undefined;
  }

  #write(frame: string | Uint8Array, counted: boolean): boolean {
    if (this.#state !== 'open') return false;
    const overflow = this.#overflow(frame);
    if (overflow !== undefined) {
      this.drop('slow_client', `the client fell more than ${overflow} behind`);
      return false;
    }
    if (counted) this.#writeCounted(frame, 1);
    else this.#res.write(frame);
    return true;
  }

  /**
   * One socket write of `count` messages, each owed until the write's callback runs. A chunk framed in
   * advance (`framed`: `chunk` as {@link httpChunk} frames it) goes straight to the response's socket
   * when the response is chunked and owns it with nothing held back: the same bytes `res.write` would
   * send, in the same order, without its four buffered writes, cork and tick (a third of a thousand
   * streams' write cost, measured).
   */
  #writeCounted(chunk: string | Uint8Array, count: number, framed?: Uint8Array): void {
    this.#pendingEntries += count;
    this.#pendingWrites += 1;
    const done = count === 1 ? this.#written : (): void => {
      this.#pendingEntries -= count;
      this.#pendingWrites -= 1;
      this.#wake();
    };
    const socket = framed === undefined ? undefined : this.#ownSocket();
    if (socket !== undefined) socket.write(framed as Uint8Array, () => done());
    else this.#res.write(chunk, done);
  }

  /**
   * The socket, when writing to it directly is exactly `res.write`: the headers went out, the body is
   * chunked, the response is the socket's current one (a pipelined response waiting its turn has none)
   * and holds no output of its own.
   */
  #ownSocket(): NonNullable<ServerResponse['socket']> | undefined {
    const res = this.#res;
    const state = res as ServerResponse & ChunkedResponse;
    if (res.socket === null || !res.headersSent || res.writableEnded || state.chunkedEncoding !== true || state.outputSize !== 0) return undefined;
    return res.socket;
  }

  #wake(): void {
    const wake = this.#progress;
    this.#progress = undefined;
    wake?.();
  }

  /** True when a write completed within `timeoutMs`. */
  #progressWithin(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#progress = undefined;
        resolve(false);
      }, timeoutMs);
      this.#progress = () => {
        clearTimeout(timer);
        resolve(this.#state === 'open');
      };
    });
  }

  #finish(): void {
    this.#state = 'ended';
    this.#stopTimers();
    this.#res.end();
    // A client that stopped reading would otherwise hold its socket, and what we buffered for it, forever.
    if (!this.#res.writableFinished) {
      this.#linger = setTimeout(() => this.#res.destroy(), this.#options.lingerMs);
      this.#linger.unref();
      this.#res.once('finish', () => clearTimeout(this.#linger));
    }
    this.#wake();
    this.#notifyStop();
  }

  #closed(): void {
    clearTimeout(this.#linger);
    this.#stopTimers();
    const wasOpen = this.#state === 'open';
    this.#state = 'closed';
    this.#wake();
    if (wasOpen) this.#notifyStop();
  }

  #stopTimers(): void {
    if (this.#keepAlive !== undefined) clearInterval(this.#keepAlive);
    this.#keepAlive = undefined;
  }

  #notifyStop(): void {
    for (const listener of this.#stopListeners.splice(0)) listener();
  }
}
