import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { codedError, HostErrorCode } from '../errors.js';
import { OwnedElsewhereError, type OwnerHint } from '../server/ownership/owned-elsewhere.js';

/**
 * Forwarding (docs/host.md "Nodes and ownership"): a command for a tree a live other node owns is
 * sent to that node's advertised URL, once, and its answer relayed as is. The hop header marks a
 * forwarded request: a node that receives one and does not own the tree either does not forward
 * again but answers `tree_owned_elsewhere` naming the owner it sees (headers below), and the
 * forwarder retries once there. The caller's Authorization header travels as received, so the
 * owner authenticates and authorises the caller itself.
 */

/** Set on a forwarded request: the id of the node that forwarded it (one hop only). */
export const forwardedByHeader = 'scope-forwarded-by';
/** On a `tree_owned_elsewhere` answer: the owner the answering node sees. */
export const ownerNodeHeader = 'scope-owner-node';
export const ownerUrlHeader = 'scope-owner-url';
/** On a relayed answer: which node served it. */
export const servedByHeader = 'scope-served-by';

const requestHeaders = ['authorization', 'idempotency-key', 'accept', 'x-request-id'] as const;
const responseHeaders = ['content-type', 'etag', 'location', 'retry-after', ownerNodeHeader, ownerUrlHeader] as const;

/** Each JSON request's body as received: a forward sends it byte for byte, not a re-serialisation. */
const rawBodies = new WeakMap<FastifyRequest, string>();

/** Called by the app's JSON body parser with the text it parsed. */
export function rememberRawBody(request: FastifyRequest, text: string): void {
  rawBodies.set(request, text);
}

export interface ForwardingOptions {
  /** This node's id (the hop header's value). */
  readonly nodeId: () => string;
  /** How long one forwarded request may take (default 30 s, the longest a command's answer takes). */
  readonly timeoutMs?: number;
  /** Where `scope_forwards_total` is counted (the Host's registry). */
  readonly registry?: Registry;
}

type ForwardOutcome = 'relayed' | 'unreachable' | 'refused';

/** `scope_forwards_total{outcome}` on `registry` (the one already there, for a second app on one Host). */
function forwardsCounter(registry: Registry | undefined): Counter<'outcome'> | undefined {
  if (registry === undefined) return undefined;
  return (
    (registry.getSingleMetric('scope_forwards_total') as Counter<'outcome'> | undefined) ??
    new Counter({
      name: 'scope_forwards_total',
      help: 'Commands for trees another node owns: relayed (forwarded and answered), unreachable (503 owner_unreachable), refused (a forwarded request for a tree this node does not own)',
      labelNames: ['outcome'],
      registers: [registry],
    })
  );
}

/**
 * The error handler's first step: `true` when the error was a forwardable `tree_owned_elsewhere`
 * and the owner's answer was relayed; otherwise the error to answer with (the same, or
 * `owner_unreachable`).
 */
export function forwarder(options: ForwardingOptions): (error: unknown, request: FastifyRequest, reply: FastifyReply) => Promise<true | unknown> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const forwards = forwardsCounter(options.registry);
  const count = (outcome: ForwardOutcome) => forwards?.inc({ outcome });
  return async (error, request, reply) => {
    if (!(error instanceof OwnedElsewhereError)) return error;
    if (request.headers[forwardedByHeader] !== undefined) {
      count('refused');
      // Already one hop: say who owns it; the forwarder retries there once.
      reply.header(ownerNodeHeader, error.owner.nodeId).header(ownerUrlHeader, error.owner.url);
      return error;
    }
    let target: OwnerHint = error.owner;
    for (let attempt = 0; attempt < 2; attempt += 1) {
      let response: Response;
      try {
        response = await send(request, target, options.nodeId(), timeoutMs);
      } catch (cause) {
        request.log.warn({ err: cause, owner: target }, 'forwarding to the owner failed');
        reply.header('retry-after', '1');
        count('unreachable');
        return codedError(HostErrorCode.ownerUnreachable, `tree owned by node ${target.nodeId}, which did not answer at ${target.url}; retry shortly (its trees are taken over once its lease lapses)`, cause);
      }
      const hintUrl = response.headers.get(ownerUrlHeader);
      const hintNode = response.headers.get(ownerNodeHeader);
      if (attempt === 0 && response.status === 409 && hintUrl !== null && hintNode !== null && hintUrl !== target.url && hintNode !== options.nodeId()) {
        await response.body?.cancel();
        target = { nodeId: hintNode, url: hintUrl };
        continue;
      }
      await relay(response, reply, target);
      count('relayed');
      return true;
    }
    return error;
  };
}

