/**
 * Raw HTTP/1.1 over `node:net`, for what no HTTP client will send (a bare CR inside a header value,
 * a 100,000-character request line, no Host header): the bytes go out as written, and the answer is
 * read until the server closes the connection, then parsed by hand.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';

export interface RawResponse {
  readonly statusLine: string;
  readonly status: number;
  /** Header names lowercased; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Every byte the server sent. */
  readonly bytes: Buffer;
}

/**
 * Writes `request` to the server at `url` and resolves with everything the server sent once the
 * connection is closed (a reset after the answer counts as closed: a server may reset a connection
 * whose request it did not read to the end).
 */
export function exchange(url: string, request: string | Buffer): Promise<Buffer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {
      // ECONNRESET / EPIPE: the server closed first; 'close' follows.
    });
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.write(request);
  });
}

/** Parses one HTTP/1.1 response (Content-Length framed) and asserts nothing follows it. */
export function parseResponse(bytes: Buffer): RawResponse {
  const text = bytes.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  assert.ok(end > 0, `no complete response head in ${JSON.stringify(text.slice(0, 300))}`);
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const match = /^HTTP\/1\.1 (\d{3}) [^\r\n]+$/.exec(statusLine ?? '');
  assert.ok(match, `not an HTTP/1.1 status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    assert.ok(colon > 0, `malformed header line ${JSON.stringify(line)}`);
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = headers['content-length'];
  assert.ok(length !== undefined && /^\d+$/.test(length), `no Content-Length: ${JSON.stringify(headers)}`);
  const bodyBytes = bytes.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  assert.equal(bodyBytes.length, Number(length), 'the body is exactly Content-Length bytes, nothing follows');
  return { statusLine: statusLine!, status: Number(match[1]), headers, body: bodyBytes.toString('utf8'), bytes };
}

/** Sends `request` raw and returns the parsed answer. */
export async function rawRequest(url: string, request: string | Buffer): Promise<RawResponse> {
  return parseResponse(await exchange(url, request));
}
