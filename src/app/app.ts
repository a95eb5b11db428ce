// Over 500 lines: the one composition root, registering every guard and plugin in the order requests meet them; each part lives in its own file.
/**
 * `buildApp`: the Fastify application around one Host. Strict validation (unknown fields rejected,
 * no type coercion; stack.md §1), RFC 9457 problems for every error, request ids echoed in
 * `x-request-id`, the OpenAPI document generated from the route schemas (`/openapi.json`, `/docs`),
 * and one plugin per resource. Plugins reach the Host only through `app.host`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import fastifySwagger from '@fastify/swagger';
import fastifyCors from '@fastify/cors';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { Host, TreeControlForward } from '../server/host.js';
import { HttpMetrics } from './http-metrics.js';
import { helmetHeaders } from './security-headers.js';
import { forwarder, rememberRawBody, treeControlForwarder } from './forwarding.js';
import { clientErrorHandler, refuseAnsweredEarly } from '../../plugins/client-errors.js';
import problemDetails, {
  documentProblems,
  frameworkErrorHandler,
  withAuthProblems,
  ProblemError,
  problemComponents,
  serverProblemResponses,
} from '../../plugins/problem-details.js';
import { convertQueryText, prototypePollutionPointers } from '../../plugins/shared.js';
import deployments, { deploymentComponents } from '../../plugins/deployments/index.js';
import processes, { processComponents } from '../../plugins/processes/index.js';
import signals, { signalComponents } from '../../plugins/signals/index.js';
import control, { bodyOptionalOperations, controlComponents } from '../../plugins/control/index.js';
import effects, { effectComponents } from '../../plugins/effects/index.js';
import trees, { treeBodyOptionalOperations, treeComponents } from '../../plugins/trees/index.js';
import waits, { waitComponents } from '../../plugins/waits/index.js';
import gates, { gateComponents } from '../../plugins/gates/index.js';
import nodes, { nodeComponents } from '../../plugins/nodes/index.js';
import health, { healthComponents } from '../../plugins/health/index.js';
import eventsPlugin, { eventsComponents } from '../../plugins/events/index.js';
import streamPlugin, { streamComponents, type StreamPluginOptions } from '../../plugins/stream/index.js';
import consolePlugin from '../../plugins/console/index.js';
import { defaultBodyLimit, maxBodyLimit, type AuthConfig, type PressureConfig, type RateLimitConfig, type SseConfig } from '../server/config.js';
import type { RedisClient } from '../store/redis/connection.js';
import { RedisStreamSlots } from '../store/redis/stream-slots.js';
import { MemoryStreamSlots } from '../store/stream-slots.js';
import { installLoadShedding } from './guards/load-shedding.js';
import { installRateLimit } from './guards/rate-limit.js';
import { installAuthentication } from './auth/authentication.js';
import { installTenancyGuard } from './auth/tenancy-guard.js';
import { apiKeyPrefix, ApiKeyStore } from './auth/key-store.js';
import { JwtVerifier } from './auth/jwt-verifier.js';
import { nodeTokenPrefix, type NodeTokens } from './auth/node-tokens.js';
import { operationScopes, scopeDescriptions, securityOf } from './auth/scopes.js';
import { sharedResponseSerializers } from './response-serializers.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The Host facade: the only way plugins reach engines, stores and event logs. */
    host: Host;
    /** Bulk control with several nodes: sends one tree's control, on behalf of `request`, to the node that owns it (forwarding.ts). */
    forwardTreeControl: (request: FastifyRequest, agency: 'user' | 'machine') => TreeControlForward;
  }
}

export { defaultBodyLimit, maxBodyLimit };

