import type { FastifyRequest } from 'fastify';

/**
 * Who sent a request, as the server sees it (issue 16: signals and controls alike): an HTTP caller is a
 * person (`user`), except another node acting on a process's behalf (its node token with authentication
 * on; its forwarded-by and agency headers without, where nothing can be told apart anyway).
 */
export function agencyOf(request: FastifyRequest): 'user' | 'machine' {
  if (request.principal !== undefined) return request.principal.keyId.startsWith('node:') ? 'machine' : 'user';
  const forwarded = request.headers['scope-forwarded-by'] !== undefined;
  return forwarded && request.headers['scope-signal-agency'] === 'machine' ? 'machine' : 'user';
}

/**
 * The scope a tree control records: `bulk` only when another node forwarded one tree of a bulk call
 * (its `scope-control-scope` header, src/app/forwarding.ts); a caller's own header counts for nothing.
 */
export function controlScopeOf(request: FastifyRequest): 'tree' | 'bulk' {
  return request.headers['scope-forwarded-by'] !== undefined && request.headers['scope-control-scope'] === 'bulk' ? 'bulk' : 'tree';
}
