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

/** A URL with the values of its `token` query parameters replaced: a gate callback's token is its authority. */
export function redactUrlTokens(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/g, '$1[redacted]');
}

/**
 * The server's logger (`SCOPE_LOG_LEVEL`), with {@link redactedPaths} redacted, and a request URL's
 * `token` parameter (an `open_url` gate's one-time callback token) too.
 */
export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    redact: { paths: [...redactedPaths], censor: '[redacted]' },
    formatters: {
      log(object: Record<string, unknown>): Record<string, unknown> {
        const req = object.req as { url?: unknown } | undefined;
        if (req === null || typeof req !== 'object' || typeof req.url !== 'string' || !req.url.includes('token=')) return object;
        // The request itself (serializers run later): the same object but for its URL.
        return { ...object, req: Object.create(req, { url: { value: redactUrlTokens(req.url), enumerable: true } }) as unknown };
      },
    },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}
