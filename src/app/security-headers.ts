import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

/**
 * The headers helmet sets for `options`, computed once: with no nonces they are the same on every
 * response, and building helmet's middleware per request (as @fastify/helmet does) cost about a
 * tenth of a millisecond of CPU per request.
 */
export function helmetHeaders(options: Parameters<typeof helmet>[0]): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader(name: string, value: string | number | readonly string[]): void {
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
    },
    removeHeader(name: string): void {
      delete headers[name.toLowerCase()];
    },
  };
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, (error?: unknown) => {
    if (error !== undefined && error !== null) throw error;
  });
  return Object.freeze(headers) as Record<string, string>;
}
