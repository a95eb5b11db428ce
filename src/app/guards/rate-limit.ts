import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ProblemError } from '../../../plugins/problem-details.js';
import type { RedisClient } from '../../store/redis/connection.js';
import { rateLimitNamespace } from '../../store/redis/keys.js';
import type { RateLimitConfig } from '../../server/config.js';
import { operationScopes } from '../auth/scopes.js';

export interface RateLimitOptions {
  readonly limit: RateLimitConfig;
  /** Count on Redis (every node on it shares one budget per caller); absent: this node counts alone. */
  readonly redis?: { readonly client: RedisClient; readonly keyPrefix: string };
}

/** Public operations (probes, the API document) are never limited: a load balancer must always reach them. */
function isPublic(request: FastifyRequest): boolean {
  const operationId = (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId;
  return operationId === undefined || operationScopes[operationId] === 'public';
}

/**
 * Requests per window per caller (`@fastify/rate-limit`): the API key when authentication is on (it
 * runs after authentication, so the principal is known), the address otherwise. Over the limit: 429
 * `rate_limited` with Retry-After and the RateLimit headers. When the Redis store fails the request
 * goes through: the limit protects the service, and failing every call while Redis blinks would not.
 */
export async function installRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<void> {
  await app.register(fastifyRateLimit, {
    global: true,
    max: options.limit.max,
    timeWindow: options.limit.windowMs,
    keyGenerator: (request: FastifyRequest) => (request.principal === undefined ? `ip:${request.ip}` : `key:${request.principal.keyId}`),
    allowList: (request: FastifyRequest) => isPublic(request),
    skipOnError: true,
    ...(options.redis === undefined ? {} : { redis: options.redis.client, nameSpace: rateLimitNamespace(options.redis.keyPrefix) }),
    errorResponseBuilder: (_request: FastifyRequest, context: { max: number; after: string }) =>
      new ProblemError('rate_limited', `more than ${context.max} requests in the window; retry in ${context.after}`),
  });
}
