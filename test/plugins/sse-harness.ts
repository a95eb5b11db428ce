import { connect as connectTcp, createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import type { FastifyInstance } from 'fastify';
import type { StreamPluginOptions } from '../../plugins/stream/index.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import type { DeltaEmitter, Dispatcher } from '../../src/kernel/definition.js';
import type { EffectRequest } from '../../src/kernel/effect.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import { Settlement } from '../../src/kernel/settlement.js';
import { buildApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';
import { singleEffectDefinition } from '../../strategies/demo/single-effect.js';

/**
 * A real Scope server for the stream and events tests: the real EngineHost (demos on) behind
 * `buildApp`, listening on a free loopback port; plus an SSE reader over fetch + eventsource-parser,
 * a raw-socket client that can stop reading, and a TCP proxy that can cut connections.
 */

export interface TestServer {
  readonly base: string;
  readonly port: number;
  readonly app: FastifyInstance;
  readonly host: EngineHost;
  /** `POST /v1/processes`; returns the process id. */
  start(deployment: string, input: unknown): Promise<string>;
  /** `GET /v1/processes/{id}/result?waitMs=60000`, the JSON body. */
  result(processId: string): Promise<{ status: string; output: unknown }>;
  json(path: string, init?: RequestInit): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  readonly stream?: StreamPluginOptions;
  /** Environment for `loadConfig` (e.g. `SCOPE_REDIS_URL`); demos stay on. */
  readonly env?: Record<string, string>;
  readonly deployments?: readonly Deployment[];
  /** Called with the app before it listens (extra test routes). */
  readonly beforeListen?: (app: FastifyInstance) => void;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const config = loadConfig({ SCOPE_SHUTDOWN_MS: '2000', ...options.env });
  const host = new EngineHost({ config, defaultMetrics: false, ...(options.deployments === undefined ? {} : { deployments: options.deployments }) });
  const app = await buildApp({ host, config: { stream: { keepAliveMs: 15_000, ...options.stream } } });
  options.beforeListen?.(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  const json = async (path: string, init?: RequestInit): Promise<{ status: number; body: any }> => {
    const response = await fetch(`${base}${path}`, init);
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
  };
  let closed: Promise<void> | undefined;
  return {
    base,
    port,
    app,
    host,
    json,
    async start(deployment, input) {
      const { status, body } = await json('/v1/processes', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ deployment, input }),
      });
      if (status !== 201) throw new Error(`start ${deployment}: ${status} ${JSON.stringify(body)}`);
      return body.processId as string;
    },
    async result(processId) {
      const { status, body } = await json(`/v1/processes/${encodeURIComponent(processId)}/result?waitMs=60000`);
      if (status !== 200) throw new Error(`result: ${status} ${JSON.stringify(body)}`);
      return body;
    },
    close() {
      closed ??= app.close().then(() => undefined);
      return closed;
    },
  };
}

/**
 * Polls `condition` (every 10 ms, up to `timeoutMs`) for a state the server reaches asynchronously and
 * announces nowhere else (a metric, a closed socket).
 */
export async function eventually(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The value of one sample of the host's metrics (NaN when absent). */
export async function metricValue(server: TestServer, sample: string): Promise<number> {
  const { body } = await server.host.metrics();
  const line = body.split('\n').find((candidate) => candidate.startsWith(`${sample} `));
  return line === undefined ? Number.NaN : Number(line.slice(sample.length + 1));
}

export function streamPath(rootId: string, query = ''): string {
  return `/v1/trees/${encodeURIComponent(rootId)}/stream${query}`;
}

// ---------------------------------------------------------------------------------------------
// Reading a stream

export interface SseEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: any;
}

export interface SseSession {
  readonly status: number;
  readonly headers: Headers;
  readonly events: SseEvent[];
  readonly comments: string[];
  readonly retries: number[];
  /** Resolves when the server ends the body (or the session is closed). */
  readonly done: Promise<void>;
  /** Resolves with the first event (from the start) that satisfies `predicate`. */
  waitFor(predicate: (event: SseEvent) => boolean, what?: string): Promise<SseEvent>;
  /** Resolves once `count` comments arrived. */
  waitForComments(count: number): Promise<void>;
  close(): void;
}

