import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RedisClient } from '../../store/redis/connection.js';
import { nodeTokenSecretKey } from '../../store/redis/keys.js';
import type { Principal } from './key-store.js';
import type { Scope } from './scopes.js';

/** Node tokens start with this (never an API key's `scope_`, never a JWT's base64url header). */
export const nodeTokenPrefix = 'scope-node.';

/** How long a minted token is good for: one forwarded request, with room for clock skew between nodes. */
const lifetimeMs = 60_000;

/** What a node token may do: deliver signals (`processes:write`) in the one tenant it names. */
const nodeScopes: ReadonlySet<Scope> = new Set<Scope>(['processes:write']);

const tenantPattern = /^[A-Za-z0-9._-]{1,64}$/;
const nodePattern = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Credentials one node presents to another when it forwards work it started itself, with no caller
 * token to pass on (a cross-tree message to a tree another node owns). The nodes of one Redis share
 * a random secret kept there ({@link loadClusterSecret}); a token is `scope-node.<claims>.<HMAC>`,
 * naming the node, the tenant it acts for and an expiry a minute ahead. Whoever can read Redis can
 * already rewrite every tree, so the secret protects nothing Redis does not; it keeps a node's
 * forwarded request from being accepted without it.
 */
export class NodeTokens {
  readonly #secret: Buffer;
  readonly #now: () => number;

  constructor(secret: Buffer, now: () => number = Date.now) {
    if (secret.length < 32) throw new RangeError('a node token secret needs at least 32 bytes');
    this.#secret = secret;
    this.#now = now;
  }

  /** A token for `node` acting in `tenant`, good for a minute. */
  mint(node: string, tenant: string): string {
    if (!nodePattern.test(node) || !tenantPattern.test(tenant)) throw new RangeError('a node token needs a valid node id and tenant');
    const claims = Buffer.from(JSON.stringify({ n: node, t: tenant, e: this.#now() + lifetimeMs })).toString('base64url');
    return `${nodeTokenPrefix}${claims}.${this.#sign(claims)}`;
  }

  /** The principal of a valid, unexpired token; undefined for anything else. */
  authenticate(token: string): Principal | undefined {
    if (!token.startsWith(nodeTokenPrefix)) return undefined;
    const [claims, signature, ...rest] = token.slice(nodeTokenPrefix.length).split('.');
    if (claims === undefined || signature === undefined || rest.length > 0) return undefined;
    const expected = Buffer.from(this.#sign(claims));
    const presented = Buffer.from(signature);
    if (expected.length !== presented.length || !timingSafeEqual(expected, presented)) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    const { n, t, e } = (parsed ?? {}) as { n?: unknown; t?: unknown; e?: unknown };
    if (typeof n !== 'string' || !nodePattern.test(n) || typeof t !== 'string' || !tenantPattern.test(t) || typeof e !== 'number') return undefined;
    if (e <= this.#now()) return undefined;
    return Object.freeze({ keyId: `node:${n}`, tenant: t, scopes: nodeScopes });
  }

  #sign(claims: string): string {
    return createHmac('sha256', this.#secret).update(claims).digest('base64url');
  }
}

/**
 * The secret every node on this Redis shares: the first node to ask creates it (`SET NX`), the rest
 * read it. It never expires, so restarts and new nodes agree on it.
 */
export async function loadClusterSecret(redis: RedisClient, keyPrefix: string): Promise<Buffer> {
  const key = nodeTokenSecretKey(keyPrefix);
  await redis.set(key, randomBytes(32).toString('hex'), 'NX');
  const value = await redis.get(key);
  if (value === null || !/^[0-9a-f]{64}$/.test(value)) throw new Error(`${key} is missing or malformed`);
  return Buffer.from(value, 'hex');
}