/** What the app reads from the server configuration; a `ServerConfig` (config.ts) fits as is. */
export interface AppConfig {
  /** Largest accepted request body in bytes (default 1 MiB, at most `maxBodyLimit`); over it → 413. */
  readonly bodyLimit?: number;
  /** The deadline handed to `host.close` when the app closes (default: the Host's own). */
  readonly shutdownMs?: number;
  /**
   * Whether `app.close()` also closes the Host (default true). The Host closes in `preClose`, before
   * connections are dropped, so streams still end with their final event.
   */
  readonly closeHost?: boolean;
  /** SSE keep-alive period and per-client buffer (`SCOPE_SSE_KEEPALIVE_MS`, `SCOPE_SSE_BUFFER`). */
  readonly sse?: Partial<SseConfig>;
  /** Finer stream settings (tests); `sse` wins where both are set. */
  readonly stream?: StreamPluginOptions;
  /** Authentication (`SCOPE_AUTH`): off by default; `keys` checks bearer API keys and their scopes. */
  readonly auth?: AuthConfig;
  /** Origins a browser may call the API from (`SCOPE_CORS_ORIGINS`); none by default (same origin only). */
  readonly corsOrigins?: readonly string[];
  /** Requests per window per caller (`SCOPE_RATE_LIMIT`); absent: none. */
  readonly rateLimit?: RateLimitConfig;
  /** Receiving one request (headers and body) must end within this (`SCOPE_REQUEST_TIMEOUT_MS`); 0 or absent: no bound. */
  readonly requestTimeoutMs?: number;
  /** Load shedding bounds (`SCOPE_MAX_EVENT_LOOP_DELAY_MS`, …), and how often they are sampled (default 1 s); absent: none. */
  readonly pressure?: PressureConfig & { readonly sampleIntervalMs?: number };
  /** Redis key prefix for the guards' shared counters (`SCOPE_KEY_PREFIX`). */
  readonly keyPrefix?: string;
}

export interface BuildAppOptions {
  readonly host: Host;
  readonly config?: AppConfig;
  /** A pino logger instance, Fastify logger options, or false (the default) for no logging. */
  readonly logger?: FastifyBaseLogger | FastifyServerOptions['logger'];
  /**
   * A Redis connection for what every node must count together (rate limits, streams per key); absent:
   * this node counts alone. The caller owns it (the app does not close it).
   */
  readonly redis?: RedisClient;
  /** With authentication on: accept other nodes' tokens (forwarded work of their own, e.g. cross-tree messages). */
  readonly nodeTokens?: NodeTokens;
}

/**
 * A resource plugin, its options, and the named schemas (`$id`) it references. These components
 * are added at the root so every plugin can `$ref` them and all reach `components.schemas`
 * (a plugin may also add schemas only it uses inside its own context).
 */
export interface ResourcePlugin {
  // Each plugin declares its own options type; the list holds them side by side.
  readonly plugin: FastifyPluginAsync<never>;
  readonly options?: object;
  readonly components: readonly TSchema[];
}

/**
 * Every resource plugin, in registration order. A new resource plugin is appended here: nothing
 * else discovers plugins, and the contract test then insists its routes are in `openapi.yaml`.
 */
export function resourcePlugins(config: AppConfig = {}): readonly ResourcePlugin[] {
  const streamOptions: StreamPluginOptions = {
    ...config.stream,
    ...(config.sse?.keepAliveMs === undefined ? {} : { keepAliveMs: config.sse.keepAliveMs }),
    ...(config.sse?.bufferEntries === undefined ? {} : { bufferEntries: config.sse.bufferEntries }),
    ...(config.sse?.maxStreams === undefined ? {} : { maxStreams: config.sse.maxStreams }),
  };
  return [
    { plugin: deployments, components: deploymentComponents },
    { plugin: processes, components: processComponents },
    { plugin: signals, components: signalComponents },
    { plugin: control, components: controlComponents },
    { plugin: effects, components: effectComponents },
    { plugin: trees, components: treeComponents },
    { plugin: waits, components: waitComponents },
    { plugin: gates, components: gateComponents },
    { plugin: nodes, components: nodeComponents },
    { plugin: eventsPlugin, components: eventsComponents },
    { plugin: streamPlugin, options: streamOptions, components: streamComponents },
    { plugin: health, components: healthComponents },
  ] as ResourcePlugin[];
}

