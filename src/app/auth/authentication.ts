import bearerAuth from '@fastify/bearer-auth';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ProblemError } from '../../../plugins/problem-details.js';
import type { Principal } from './key-store.js';

/** Who a bearer token belongs to, or undefined: API keys, JWTs, or both behind one function. */
export type Authenticate = (token: string) => Promise<Principal | undefined>;
import { operationScopes, type Scope } from './scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who presented the bearer token (set when authentication is on and the token is known). */
    principal?: Principal;
  }
}

/** The scope a matched route requires; `public` or undefined (no route matched: a 404 follows) need no token. */
function requiredScope(request: FastifyRequest): Scope | 'public' | undefined {
  const operationId = (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId;
  return operationId === undefined ? undefined : operationScopes[operationId];
}

/**
 * Bearer-token authentication with scopes. `@fastify/bearer-auth` parses the Authorization header and
 * asks the key store; every operation's scope comes from the one table in scopes.ts. Without a token, or
 * with an unknown one: 401 `unauthorized`; with a token that lacks the scope: 403 `insufficient_scope`
 * (both with `WWW-Authenticate`, RFC 6750). Register before the routes.
 */
export async function installAuthentication(app: FastifyInstance, authenticate: Authenticate): Promise<void> {
  await app.register(bearerAuth, {
    addHook: false,
    keys: [],
    verifyErrorLogLevel: 'info',
    auth: async (token: string, request: FastifyRequest) => {
      const principal = await authenticate(token);
      if (principal !== undefined) request.principal = principal;
      return principal !== undefined;
    },
  });
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
    const scope = requiredScope(request);
    if (scope === undefined || scope === 'public') {
      done();
      return;
    }
    reply.header('www-authenticate', 'Bearer realm="scope"');
    const verify = app.verifyBearerAuth;
    if (verify === undefined) throw new Error('@fastify/bearer-auth did not decorate verifyBearerAuth');
    verify(request, reply, (error?: Error) => {
      if (error !== undefined && error !== null) {
        done(new ProblemError('unauthorized', 'a bearer token with the right scope is required (Authorization: Bearer <key>)'));
        return;
      }
      if (request.principal?.scopes.has(scope) !== true) {
        reply.header('www-authenticate', `Bearer realm="scope", error="insufficient_scope", scope="${scope}"`);
        done(new ProblemError('insufficient_scope', `this operation needs the scope ${scope}, which the token does not carry`));
        return;
      }
      done();
    });
  });
}