/** Opens `url` with fetch and parses the body with eventsource-parser (JSON `data`). */
export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseSession> {
  const abort = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const retries: number[] = [];
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const waiter of [...waiters]) waiter();
  };
  let ended = false;
  const parser = createParser({
    onEvent(message) {
      events.push({ id: message.id, event: message.event ?? 'message', data: JSON.parse(message.data) });
      wake();
    },
    onComment(comment) {
      comments.push(comment);
      wake();
    },
    onRetry(ms) {
      retries.push(ms);
    },
  });
  const done = (async () => {
    if (response.body === null) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch (error) {
      if (!abort.signal.aborted) throw error;
    } finally {
      ended = true;
      wake();
    }
  })();
  done.catch(() => undefined);
  const until = (satisfied: () => boolean, what: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (satisfied()) {
          waiters.delete(check);
          resolve();
        } else if (ended) {
          waiters.delete(check);
          reject(new Error(`the stream ended before ${what}; events: ${events.map((event) => event.event).join(' ')}`));
        }
      };
      waiters.add(check);
      check();
    });
  return {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    retries,
    done,
    async waitFor(predicate, what = 'the expected event') {
      await until(() => events.some(predicate), what);
      return events.find(predicate) as SseEvent;
    },
    waitForComments(count) {
      return until(() => comments.length >= count, `${count} comments`);
    },
    close() {
      abort.abort();
    },
  };
}

/** Reads a stream to its end. */
export async function readSse(url: string, headers: Record<string, string> = {}): Promise<SseSession> {
  const session = await openSse(url, headers);
  await session.done;
  return session;
}

/** Parses a complete SSE body (text) into events. */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = createParser({
    onEvent(message) {
      events.push({ id: message.id, event: message.event ?? 'message', data: JSON.parse(message.data) });
    },
  });
  parser.feed(text);
  return events;
}

/** Numeric order of positions `<n>` / `<n>-<m>`. */
export function comparePositions(a: string, b: string): number {
  const [aMajor, aMinor = '0'] = a.split('-');
  const [bMajor, bMinor = '0'] = b.split('-');
  const major = BigInt(aMajor as string) - BigInt(bMajor as string);
  if (major !== 0n) return major < 0n ? -1 : 1;
  const minor = BigInt(aMinor) - BigInt(bMinor);
  return minor === 0n ? 0 : minor < 0n ? -1 : 1;
}

// ---------------------------------------------------------------------------------------------
// Raw sockets

/**
 * A raw HTTP/1.0 GET (close-delimited body, no chunked framing) whose reading the test controls:
 * `pause()` stops taking data from the kernel, so the server's writes pile up.
 */
export interface RawClient {
  readonly socket: Socket;
  /** Everything received so far. */
  text(): string;
  /** Resolves when the server closes the connection; the full response text. */
  readonly closed: Promise<string>;
  /** Resolves once the received text satisfies `predicate`. */
  until(predicate: (text: string) => boolean): Promise<string>;
}