/** The OpenAPI tags, one per resource (the order in which docs list them). */
export const openapiTags = [
  { name: 'deployments', description: 'The deployment catalog.' },
  { name: 'processes', description: 'Start, list and inspect processes; await their results.' },
  { name: 'signals', description: 'Deliver ordered, atomic signal batches.' },
  { name: 'control', description: 'Pause, resume, cancel and kill.' },
  { name: 'effects', description: "A process's effects; replay and resolution of Unknown outcomes." },
  { name: 'trees', description: 'Process trees: inspection, snapshots, capture, restore and release.' },
  { name: 'waits', description: 'The inbox of unanswered waits.' },
  { name: 'gates', description: 'Gates: waits as people answer them, exactly once, with provenance.' },
  { name: 'nodes', description: 'The nodes on one Redis: leases, and eviction of a sick node.' },
  { name: 'events', description: "A tree's committed events and deltas as pages." },
  { name: 'stream', description: "A tree's events and deltas as a resumable server-sent event stream." },
  { name: 'health', description: 'Liveness, readiness and metrics.' },
  { name: 'docs', description: 'This document.' },
];

/** Methods that change nothing: still served while the server drains. */
const readOnlyMethods = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Retry-After of a mutation refused while draining: long enough for a load balancer to notice the node left. */
const drainRetryAfterSeconds = 2;

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

/** Honours a caller's `x-request-id` when it is short plain text; otherwise mints a UUID. */
function requestId(request: IncomingMessage): string {
  const offered = request.headers['x-request-id'];
  return typeof offered === 'string' && requestIdPattern.test(offered) ? offered : randomUUID();
}

function loggerOptions(logger: BuildAppOptions['logger']): Pick<FastifyServerOptions, 'logger' | 'loggerInstance'> {
  if (logger !== null && typeof logger === 'object' && typeof (logger as FastifyBaseLogger).child === 'function') {
    return { loggerInstance: logger as FastifyBaseLogger };
  }
  return { logger: (logger as FastifyServerOptions['logger']) ?? false };
}

const registeredRoutes = new WeakMap<FastifyInstance, Array<{ method: string; url: string; hidden: boolean }>>();

/** The routes an app built by {@link buildApp} registered (for the contract test). */
export function routesOf(app: FastifyInstance): ReadonlyArray<{ method: string; url: string; hidden: boolean }> {
  return registeredRoutes.get(app) ?? [];
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, { operationId?: string; requestBody?: { required?: boolean } }>>;
}

/** Fastify documents every body as required; control intents also accept an absent body. */
function markOptionalBodies(document: OpenApiDocument): void {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const id = operation.operationId ?? '';
      if (operation.requestBody !== undefined && (bodyOptionalOperations.has(id) || treeBodyOptionalOperations.has(id))) {
        operation.requestBody.required = false;
      }
    }
  }
}

/**
 * A JSON request body. Malformed or empty JSON is `invalid_request` (as with Fastify's parser); so is
 * a member that would pollute prototypes (`__proto__`, `constructor.prototype`), which Fastify's
 * parser also refuses but as "not valid JSON": here the problem names each such member.
 */
export function parseJsonBody(text: string): unknown {
  // A leading byte order mark is not part of the document (secure-json-parse drops it too).
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (json.length === 0) throw new ProblemError('invalid_request', "Body cannot be empty when content-type is set to 'application/json'");
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new ProblemError('invalid_request', "Body is not valid JSON but content-type is set to 'application/json'");
  }
  const polluting = prototypePollutionPointers(value, '/body');
  if (polluting.length > 0) {
    throw new ProblemError(
      'invalid_request',
      `${polluting.join(', ')}: refused as ${polluting.length === 1 ? 'a prototype-pollution key' : 'prototype-pollution keys'}`,
      polluting.map((pointer) => ({ pointer, message: 'is refused as a prototype-pollution key', keyword: 'prototypePollution' })),
    );
  }
  return value;
}

/**
 * Requests HTTP/1.1 rules out, which Node would otherwise answer itself without a body: no Host
 * header (RFC 9112 §3.2), an expectation this server cannot meet (RFC 9110 §10.1.1).
 */
