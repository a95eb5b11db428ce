import { createHash } from 'node:crypto';
import { createLocalJWKSet, errors, jwtVerify, type JSONWebKeySet } from 'jose';
import type { Principal } from './key-store.js';
import { ReloadingFile, type ReloadingFileOptions } from './reloading-file.js';
import { isScope } from './scopes.js';

export interface JwtConfig {
  /** A JSON Web Key Set file (`{"keys": [...]}`, public keys only) the tokens' signatures are checked against. */
  readonly jwksFile: string;
  /** The `iss` every token must carry (none checked when absent). */
  readonly issuer?: string;
  /** The `aud` every token must carry (none checked when absent). */
  readonly audience?: string;
  /** The claim naming the caller's tenant (default `tenant`). */
  readonly tenantClaim?: string;
}

const tenantPattern = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Bearer JWTs, verified with `jose` against a local key set: signature, `exp`/`nbf` (30 s of clock
 * tolerance), and issuer and audience when configured. The principal's scopes are the known ones in
 * the space-separated `scope` claim (RFC 8693), its tenant the tenant claim, and its id a digest of
 * `iss`+`sub` (what logs, limits and stream caps count by; never the token). A token without a valid
 * tenant or subject is refused: an unattributable caller gets nothing.
 */
export class JwtVerifier {
  readonly #keys: ReloadingFile<ReturnType<typeof createLocalJWKSet>>;
  readonly #config: JwtConfig;

  /** Reads the key set now (a bad file is an error); a changed file is read again, so signing keys rotate without a restart. */
  constructor(config: JwtConfig, options: ReloadingFileOptions = {}) {
    this.#keys = new ReloadingFile(config.jwksFile, (text) => createLocalJWKSet(parseKeySet(config.jwksFile, text)), options);
    this.#config = config;
  }

  /** The principal of a valid token, or undefined (malformed, unsigned by the set, expired, unattributable). */
  async authenticate(token: string): Promise<Principal | undefined> {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.#keys.current(), {
        clockTolerance: 30,
        ...(this.#config.issuer === undefined ? {} : { issuer: this.#config.issuer }),
        ...(this.#config.audience === undefined ? {} : { audience: this.#config.audience }),
      }));
    } catch (error) {
      if (error instanceof errors.JOSEError || error instanceof TypeError) return undefined;
      throw error;
    }
    const tenant = payload[this.#config.tenantClaim ?? 'tenant'];
    const subject = payload.sub;
    if (typeof tenant !== 'string' || !tenantPattern.test(tenant) || typeof subject !== 'string' || subject === '') return undefined;
    const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(isScope) : [];
    const issuer = typeof payload.iss === 'string' ? payload.iss : '';
    const keyId = `jwt-${createHash('sha256').update(`${issuer}\u0000${subject}`).digest('hex').slice(0, 24)}`;
    return Object.freeze({ keyId, tenant, scopes: new Set(scopes) });
  }
}

/** A JSON Web Key Set of public keys only (a private member would mean the file leaks signing power). */
function parseKeySet(path: string, text: string): JSONWebKeySet {
  let set: JSONWebKeySet;
  try {
    set = JSON.parse(text) as JSONWebKeySet;
  } catch (error) {
    throw new Error(`the JWKS file ${path} could not be read as JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(set?.keys) || set.keys.some((key) => 'd' in key)) {
    throw new Error(`the JWKS file ${path} must be {"keys": [...]} of public keys only`);
  }
  return set;
}
