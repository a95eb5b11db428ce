/**
 * What never reaches a route: Node's HTTP parser refusing a request (or timing it out) emits
 * `clientError` on the socket. Answered here as complete problem+json responses, on a connection that
 * is then half-closed (never reset under the answer), with nothing that still arrives on it served.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { problemMediaType, problemRegistry, problemTypeUri, type ProblemBody, type ProblemCode } from './problem-details.js';

/** Text safe to quote in a detail: printable ASCII only, at most `max` characters. */
function quotable(text: string, max = 120): string {
  const printable = text.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > max ? `${printable.slice(0, max)}…` : printable;
}

/** What Node reports with a `clientError`: its code, and llhttp's reason for parse errors. */
export interface ClientError extends Error {
  readonly code?: string;
  readonly reason?: string;
}

/** A `clientError` as a registry problem: timeouts, header overflow, and everything llhttp refuses. */
export function classifyClientError(error: ClientError): { code: ProblemCode; detail: string } {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return { code: 'request_timeout', detail: 'the request did not arrive in time' };
  }
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return { code: 'request_header_fields_too_large', detail: 'the request line and headers exceed the size this server reads' };
  }
  const reason = quotable(error.reason ?? error.message ?? 'unparseable');
  return { code: 'invalid_request', detail: `not a valid HTTP/1.1 request (${quotable(error.code ?? 'HPE_UNKNOWN', 40)}: ${reason})` };
}

/** A complete HTTP/1.1 response carrying `problem`, that announces the connection closes. */
export function rawProblemResponse(problem: ProblemBody): string {
  const body = JSON.stringify(problem);
  return [
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? 'Error'}`,
    `content-type: ${problemMediaType}; charset=utf-8`,
    `content-length: ${Buffer.byteLength(body)}`,
    `x-request-id: ${problem.requestId}`,
    `date: ${new Date().toUTCString()}`,
    'connection: close',
    '',
    body,
  ].join('\r\n');
}

export interface ClientErrorHandlerOptions {
  /** Called with the status of each problem written (HTTP metrics). */
  readonly answered?: (status: number) => void;
}

/**
 * Sockets answered by {@link clientErrorHandler}, each with the one request still served on it (the
 * complete request whose response the early answer waits for, if any): nothing else is.
 */
const answeredEarly = new WeakMap<Socket, IncomingMessage | undefined>();

/** How long a socket answered early is still read before it is destroyed. */
const lingerMs = 2_000;

/**
 * Half-closed, not destroyed: a socket closed with unread input makes the kernel answer the client's
 * next bytes with a reset, and a reset can reach a busy client before it has read the answer (it then
 * sees a bare close; RFC 9112 §9.6). What the client still sends is read and dropped until it closes
 * its side, or until `lingerMs`.
 */
function linger(socket: Socket): void {
  const timer = setTimeout(() => socket.destroy(), lingerMs);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/**
 * A request whose connection was already answered (408 while its body was arriving, or whose head
 * completed only after the answer) is never served: the client was told it failed. Run before any
 * handler (the app's first `preHandler`); it ends the lifecycle without a second answer.
 */
export function refuseAnsweredEarly(request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
  const socket = request.raw.socket;
  if (!answeredEarly.has(socket) || answeredEarly.get(socket) === request.raw) return undefined;
  reply.hijack();
  return reply;
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses (a bare CR or LF in a header, a
 * request line or header block over the limit, a bad method, contradictory framing) or times out
 * never reaches a route. It is answered with a complete problem+json HTTP/1.1 response and the
 * connection is closed, as Node's default does with a bare status line. A response to an earlier
 * request on the connection (keep-alive) is finished first, so the two never interleave.
 */
export function clientErrorHandler(options: ClientErrorHandlerOptions = {}): (this: FastifyInstance, error: ClientError, socket: Socket) => void {
  return function onClientError(this: FastifyInstance, error, socket) {
    // A reset connection has nobody to answer; llhttp may report the same error again on later data.
    if (error.code === 'ECONNRESET' || socket.destroyed || answeredEarly.has(socket)) return;
    const { code, detail } = classifyClientError(error);
    const { status, title } = problemRegistry[code];
    const requestId = randomUUID();
    this.log.info({ requestId, code, clientError: error.code }, 'request rejected before parsing completed');
    const answer = (): void => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      const problem: ProblemBody = { type: problemTypeUri(code), title, status, detail, code, requestId, instance: `urn:scope:request:${requestId}` };
      options.answered?.(status);
      socket.end(rawProblemResponse(problem));
      linger(socket);
    };
    // Node keeps the response in flight on the socket (an internal field, the one its own default
    // handler consults for the same reason). If its request is the one whose body broke, the error is
    // that request's answer (unless the route already started answering: then only closing is left).
    // If its request was complete, the error is in the next one: the first answer is finished first.
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    answeredEarly.set(socket, inFlight?.req.complete === true ? inFlight.req : undefined);
    if (inFlight === undefined || inFlight === null || inFlight.writableFinished) {
      answer();
      return;
    }
    if (!inFlight.req.complete) {
      if (inFlight.headersSent) socket.destroy();
      else answer();
      return;
    }
    let settled = false;
    inFlight.once('finish', () => {
      if (settled) return;
      settled = true;
      answer();
    });
    inFlight.once('close', () => {
      if (settled) return;
      settled = true;
      if (inFlight.writableFinished) answer();
      else socket.destroy();
    });
  };
}
