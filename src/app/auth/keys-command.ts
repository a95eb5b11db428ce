import { createKey } from './key-store.js';
import { isScope, scopeValues, type Scope } from './scopes.js';

/**
 * `scope keys create --scopes <a,b> [--tenant <t>] [--id <name>]`: makes a new API key. The key is
 * printed once (give it to the caller); the JSON entry goes into the keys file (SCOPE_API_KEYS_FILE),
 * which holds only its SHA-256 digest.
 */
export const keysUsage = `usage: scope keys create --scopes <scope,...> [--tenant <tenant>] [--id <name>]

  scopes: ${scopeValues.join(', ')}
  prints the key (shown only now) and the entry to add to the keys file`;

export function keysCommand(argv: readonly string[], write: (text: string) => void): { exitCode: number; error?: string } {
  if (argv[0] !== 'create') return { exitCode: 2, error: 'expected `keys create`' };
  let scopes: Scope[] | undefined;
  let tenant = 'default';
  let id = `key-${Date.now().toString(36)}`;
  for (let index = 1; index < argv.length; index += 2) {
    const [flag, value] = [argv[index], argv[index + 1]];
    if (value === undefined) return { exitCode: 2, error: `${String(flag)} needs a value` };
    if (flag === '--scopes') {
      const names = value.split(',').map((name) => name.trim()).filter((name) => name !== '');
      const unknown = names.filter((name) => !isScope(name));
      if (unknown.length > 0 || names.length === 0) return { exitCode: 2, error: `unknown scopes: ${unknown.join(', ') || '(none given)'}` };
      scopes = names as Scope[];
    } else if (flag === '--tenant') tenant = value;
    else if (flag === '--id') id = value;
    else return { exitCode: 2, error: `unknown argument ${JSON.stringify(flag)}` };
  }
  if (scopes === undefined) return { exitCode: 2, error: '--scopes is required' };
  const { token, entry } = createKey({ id, tenant, scopes });
  write(`key (shown only now): ${token}\nadd to the keys file's "keys" array:\n${JSON.stringify(entry)}\n`);
  return { exitCode: 0 };
}
