import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ProblemError } from '../../../plugins/problem-details.js';
import { parseGateId } from '../../server/gates/gate-id.js';

/**
 * Tenant isolation at the edge: a route that names a process or tree (`:id`, `:rootId`) is answered
 * as if it did not exist when the tree belongs to another tenant than the caller's key — the same 404,
 * word for word, that an unknown id gets, so ids of other tenants cannot be probed. Lists and the
 * inbox are narrowed by the Host (their plugins pass the tenant). Runs after authentication and route
 * validation (preHandler), so a malformed id is still a 400 and a missing token a 401.
 */
export function installTenancyGuard(app: FastifyInstance): void {
  app.addHook('preHandler', async (request: FastifyRequest) => {
    const principal = request.principal;
    if (principal === undefined) return;
    const params = request.params as { id?: unknown; rootId?: unknown; gateId?: unknown } | undefined;
    // A gate names its process: the gate is another tenant's when its tree is.
    const gate = typeof params?.gateId === 'string' ? parseGateId(params.gateId) : undefined;
    if (typeof params?.gateId === 'string' && gate === undefined) return; // the route answers gate_not_found
    const named = gate !== undefined ? gate.processId : typeof params?.id === 'string' ? params.id : typeof params?.rootId === 'string' ? params.rootId : undefined;
    if (named === undefined) return;
    // Fails closed: whatever stops the lookup (a malformed id, storage down) answers the request, as the
    // route would have, and nothing is served unchecked.
    const tenant = await app.host.tenantOf(named);
    if (tenant === undefined || tenant === principal.tenant) return;
    if (gate !== undefined) throw new ProblemError('gate_not_found', `no gate ${String(params?.gateId)}`);
    if (typeof params?.rootId === 'string') throw new ProblemError('tree_not_found', `no tree ${named}`);
    throw new ProblemError('process_not_found', `no process ${named}`);
  });
}
