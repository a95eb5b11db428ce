import { createHash, randomBytes } from 'node:crypto';
import { ReloadingFile, type ReloadingFileOptions } from './reloading-file.js';
import { isScope, type Scope } from './scopes.js';

/**
 * API keys, kept as SHA-256 digests in a JSON file: `{"keys": [{"id", "sha256", "tenant", "scopes"}]}`.
 * Keys are 32 random bytes, so a fast digest is enough (no slow password hash per request), and the
 * file never holds a usable secret. The file is read again when it changes (checked at most once a
 * second), so keys rotate without a restart; a file that no longer parses keeps the last good keys and
 * says why once.
 */

export interface Principal {
  /** The key's id (for logs and audit; never the key). */
  readonly keyId: string;
  readonly tenant: string;
  readonly scopes: ReadonlySet<Scope>;
}

interface KeyEntry {
  readonly id: string;
  readonly sha256: string;
  readonly tenant: string;
  readonly scopes: readonly Scope[];
}

/** What every API key starts with (a JWT never does: it starts with its base64url header). */
export const apiKeyPrefix = 'scope_';
const tokenPrefix = apiKeyPrefix;
const idPattern = /^[A-Za-z0-9._-]{1,64}$/;
const digestPattern = /^[0-9a-f]{64}$/;

/** A new key: its token (shown once) and the entry to add to the keys file. */
export function createKey(options: { id: string; tenant: string; scopes: readonly Scope[] }): { token: string; entry: KeyEntry } {
  const token = `${tokenPrefix}${randomBytes(32).toString('base64url')}`;
  return { token, entry: { id: options.id, sha256: digestOf(token), tenant: options.tenant, scopes: [...options.scopes] } };
}

export function digestOf(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Parses a keys file's text; throws an Error naming the first bad member. */
export function parseKeys(text: string): KeyEntry[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('the keys file is not JSON');
  }
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new Error('the keys file must be {"keys": [...]}');
  const ids = new Set<string>();
  return keys.map((raw: unknown, index) => {
    const entry = raw as Partial<Record<keyof KeyEntry, unknown>> | null;
    const at = `keys[${index}]`;
    if (typeof entry?.id !== 'string' || !idPattern.test(entry.id)) throw new Error(`${at}.id must be 1-64 of [A-Za-z0-9._-]`);
    if (ids.has(entry.id)) throw new Error(`${at}.id ${entry.id} is used twice`);
    ids.add(entry.id);
    if (typeof entry.sha256 !== 'string' || !digestPattern.test(entry.sha256)) throw new Error(`${at}.sha256 must be 64 lowercase hex digits`);
    if (typeof entry.tenant !== 'string' || !idPattern.test(entry.tenant)) throw new Error(`${at}.tenant must be 1-64 of [A-Za-z0-9._-]`);
    if (!Array.isArray(entry.scopes) || !entry.scopes.every(isScope)) throw new Error(`${at}.scopes must list known scopes`);
    return { id: entry.id, sha256: entry.sha256, tenant: entry.tenant, scopes: entry.scopes as Scope[] };
  });
}

export class ApiKeyStore {
  readonly #file: ReloadingFile<ReadonlyMap<string, Principal>>;

  /** Reads the file now: a bad file at startup is an error, not an open door. */
  constructor(path: string, options: ReloadingFileOptions = {}) {
    const principals = (text: string): ReadonlyMap<string, Principal> =>
      new Map(parseKeys(text).map((entry) => [entry.sha256, Object.freeze({ keyId: entry.id, tenant: entry.tenant, scopes: new Set(entry.scopes) })]));
    this.#file = new ReloadingFile(path, principals, options);
  }

  /** The principal of a presented token, or undefined. */
  authenticate(token: string): Principal | undefined {
    const byDigest = this.#file.current();
    if (!token.startsWith(tokenPrefix)) return undefined;
    return byDigest.get(digestOf(token));
  }
}
