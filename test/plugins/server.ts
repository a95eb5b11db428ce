/**
 * A real listening server for the plugin tests: the app from `buildApp` around the real EngineHost
 * (embedded mode, demo deployments), and the typed client generated from `openapi.yaml`.
 */
import assert from 'node:assert/strict';
import createClient, { type Client } from 'openapi-fetch';
import type { FastifyInstance } from 'fastify';
import type { components, paths } from '../../src/gen/api.js';
import { buildApp, type AppConfig } from '../../src/app/app.js';
import { loadConfig, type ServerConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';

export interface TestServer {
  readonly app: FastifyInstance;
  readonly host: EngineHost;
  readonly url: string;
  readonly client: Client<paths>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** Environment variables for `loadConfig` (e.g. `SCOPE_BODY_LIMIT`, `SCOPE_GRANTS`). */
  readonly env?: Readonly<Record<string, string>>;
  /** App settings on top of the server configuration. */
  readonly app?: Partial<AppConfig>;
  /** Runs on the app before it listens (e.g. to add a route that exercises the error handler). */
  readonly prepare?: (app: FastifyInstance) => void;
  readonly logger?: Parameters<typeof buildApp>[0]['logger'];
}

export async function startServer(options: TestServerOptions = {}): Promise<TestServer> {
  // A short shutdown deadline: tests leave sleeping dispatches behind, and close() would wait for them.
  const config: ServerConfig = loadConfig({ SCOPE_SHUTDOWN_MS: '300', ...options.env });
  const host = new EngineHost({ config, defaultMetrics: false });
  const app = await buildApp({ host, config: { ...config, ...options.app }, logger: options.logger ?? false });
  options.prepare?.(app);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = createClient<paths>({ baseUrl: url });
  return { app, host, url, client, close: () => app.close() };
}

/** Starts a demo process and returns its view (asserting the 201). */
export async function start(server: TestServer, deployment: string, input: unknown): Promise<{ processId: string; rootId: string }> {
  const { data, response, error } = await server.client.POST('/v1/processes', { body: { deployment, input } });
  if (response.status !== 201 || data === undefined) throw new Error(`start ${deployment} failed: ${response.status} ${JSON.stringify(error)}`);
  return data;
}

/** The terminal result, waiting up to `waitMs`. */
export async function resultOf(server: TestServer, id: string, waitMs = 10_000): Promise<components['schemas']['Result']> {
  const { data, response, error } = await server.client.GET('/v1/processes/{id}/result', {
    params: { path: { id }, query: { waitMs } },
  });
  if (response.status !== 200 || data === undefined) throw new Error(`no result for ${id}: ${response.status} ${JSON.stringify(data ?? error)}`);
  return data as components['schemas']['Result'];
}

/** Polls the process view until `predicate` holds (the API's own reads; no sleeps in the assertions). */
export async function until<T>(read: () => Promise<T>, predicate: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (predicate(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A raw request (for what the typed client refuses to send: malformed JSON, unknown fields…). */
export async function raw(
  server: TestServer,
  method: string,
  path: string,
  init: { body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any; text: string }> {
  const response = await fetch(`${server.url}${path}`, { method, headers: init.headers, body: init.body });
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** Asserts an RFC 9457 problem response with `status` and `code`, whose requestId is the response's. */
export function expectProblem(
  result: { response: Response; error?: unknown },
  status: number,
  code: string,
): { code: string; detail: string; errors?: Array<{ pointer: string; message: string; keyword: string }> } {
  const problem = result.error as { type: string; title: string; status: number; code: string; detail: string; requestId: string; instance: string };
  assert.equal(result.response.status, status, `expected ${status} ${code}, got ${result.response.status} ${JSON.stringify(problem)}`);
  assert.match(result.response.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(problem.code, code, JSON.stringify(problem));
  assert.equal(problem.status, status);
  assert.equal(problem.type, `urn:scope:problem:${code}`);
  assert.equal(typeof problem.title, 'string');
  assert.equal(typeof problem.detail, 'string');
  assert.equal(problem.requestId, result.response.headers.get('x-request-id'));
  return problem;
}

/**
 * Asserts an RFC 9457 problem on a supertest response: `status`, the problem media type, `code`, the
 * registry's `type`, and a requestId equal to the response's `x-request-id`. Returns the problem.
 */
export function problemOf(
  response: { status: number; headers: Record<string, string>; body: any; text: string },
  status: number,
  code: string,
): { code: string; detail: string; instance: string; errors?: Array<{ pointer: string; message: string; keyword: string }> } {
  assert.equal(response.status, status, `expected ${status} ${code}, got ${response.status} ${response.text?.slice(0, 500)}`);
  assert.match(response.headers['content-type'] ?? '', /^application\/problem\+json/);
  const problem = response.body as { type: string; title: string; status: number; code: string; detail: string; requestId: string; instance: string };
  assert.equal(problem.code, code, JSON.stringify(problem));
  assert.equal(problem.status, status);
  assert.equal(problem.type, `urn:scope:problem:${code}`);
  assert.equal(typeof problem.title, 'string');
  assert.equal(typeof problem.detail, 'string');
  assert.equal(problem.requestId, response.headers['x-request-id']);
  return problem;
}