export async function rawGet(port: number, path: string, headerLines: readonly string[] = []): Promise<RawClient> {
  const socket = connectTcp(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let received = '';
  const waiters = new Set<() => void>();
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    received += chunk;
    for (const waiter of [...waiters]) waiter();
  });
  const closed = new Promise<string>((resolve) => {
    socket.once('close', () => {
      for (const waiter of [...waiters]) waiter();
      resolve(received);
    });
  });
  socket.on('error', () => undefined);
  socket.write(`GET ${path} HTTP/1.0\r\nHost: 127.0.0.1\r\n${headerLines.map((line) => `${line}\r\n`).join('')}\r\n`);
  return {
    socket,
    text: () => received,
    closed,
    until(predicate) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (predicate(received)) {
            waiters.delete(check);
            resolve(received);
          } else if (socket.destroyed) {
            waiters.delete(check);
            reject(new Error(`the connection closed first; received: ${received.slice(0, 500)}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/** The status code and body of a raw HTTP/1.x response text. */
export function splitResponse(text: string): { status: number; head: string; body: string } {
  const end = text.indexOf('\r\n\r\n');
  const head = end < 0 ? text : text.slice(0, end);
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
  return { status, head, body: end < 0 ? '' : text.slice(end + 4) };
}

/** A TCP proxy in front of the server whose connections the test can cut (to force a reconnect). */
export interface CuttingProxy {
  readonly port: number;
  /** The request heads seen, one per connection (its first), in order. */
  readonly requests: string[];
  /** Every request head seen, keep-alive reuse included (a browser may send a reconnect on a connection it opened for another request). */
  readonly heads: string[];
  /** Destroys every open connection (both sides). */
  cut(): void;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<CuttingProxy> {
  const pairs = new Set<[Socket, Socket]>();
  const requests: string[] = [];
  const heads: string[] = [];
  const server: TcpServer = createTcpServer((client) => {
    const upstream = connectTcp(targetPort, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    let head = '';
    const index = requests.length;
    requests.push('');
    // What the client sent that is not yet read as a head or skipped as a body (Content-Length only:
    // the requests these tests make have no chunked bodies).
    let pending = '';
    let bodyLeft = 0;
    client.on('data', (chunk: Buffer) => {
      if (!head.includes('\r\n\r\n')) {
        head += chunk.toString('latin1');
        requests[index] = head.split('\r\n\r\n')[0] as string;
      }
      pending += chunk.toString('latin1');
      for (;;) {
        if (bodyLeft > 0) {
          const skipped = Math.min(bodyLeft, pending.length);
          pending = pending.slice(skipped);
          bodyLeft -= skipped;
          if (bodyLeft > 0) break;
        }
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) break;
        const seen = pending.slice(0, end);
        heads.push(seen);
        pending = pending.slice(end + 4);
        bodyLeft = Number(/\r\ncontent-length: *(\d+)/i.exec(seen)?.[1] ?? 0);
      }
    });
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cut = (): void => {
    for (const [client, upstream] of [...pairs]) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    heads,
    cut,
    close() {
      cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// A deployment that floods the stream

/** A gate the test opens: the flood's dispatcher waits on it before emitting. */
export interface Gate {
  readonly opened: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

export const floodName = 'test.flood';

/**
 * `test.flood` `{count, size}`: one dispatcher Effect that, once `release` opens, emits `count` deltas of
 * about `size` bytes each (yielding between them, so the Engine's delta queue never overflows), then
 * settles `{emitted}`; the process completes with that output. Built on the demos' single-effect shape.
 * With `pace`, every eighth delta waits for `pace(emitted)` instead of one turn of the loop: a test that
 * needs one client to keep up whatever the machine's load paces the flood by that client's reading.
 */
export function floodDeployment(release: Promise<void>, pace?: (emitted: number) => Promise<unknown>): Deployment {
  const inputSchema = Schema.of({
    type: 'object',
    properties: { count: { type: 'integer', minimum: 1, maximum: 10_000 }, size: { type: 'integer', minimum: 1, maximum: 1_000_000 } },
    required: ['count', 'size'],
    additionalProperties: false,
  });
  const outputSchema = Schema.of({
    type: 'object',
    properties: { emitted: { type: 'integer' } },
    required: ['emitted'],
    additionalProperties: false,
  });
  const definition = singleEffectDefinition<{ count: number; size: number }>({
    descriptor: Descriptor.create({ name: floodName, description: 'Floods the stream with large deltas (tests).', inputSchema, outputSchema }),
    stateKind: floodName,
    effectPayload: (input) => input,
    finish(_input, settlement) {
      const emitted = (settlement.payload.decode<{ emitted?: number }>() ?? {}).emitted ?? 0;
      return { output: { emitted } };
    },
  });
  const dispatcher: Dispatcher = {
    async dispatch(request: EffectRequest, emit: DeltaEmitter | undefined): Promise<Settlement> {
      const { count, size } = request.effect.payload.decode<{ count: number; size: number }>();
      await release;
      const pad = 'x'.repeat(size);
      for (let index = 0; index < count; index += 1) {
        emit?.(Payload.encode({ index, pad }));
        if (index % 8 === 7) await (pace === undefined ? nextTurn() : pace(index + 1));
      }
      return Settlement.of('succeeded', Payload.encode({ emitted: count }));
    },
    replayPolicy: () => 'same_identity',
  };
  return Deployment.create({
    definition,
    dispatcher,
    implementationDigest: Digest.of('scope:test.flood:implementation:v1'),
    configurationDigest: Digest.of('scope:test.flood:configuration:v1'),
  });
}
