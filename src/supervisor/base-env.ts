import { tmpdir } from 'node:os';
import { SupervisorError, SupervisorErrorCode } from './errors.js';

/**
 * The variables a long-lived command inherits from this process, and nothing else: the command
 * must find programs (PATH), a home (HOME), a temporary directory (TMPDIR), text encoding and
 * locale (LANG, LC_ALL) and the time zone (TZ). Everything else — credentials, connection
 * strings, NODE_OPTIONS and the like — stays out unless the starter adds it explicitly.
 */
export const inheritedEnvNames: readonly string[] = Object.freeze(['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ']);

/** PATH when this process has none. */
export const fallbackPath = '/usr/local/bin:/usr/bin:/bin';

/**
 * The environment a command starts from: {@link inheritedEnvNames} as this process has them
 * (PATH defaults to {@link fallbackPath}, HOME to the temporary directory, LANG to `C.UTF-8`),
 * then `extra` on top. Names must be non-empty without `=` or NUL, values without NUL
 * (`invalid_argument` otherwise), since the OS would silently truncate or split them.
 */
export function baseEnv(extra: Readonly<Record<string, string>> = {}, source: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {
    PATH: source.PATH ?? fallbackPath,
    HOME: source.HOME ?? tmpdir(),
    LANG: source.LANG ?? 'C.UTF-8',
  };
  for (const name of ['TMPDIR', 'LC_ALL', 'TZ']) {
    const value = source[name];
    if (value !== undefined) env[name] = value;
  }
  if (typeof extra !== 'object' || extra === null) throw invalidEnv('the extra environment must be an object');
  for (const [name, value] of Object.entries(extra)) {
    checkEnvEntry(name, value);
    env[name] = value;
  }
  return env;
}

/** Throws `invalid_argument` for a variable the OS could not represent faithfully. */
export function checkEnvEntry(name: string, value: unknown): void {
  if (name.length === 0 || name.includes('=') || name.includes('\0')) throw invalidEnv(`invalid variable name ${JSON.stringify(name)}`);
  if (typeof value !== 'string' || value.includes('\0')) throw invalidEnv(`variable ${name} must be a string without NUL`);
}

function invalidEnv(message: string): SupervisorError {
  return new SupervisorError(SupervisorErrorCode.invalidArgument, `invalid environment: ${message}`);
}
