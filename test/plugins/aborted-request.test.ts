/**
 * A client that hangs up halfway through its request body (the slow-loris sockets of `npm run fuzz`
 * found it): the request is a client error logged at info, never an `internal_error` logged as a
 * defect of the server.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import { startServer, type TestServer } from './server.js';

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly requestId?: string;
  readonly code?: string;
  readonly req?: { readonly url?: string };
}

const lines: LogLine[] = [];
const waiters: Array<() => void> = [];
let server: TestServer;

/** Resolves with the first log line (seen so far or later) that satisfies `predicate`. */
function logged(predicate: (line: LogLine) => boolean): Promise<LogLine> {
  return new Promise((resolve) => {
    const check = (): boolean => {
      const found = lines.find(predicate);
      if (found !== undefined) resolve(found);
      return found !== undefined;
    };
    const waiter = (): void => {
      if (!check()) waiters.push(waiter);
    };
    if (!check()) waiters.push(waiter);
  });
}

before(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const text of String(chunk).split('\n').filter((part) => part !== '')) lines.push(JSON.parse(text) as LogLine);
      for (const waiter of waiters.splice(0)) waiter();
      done();
    },
  });
  server = await startServer({ logger: pino({ level: 'info' }, sink) });
});
after(async () => {
  await server.close();
});

test('a body cut off by the client closing the connection is invalid_request at info, not an internal_error', async () => {
  const { hostname, port } = new URL(server.url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  socket.write(`POST /v1/processes HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"deploym`);
  // Once the route has the request (its body still arriving), the client goes away.
  const incoming = await logged((line) => line.msg === 'incoming request' && line.req?.url === '/v1/processes');
  socket.destroy();
  const outcome = await logged((line) => line.requestId === incoming.requestId && (line.msg === 'request rejected' || line.level >= 50));
  assert.equal(outcome.level, 30, JSON.stringify(outcome));
  assert.equal(outcome.code, 'invalid_request');
  assert.ok(!lines.some((line) => line.level >= 50), 'nothing is logged as a server error');
});
