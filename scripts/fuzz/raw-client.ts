/**
 * The fuzzer's HTTP client: bytes written to a `node:net` socket exactly as given, so framing no
 * ordinary client would produce (a bare CR in a header, a lying Content-Length, hand-made chunks,
 * NUL in the request line) reaches the server. Answers are parsed by hand: interim 1xx skipped,
 * Content-Length or chunked bodies read to their end, an event stream read only to its head (it
 * stays open while its tree lives).
 */
import { connect, type Socket } from 'node:net';

/** One request as the fuzzer means to write it. */
export interface RawRequest {
  readonly method: string;
  /** The request target, written verbatim (percent-encoding is the generator's business). */
  readonly target: string;
  /** Header lines in order, written verbatim as `name: value`. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body?: string | Buffer;
  /**
   * How the body is framed: `length` (a correct Content-Length), `chunked` (split at `chunks`),
   * `short-length` (Content-Length smaller than the body: the rest is a second request) or `none`
   * (no framing header: the body bytes follow the head as they are).
   */
  readonly framing?: 'length' | 'chunked' | 'short-length' | 'none';
  /** Chunk sizes for `chunked` (cycled); default one chunk. */
  readonly chunks?: readonly number[];
}

export interface RawResponse {
  readonly status: number;
  /** Header names lowercased; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** Whether the body is only the start of an event stream the client stopped reading. */
  readonly streamed: boolean;
}

export type Exchange =
  | { readonly kind: 'answered'; readonly responses: readonly RawResponse[] }
  /** The connection closed (or was refused) before one complete response arrived. */
  | { readonly kind: 'closed'; readonly partial: string; readonly error?: string }
  | { readonly kind: 'timeout'; readonly partial: string };

/** Serialises a request; the framing headers are added here, after the caller's own. */
export function serialize(request: RawRequest): Buffer {
  const body = request.body === undefined ? undefined : Buffer.isBuffer(request.body) ? request.body : Buffer.from(request.body, 'utf8');
  const framing = request.framing ?? 'length';
  const lines = [`${request.method} ${request.target} HTTP/1.1`, ...request.headers.map(([name, value]) => `${name}: ${value}`)];
  let payload: Buffer = Buffer.alloc(0);
  if (body !== undefined) {
    if (framing === 'length') lines.push(`content-length: ${body.length}`);
    if (framing === 'short-length') lines.push(`content-length: ${Math.floor(body.length / 2)}`);
    if (framing === 'chunked') {
      lines.push('transfer-encoding: chunked');
      payload = chunked(body, request.chunks ?? [body.length]);
    } else {
      payload = body;
    }
  }
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]);
}