async function refuseUnservable(request: FastifyRequest): Promise<void> {
  if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
    throw new ProblemError('invalid_request', 'an HTTP/1.1 request needs a Host header');
  }
  const expect = request.headers.expect;
  if (expect !== undefined && expect.trim().toLowerCase() !== '100-continue') {
    const quoted = expect.replace(/[^\x20-\x7e]/g, '?').slice(0, 64);
    throw new ProblemError('expectation_failed', `the expectation "${quoted}" cannot be met (only 100-continue is)`);
  }
}

export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const bodyLimit = options.config?.bodyLimit ?? defaultBodyLimit;
  if (!Number.isSafeInteger(bodyLimit) || bodyLimit < 1 || bodyLimit > maxBodyLimit) {
    throw new RangeError(`bodyLimit must be an integer in 1..${maxBodyLimit}, got ${bodyLimit}`);
  }

  // A Host without a registry (the spec-generation stand-in of scripts/openapi.ts) gets no HTTP metrics.
  const registry = (options.host.telemetry as Partial<Host['telemetry']> | undefined)?.registry;
  const httpMetrics = registry === undefined ? undefined : new HttpMetrics(registry);
  const requestTimeoutMs = options.config?.requestTimeoutMs ?? 0;

  const app = Fastify({
    ...loggerOptions(options.logger),
    bodyLimit,
    forceCloseConnections: true,
    genReqId: requestId,
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    // Identities are up to 256 characters, URL-encoded in paths: longer ones must reach validation
    // (400 invalid_request) instead of missing the route.
    routerOptions: { maxParamLength: 2048 },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: true, keywords: ['example'] } },
    // Each distinct response schema is compiled once (fast-json-stringify, as by default).
    schemaController: { compilersFactory: { buildSerializer: sharedResponseSerializers() } },
    // What Node's parser refuses never reaches a route: answered as a problem, not Fastify's JSON.
    clientErrorHandler: clientErrorHandler({ answered: (status) => httpMetrics?.unparsed(status) }),
    // Neither are paths the router cannot decode, nor parameters over maxParamLength.
    frameworkErrors: frameworkErrorHandler({
      bodyLimit,
      answered: (request, reply, seconds) => httpMetrics?.observe(request, reply, seconds),
    }),
    // While closing, Fastify would answer with its own JSON 503: the onRequest hook answers the
    // problem instead (Fastify still sets Connection: close).
    return503OnClosing: false,
    // Node would answer a missing Host with a bodiless 400 before Fastify sees the request;
    // `refuseUnservable` answers it as a problem instead.
    // A request must arrive within requestTimeout (a slow-loris body is answered 408). Node reads the
    // bound when the server is created (setting it later, as Fastify's own option does, is not enforced
    // on Node 20) and checks at connectionsCheckingInterval, so both are server options here.
    requestTimeout: requestTimeoutMs,
    http: {
      requireHostHeader: false,
      ...(requestTimeoutMs > 0
        ? {
            requestTimeout: requestTimeoutMs,
            headersTimeout: Math.min(60_000, requestTimeoutMs),
            connectionsCheckingInterval: Math.max(10, Math.min(30_000, Math.floor(requestTimeoutMs / 4))),
          }
        : {}),
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Node answers an `Expect` other than 100-continue with a bodiless 417 unless someone listens for
  // it: the request goes through Fastify instead, and `refuseUnservable` answers the problem.
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    app.server.emit('request', request, response);
  });

  const routes: Array<{ method: string; url: string; hidden: boolean }> = [];
  registeredRoutes.set(app, routes);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const hidden = (route.schema as { hide?: boolean } | undefined)?.hide === true;
    // Every operation says who may call it (src/app/auth/scopes.ts): a route without an entry is refused here.
    const operationId = (route.schema as { operationId?: string } | undefined)?.operationId;
    if (operationId !== undefined && operationScopes[operationId] === undefined) {
      throw new Error(`route ${route.method} ${route.url} (${operationId}) has no scope in src/app/auth/scopes.ts`);
    }
    for (const method of methods) routes.push({ method: String(method), url: route.url, hidden });
  });

  // Every body is JSON: a text/plain body is 415, not a string that fails the schema.
  app.removeContentTypeParser('text/plain');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    try {
      const parsed = parseJsonBody(body as string);
      rememberRawBody(request, body as string);
      done(null, parsed);
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.decorate('host', options.host);
  app.decorate('forwardTreeControl', (request: FastifyRequest, agency: 'user' | 'machine') =>
    treeControlForwarder(request, { nodeId: () => options.host.nodeId, registry: options.host.telemetry.registry, agency }),
  );
  // First of every hook list: a request on a connection already answered early never reaches a handler.
  app.addHook('onRequest', async (request, reply) => refuseAnsweredEarly(request, reply));
  app.addHook('preHandler', async (request, reply) => refuseAnsweredEarly(request, reply));
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  let closing = false;
  app.addHook('onRequest', async (request, reply) => {
    if (closing) throw new ProblemError('shutting_down', 'the server is shutting down');
    // Draining (the shutdown's first phase on): reads go on, new mutations go elsewhere (README "Stopping a server").
    if (options.host.draining === true && !readOnlyMethods.has(request.method)) {
      reply.header('retry-after', String(drainRetryAfterSeconds));
      const refusal = new ProblemError('shutting_down', `the server is shutting down and takes no new mutations; retry in ${drainRetryAfterSeconds} s (another node, or this one once restarted); reads still work`);
      throw Object.assign(refusal, { detailIsPublic: true });
    }
    await refuseUnservable(request);
  });
  if (httpMetrics !== undefined) {
    const metrics = httpMetrics;
    app.addHook('onResponse', async (request, reply) => {
      metrics.observe(request, reply, reply.elapsedTime / 1000);
    });
  }
  app.addHook('preValidation', convertQueryText);
  // First of the preClose hooks: from here on, requests (on kept-alive connections, or new ones
  // until the listener closes) are refused rather than served by a Host that is closing.
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  if (options.config?.closeHost !== false) {
    const deadline = options.config?.shutdownMs;
    app.addHook('preClose', async () => {
      await options.host.close(deadline);
    });
  }

  await app.register(problemDetails, { bodyLimit, intercept: forwarder({ nodeId: () => options.host.nodeId, registry: options.host.telemetry.registry }) });
  // Security headers on every response. The strict policy is for the API's own pages (the JSON the API
  // sends executes nothing); /docs sets Swagger UI's own.
  const securityHeaders = helmetHeaders({
    contentSecurityPolicy: { directives: { defaultSrc: ["'self'"], scriptSrc: ["'self'"], objectSrc: ["'none'"], frameAncestors: ["'none'"], upgradeInsecureRequests: null } },
    // Plain http on loopback is the default; HSTS is for a TLS terminator in front to set.
    strictTransportSecurity: false,
  });
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(securityHeaders);
    done();
  });
  const corsOrigins = options.config?.corsOrigins ?? [];
  if (corsOrigins.length > 0) {
    await app.register(fastifyCors, {
      origin: [...corsOrigins],
      methods: ['GET', 'POST', 'DELETE'],
      allowedHeaders: ['authorization', 'content-type', 'idempotency-key', 'last-event-id', 'x-request-id'],
      exposedHeaders: ['location', 'x-request-id', 'www-authenticate', 'retry-after'],
      maxAge: 600,
    });
  }
  // Shedding first: an overloaded server answers before it spends anything on the request.
  const pressure = options.config?.pressure;
  if (pressure !== undefined) {
    await installLoadShedding(app, pressure, pressure.sampleIntervalMs === undefined ? {} : { sampleIntervalMs: pressure.sampleIntervalMs });
  }
  const auth = options.config?.auth;
  if (auth?.mode === 'on') {
    const keys =
      auth.keysFile === undefined
        ? undefined
        : new ApiKeyStore(auth.keysFile, { onReloadError: (error: Error) => app.log.warn({ err: error }, 'the API keys file could not be reread; the last keys stay in force') });
    const jwts =
      auth.jwt === undefined
        ? undefined
        : new JwtVerifier(auth.jwt, { onReloadError: (error: Error) => app.log.warn({ err: error }, 'the JWKS file could not be reread; the last keys stay in force') });
    const nodes = options.nodeTokens;
    await installAuthentication(app, async (token) => {
      if (token.startsWith(nodeTokenPrefix)) return nodes?.authenticate(token);
      return token.startsWith(apiKeyPrefix) ? keys?.authenticate(token) : jwts?.authenticate(token);
    });
    installTenancyGuard(app);
  }
  const keyPrefix = options.config?.keyPrefix ?? 'scope';
  // After authentication: the limit is per API key when there is one.
  if (options.config?.rateLimit !== undefined) {
    await installRateLimit(app, {
      limit: options.config.rateLimit,
      ...(options.redis === undefined ? {} : { redis: { client: options.redis, keyPrefix } }),
    });
  }

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Scope API',
        version: '1',
        license: { name: 'UNLICENSED (private)' },
        description:
          'Durable, recoverable agent process trees. JSON everywhere; errors are `application/problem+json` ' +
          '(RFC 9457) with a stable `code`. Identities in paths are the kernel\'s own strings, URL-encoded.',
      },
      // Relative: the docs' "Try it out" calls the server that served them, whatever its host and port.
      servers: [{ url: '/' }],
      tags: openapiTags,
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description:
              'An API key (`Authorization: Bearer scope_…`) when the server runs with SCOPE_AUTH=keys; each operation lists the scope it needs. ' +
              'Scopes: ' +
              Object.entries(scopeDescriptions)
                .map(([scope, text]) => `\`${scope}\` — ${text}`)
                .join('; ') +
              '. The embedded default on loopback runs with authentication off.',
          },
        },
      },
    },
    transform: ({ schema, url }) => {
      const operationId = (schema as { operationId?: string } | undefined)?.operationId;
      const security = operationId === undefined ? undefined : securityOf(operationId);
      // A public operation says so explicitly (an empty requirement), so a linter can tell it from a forgotten one.
      if (security === undefined) return { schema: { ...documentProblems(schema), security: [] }, url };
      return { schema: { ...documentProblems(withAuthProblems(schema)), security }, url };
    },
    transformObject: (document) => {
      if (!('openapiObject' in document)) return document.swaggerObject;
      markOptionalBodies(document.openapiObject as OpenApiDocument);
      return document.openapiObject;
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, index) => String(json.$id ?? `def-${index}`),
    },
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    // Swagger UI's own policy (scripts from itself only); no upgrade-insecure-requests (the default is plain http).
    staticCSP: true,
    transformStaticCSP: (header: string) => header.replace(/\s*upgrade-insecure-requests;?/, ''),
  });

  for (const schema of problemComponents) app.addSchema(schema);
  const perKey = options.config?.sse?.maxStreamsPerKey;
  const plugins = resourcePlugins(
    auth?.mode === 'on' && perKey !== undefined
      ? {
          ...options.config,
          stream: {
            ...options.config?.stream,
            perCaller: {
              slots: options.redis === undefined ? new MemoryStreamSlots() : new RedisStreamSlots(options.redis, { keyPrefix }),
              max: perKey,
              holderOf: (request) => request.principal?.keyId,
            },
          },
        }
      : options.config,
  );
  for (const { components } of plugins) for (const schema of components) app.addSchema(schema);

  app.get(
    '/openapi.json',
    {
      schema: {
        operationId: 'getOpenApi',
        tags: ['docs'],
        summary: 'This OpenAPI document',
        response: {
          200: { description: 'The OpenAPI 3.1 document.', type: 'object', additionalProperties: true },
          ...serverProblemResponses(),
        },
      },
    },
    async (_request, reply) => reply.type('application/json; charset=utf-8').send(JSON.stringify(app.swagger())),
  );

  for (const { plugin, options: pluginOptions } of plugins) await app.register(plugin, (pluginOptions ?? {}) as never);
  // The browser console at / (hidden static routes; it uses only the routes above).
  await app.register(consolePlugin);
  return app;
}

