/**
 * The browser console at `/`: the committed bundle in `plugins/console/dist/` (built from
 * `src/console/` by `npm run console:build`), served as static files. `index.html` is revalidated on
 * every load (`no-cache`); the script and stylesheet carry their content hash in their names, so they
 * are cached for good. The page runs under its own strict policy: scripts, styles and connections from
 * this origin only, nothing inline, no frames.
 */
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';

/** Where the committed bundle lives. */
export const consoleDist = join(dirname(fileURLToPath(import.meta.url)), 'dist');

/** The console's Content-Security-Policy: stricter than the API default (no inline styles either). */
export const consolePolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const hashedAsset = /-[A-Z0-9]{8}\.(js|css)$/;

const consolePlugin: FastifyPluginAsync = async (app) => {
  // A checkout without the bundle (it is committed, so only a broken one) serves the API alone.
  if (!existsSync(join(consoleDist, 'index.html'))) {
    app.log.warn({ consoleDist }, 'the console bundle is missing; / is not served (npm run console:build)');
    return;
  }
  await app.register(fastifyStatic, {
    root: consoleDist,
    // Routes are declared below, one per file, from a synchronous listing (no glob at startup);
    // unknown paths keep the API's problem+json 404.
    serve: false,
    cacheControl: false,
    etag: true,
    lastModified: false,
    setHeaders(reply, path) {
      reply.header('content-security-policy', consolePolicy);
      reply.header('cache-control', hashedAsset.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  const hidden = { schema: { hide: true } };
  app.get('/', hidden, (_request, reply) => reply.sendFile('index.html'));
  for (const name of readdirSync(consoleDist)) app.get(`/${name}`, hidden, (_request, reply) => reply.sendFile(name));
};

export default consolePlugin;