function chunked(body: Buffer, sizes: readonly number[]): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  for (let index = 0; offset < body.length; index += 1) {
    const size = Math.max(1, sizes[index % sizes.length] ?? body.length);
    const piece = body.subarray(offset, offset + size);
    offset += piece.length;
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`, 'latin1'), piece, Buffer.from('\r\n', 'latin1'));
  }
  parts.push(Buffer.from('0\r\n\r\n', 'latin1'));
  return Buffer.concat(parts);
}

export interface SendOptions {
  /** Complete responses to wait for (pipelined requests); default 1. */
  readonly expect?: number;
  /** Give up after this long (default 30 s: a loaded CI machine can be slow; a silent server is not). */
  readonly timeoutMs?: number;
  /** How long to keep reading an event stream after its head (default 30 ms). */
  readonly streamReadMs?: number;
  /** The request was HEAD: its answer has no body whatever its headers say. */
  readonly head?: boolean;
}

/** Writes `bytes` on a fresh connection and reads the answer(s). Never rejects. */
export function send(url: URL, bytes: Buffer, options: SendOptions = {}): Promise<Exchange> {
  const expect = options.expect ?? 1;
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    let buffer = Buffer.alloc(0);
    const responses: RawResponse[] = [];
    let settled = false;
    let streamTimer: NodeJS.Timeout | undefined;
    const finish = (outcome: Exchange): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      clearTimeout(streamTimer);
      socket.destroy();
      resolve(outcome);
    };
    const deadline = setTimeout(() => finish({ kind: 'timeout', partial: preview(buffer) }), options.timeoutMs ?? 30_000);
    const drain = (): void => {
      for (;;) {
        const parsed = parseOne(buffer, options.head === true && responses.length === 0);
        if (parsed === undefined) return;
        if (parsed === 'stream') {
          streamTimer ??= setTimeout(() => {
            const head = parseHead(buffer)!;
            responses.push({ status: head.status, headers: head.headers, body: buffer.subarray(head.length), streamed: true });
            finish({ kind: 'answered', responses });
          }, options.streamReadMs ?? 30);
          return;
        }
        buffer = buffer.subarray(parsed.consumed);
        if (parsed.response.status >= 100 && parsed.response.status < 200) continue;
        responses.push(parsed.response);
        if (responses.length >= expect) {
          finish({ kind: 'answered', responses });
          return;
        }
      }
    };
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      drain();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // A reset after the answer arrived is the server closing a connection it stopped reading.
      if (responses.length > 0) finish({ kind: 'answered', responses });
      else if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') finish({ kind: 'closed', partial: preview(buffer), error: error.code ?? error.message });
    });
    socket.on('close', () => {
      drain();
      // An event stream the server ended (its tree had finished) is an answer too.
      const head = streamTimer === undefined ? undefined : parseHead(buffer);
      if (head !== undefined) responses.push({ status: head.status, headers: head.headers, body: buffer.subarray(head.length), streamed: true });
      if (responses.length > 0) finish({ kind: 'answered', responses });
      else finish({ kind: 'closed', partial: preview(buffer) });
    });
    socket.write(bytes);
  });
}

/**
 * Opens a connection, writes `head`, then `drip` one byte at a time every `intervalMs` for `drips`
 * bytes, and keeps the socket open (never finishing the body). Resolves with whatever the server
 * answered by the time `close()` is called or the server closed.
 */
export function slowLoris(url: URL, head: Buffer, drip: Buffer, intervalMs: number): { socket: Socket; done: Promise<Exchange>; close(): void } {
  const socket = connect(Number(url.port), url.hostname);
  let buffer = Buffer.alloc(0);
  let offset = 0;
  let resolveDone!: (exchange: Exchange) => void;
  const done = new Promise<Exchange>((resolve) => (resolveDone = resolve));
  const timer = setInterval(() => {
    if (offset >= drip.length || socket.destroyed) return clearInterval(timer);
    socket.write(drip.subarray(offset, offset + 1));
    offset += 1;
  }, intervalMs);
  const settle = (): void => {
    clearInterval(timer);
    const parsed = parseOne(buffer);
    if (parsed !== undefined && parsed !== 'stream') resolveDone({ kind: 'answered', responses: [parsed.response] });
    else resolveDone({ kind: 'closed', partial: preview(buffer) });
  };
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
  });
  socket.on('error', () => undefined);
  socket.on('close', settle);
  socket.write(head);
  return {
    socket,
    done,
    close() {
      socket.destroy();
    },
  };
}

function preview(buffer: Buffer): string {
  return buffer.subarray(0, 200).toString('latin1');
}

interface Head {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Bytes of the head, blank line included. */
  readonly length: number;
}

function parseHead(buffer: Buffer): Head | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: match === null ? 0 : Number(match[1]), headers, length: end + 4 };
}

/** One complete response at the start of `buffer`, `stream` for an event stream's head, or undefined (need more). */
function parseOne(buffer: Buffer, headRequest = false): { response: RawResponse; consumed: number } | 'stream' | undefined {
  const head = parseHead(buffer);
  if (head === undefined) return undefined;
  const { status, headers } = head;
  const bodyless = headRequest || (status >= 100 && status < 200) || status === 204 || status === 304;
  if (bodyless) return { response: { status, headers, body: Buffer.alloc(0), streamed: false }, consumed: head.length };
  if ((headers['content-type'] ?? '').startsWith('text/event-stream')) return 'stream';
  const length = headers['content-length'];
  if (length !== undefined) {
    const size = Number(length);
    if (buffer.length < head.length + size) return undefined;
    return { response: { status, headers, body: buffer.subarray(head.length, head.length + size), streamed: false }, consumed: head.length + size };
  }
  if ((headers['transfer-encoding'] ?? '').toLowerCase().includes('chunked')) {
    const parts: Buffer[] = [];
    let offset = head.length;
    for (;;) {
      const lineEnd = buffer.indexOf('\r\n', offset);
      if (lineEnd < 0) return undefined;
      const size = Number.parseInt(buffer.subarray(offset, lineEnd).toString('latin1'), 16);
      if (!Number.isFinite(size)) return undefined;
      if (size === 0) {
        const trailerEnd = buffer.indexOf('\r\n', lineEnd + 2);
        if (trailerEnd < 0) return undefined;
        return { response: { status, headers, body: Buffer.concat(parts), streamed: false }, consumed: trailerEnd + 2 };
      }
      if (buffer.length < lineEnd + 2 + size + 2) return undefined;
      parts.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
      offset = lineEnd + 2 + size + 2;
    }
  }
  // Neither: the body runs to the close; a caller sees it when the socket closes.
  return undefined;
}
