import { pino, type Logger } from 'pino';
import type { LogLevel } from '../server/config.js';

/**
 * What no log line may carry, whatever logs it: credentials in headers (a request logged with its
 * headers, an HTTP client error), secrets in connection options and configuration. pino replaces them
 * with `[redacted]` as it serialises, so a careless `log.info({ headers })` cannot leak a token.
 */
export const redactedPaths: readonly string[] = Object.freeze([
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'request.headers.authorization',
  '*.headers.authorization',
  'headers.cookie',
  'req.headers.cookie',
  'token',
  '*.token',
  'apiKey',
  '*.apiKey',
  'password',
  '*.password',
  'secret',
  '*.secret',
]);

/** The server's logger (`SCOPE_LOG_LEVEL`), with {@link redactedPaths} redacted. */
export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const options = { level, redact: { paths: [...redactedPaths], censor: '[redacted]' } };
  return destination === undefined ? pino(options) : pino(options, destination);
}