async function send(request: FastifyRequest, target: OwnerHint, self: string, timeoutMs: number): Promise<Response> {
  const headers: Record<string, string> = { [forwardedByHeader]: self };
  for (const name of requestHeaders) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const raw = rawBodies.get(request);
  const body = raw ?? (request.body === undefined || request.body === null ? undefined : JSON.stringify(request.body));
  if (body !== undefined) headers['content-type'] = 'application/json';
  return fetch(`${target.url}${request.url}`, {
    method: request.method,
    headers,
    body,
    signal: AbortSignal.timeout(timeoutMs),
    redirect: 'manual',
  });
}

async function relay(response: Response, reply: FastifyReply, target: OwnerHint): Promise<void> {
  for (const name of responseHeaders) {
    const value = response.headers.get(name);
    if (value !== null) reply.header(name, value);
  }
  reply.header(servedByHeader, target.nodeId);
  const body = Buffer.from(await response.arrayBuffer());
  await reply.code(response.status).send(response.status === 204 || response.status === 304 ? undefined : body);
}

/** On a forwarded tree control: the scope the forwarding node's call had (`bulk`), for the control's record (plugins/request-agency.ts reads it). */
export const controlScopeHeader = 'scope-control-scope';
/** On a forwarded request: whether a person or the machine sent it (plugins/request-agency.ts reads it). */
const agencyHeader = 'scope-signal-agency';

/**
 * Bulk control with several nodes (docs/process-trees.md "Bulk control"): the control of one tree a
 * live other node owns, sent to it as `POST /v1/trees/{rootId}/{action}` — the same one hop, owner hint
 * and single retry as {@link forwarder}, the caller's Authorization along. Resolves with the owner's
 * outcome; throws the owner's problem (its `code`), or `owner_unreachable`.
 */
export function treeControlForwarder(
  request: FastifyRequest,
  options: ForwardingOptions & { readonly agency: 'user' | 'machine' },
): (rootId: string, owner: OwnerHint, action: string, reason: string | undefined) => Promise<{ rootId: string; action: ControlActionName; affected: number }> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const forwards = forwardsCounter(options.registry);
  return async (rootId, owner, action, reason) => {
    const headers: Record<string, string> = {
      [forwardedByHeader]: options.nodeId(),
      [controlScopeHeader]: 'bulk',
      [agencyHeader]: options.agency,
      'content-type': 'application/json',
    };
    for (const name of ['authorization', 'x-request-id'] as const) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const body = JSON.stringify(reason === undefined ? {} : { reason });
    let target = owner;
    for (let attempt = 0; ; attempt += 1) {
      let response: Response;
      try {
        response = await fetch(`${target.url}/v1/trees/${encodeURIComponent(rootId)}/${action}`, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
      } catch (cause) {
        forwards?.inc({ outcome: 'unreachable' });
        throw codedError(HostErrorCode.ownerUnreachable, `tree owned by node ${target.nodeId}, which did not answer at ${target.url}; retry shortly (its trees are taken over once its lease lapses)`, cause);
      }
      const hintUrl = response.headers.get(ownerUrlHeader);
      const hintNode = response.headers.get(ownerNodeHeader);
      if (attempt === 0 && response.status === 409 && hintUrl !== null && hintNode !== null && hintUrl !== target.url && hintNode !== options.nodeId()) {
        await response.body?.cancel();
        target = { nodeId: hintNode, url: hintUrl };
        continue;
      }
      const answer = (await response.json().catch(() => undefined)) as { rootId?: unknown; action?: unknown; affected?: unknown; code?: unknown; detail?: unknown } | undefined;
      forwards?.inc({ outcome: 'relayed' });
      if ((response.status === 200 || response.status === 202) && typeof answer?.affected === 'number') {
        return { rootId, action: action as ControlActionName, affected: answer.affected };
      }
      const code = typeof answer?.code === 'string' ? answer.code : 'internal_error';
      const detail = typeof answer?.detail === 'string' ? answer.detail : `node ${target.nodeId} answered ${response.status}`;
      throw Object.assign(new Error(detail), { code });
    }
  };
}

type ControlActionName = 'pause' | 'resume' | 'cancel' | 'kill';
