import type { Logger } from 'pino';
import { defaultLimitsWithin, spawnDefaults, type SpawnDefaults } from './control-config.js';
import { type Budget, type CapabilitySet, type Deployment, type Engine, Payload, type Process, type TreeLimits } from '../kernel/index.js';
import { codedError, HostErrorCode, invalidRequest } from '../errors.js';
import type { IdempotencyIntent, IdempotencyStore } from '../store/idempotency.js';
import { AuthorityShapeError, excessOf, parseBudget, parseCapabilities, parseTreeLimits, type Grant } from './authority.js';
import type { DeploymentCatalog } from './catalog.js';
import type { StartRequest } from './host.js';
import { idempotencyHostValue, idempotencyKeyDigest, requestDigest } from './idempotency.js';
import { tenantHostValue } from './tenancy.js';
import { storeCall } from './store-call.js';

/**
 * Starting root processes: the request narrowed against the server's grant (a start may only ask
 * for less), then `Engine.start`; with an `Idempotency-Key`, at most one start per key, in this
 * server and across every server sharing the store. The body's shape was checked at the HTTP edge;
 * what is checked here is what only the Host knows (the grant, the catalog, the key's history), and
 * the kernel checks the input against the deployment's own schema.
 */

interface PreparedStart {
  readonly deployment: Deployment;
  readonly input: Payload;
  readonly budget: Budget | undefined;
  readonly treeLimits: TreeLimits | undefined;
  readonly capabilities: CapabilitySet | undefined;
  readonly tenant: string | undefined;
}

/** What a start produced: the new process, or (a replayed key) the root of the earlier one. */
export type Started = { readonly created: true; readonly process: Process } | { readonly created: false; readonly processId: string };

export interface StartsOptions {
  readonly engine: Engine;
  readonly catalog: DeploymentCatalog;
  readonly grants: Grant;
  /** What omitted spawn limits become (default {@link spawnDefaults}). */
  readonly spawnDefaults?: SpawnDefaults;
  /** Narrower grants for the trees of named tenants (`SCOPE_TENANT_GRANTS`). */
  readonly tenantGrants?: ReadonlyMap<string, Grant>;
  readonly idempotency: IdempotencyStore;
  readonly idempotencyTtlMs: number;
  /** Throws `shutting_down` once the Host stops admitting work. */
  readonly admit: () => void;
  /** Aborted on shutdown: a claim waiting for another start gives up. */
  readonly shutdown: AbortSignal;
  readonly logger?: Logger;
}

export class Starts {
  readonly #options: StartsOptions;
  /** Idempotent starts in flight, by key digest (same-key starts in this server run one after the other). */
  readonly #inFlight = new Map<string, Promise<Started>>();

  constructor(options: StartsOptions) {
    this.#options = options;
  }

  async start(request: StartRequest, idempotencyKey: string | undefined): Promise<Started> {
    this.#options.admit();
    const prepared = this.#prepare(request);
    if (idempotencyKey === undefined) return { created: true, process: await this.#engineStart(prepared, undefined) };
    const keyDigest = idempotencyKeyDigest(idempotencyKey, request.tenant);
    // The body is what the digest compares; the tenant already scopes the key.
    const { tenant: _tenant, ...body } = request;
    const digest = requestDigest(body);
    const previous = this.#inFlight.get(keyDigest) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.#idempotentStart(prepared, keyDigest, digest));
    this.#inFlight.set(keyDigest, run);
    try {
      return await run;
    } finally {
      if (this.#inFlight.get(keyDigest) === run) this.#inFlight.delete(keyDigest);
    }
  }

  /**
   * The claim returns the earlier start's record, or reserves the key for this start (waiting, bounded,
   * while another start holds it); a start that fails gives the reservation up.
   */
  async #idempotentStart(prepared: PreparedStart, keyDigest: string, digest: string): Promise<Started> {
    const { idempotency } = this.#options;
    const claim = await storeCall('idempotency claim', () => idempotency.claim(keyDigest, this.#options.shutdown));
    if (claim.kind === 'existing') {
      if (claim.record.requestDigest !== digest) {
        throw codedError(HostErrorCode.idempotencyKeyConflict, 'this Idempotency-Key was used with a different request body');
      }
      return { created: false, processId: claim.record.processId };
    }
    try {
      this.#options.admit();
      const intent: IdempotencyIntent = {
        keyDigest,
        requestDigest: digest,
        ttlMs: this.#options.idempotencyTtlMs,
        ...(claim.token === undefined ? {} : { token: claim.token }),
      };
      return { created: true, process: await this.#engineStart(prepared, intent) };
    } catch (error) {
      await idempotency.release(keyDigest, claim.token).catch((failure: unknown) => {
        this.#options.logger?.warn({ err: failure }, 'could not give up an idempotency reservation (it expires on its own)');
      });
      throw error;
    }
  }

  #prepare(request: StartRequest): PreparedStart {
    const deployment = this.#options.catalog.byName(request.deployment);
    let input: Payload;
    try {
      input = Payload.encode(request.input);
    } catch (error) {
      throw invalidRequest(`input is not valid JSON: ${error instanceof Error ? error.message : String(error)}`, error);
    }
    const server = this.#options.grants;
    const grant = (request.tenant === undefined ? undefined : this.#options.tenantGrants?.get(request.tenant)) ?? server;
    // A tenant's grant narrows the server's: what the request omits is that grant, passed explicitly.
    const narrowed = grant !== server;
    // Spawn limits default safe: an omitted member is a finite default within the grant, never the
    // grant's unlimited (control-config.ts); unlimited is had only by asking for it.
    const limits = defaultLimitsWithin(grant.treeLimits, this.#options.spawnDefaults ?? spawnDefaults);
    let requested: Grant;
    try {
      requested = {
        budget: request.budget === undefined ? grant.budget : parseBudget(request.budget, '/budget'),
        treeLimits: request.treeLimits === undefined ? limits : parseTreeLimits(request.treeLimits, '/treeLimits', limits),
        capabilities: request.capabilities === undefined ? grant.capabilities : parseCapabilities(request.capabilities, '/capabilities'),
      };
    } catch (error) {
      if (error instanceof AuthorityShapeError) throw invalidRequest(error.message, error);
      throw error;
    }
    const excess = excessOf(grant, requested);
    if (excess.length > 0) {
      throw codedError(HostErrorCode.authorityExceeded, `the start asks for more than ${narrowed ? "its tenant's grant allows" : 'the server grants'}: ${excess.join('; ')}`);
    }
    return {
      deployment,
      input,
      // What the request omits is the grant itself, which the Engine applies as its default.
      budget: request.budget === undefined && !narrowed ? undefined : requested.budget,
      treeLimits: requested.treeLimits,
      capabilities: request.capabilities === undefined && !narrowed ? undefined : requested.capabilities,
      tenant: request.tenant,
    };
  }

  #engineStart(prepared: PreparedStart, intent: IdempotencyIntent | undefined): Promise<Process> {
    return this.#options.engine.start(prepared.deployment, prepared.input, {
      budget: prepared.budget,
      treeLimits: prepared.treeLimits,
      capabilities: prepared.capabilities,
      hostValues:
        intent === undefined && prepared.tenant === undefined
          ? undefined
          : {
              ...(intent === undefined ? {} : { [idempotencyHostValue]: intent }),
              ...(prepared.tenant === undefined ? {} : { [tenantHostValue]: prepared.tenant }),
            },
    });
  }
}
