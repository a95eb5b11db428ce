/**
 * Writes `openapi.yaml` from the route schemas (`npm run openapi`); with `--check`, exits 1 when the
 * file on disk differs from what the code generates (`npm run openapi:check`, CI).
 *
 * The app is built around a Host that refuses every call: generating the document serves no request.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildApp } from '../src/app/app.js';
import type { Host } from '../src/server/host.js';

export const openapiPath = fileURLToPath(new URL('../openapi.yaml', import.meta.url));

/**
 * A Host for spec generation only: every method refuses. (Fastify probes a decoration for
 * `getter`/`setter` members and promises for `then`; those read as absent.)
 */
function specOnlyHost(): Host {
  const probes = new Set<string | symbol>(['then', 'getter', 'setter']);
  return new Proxy({} as Host, {
    get(_target, property) {
      if (probes.has(property) || typeof property === 'symbol') return undefined;
      if (property === 'close') return async () => {};
      return () => {
        throw new Error(`the spec-generation Host cannot serve ${property}`);
      };
    },
  });
}

/** The OpenAPI document as YAML text, exactly as `npm run openapi` writes it. */
export async function renderOpenApiYaml(): Promise<string> {
  const app = await buildApp({ host: specOnlyHost(), config: { closeHost: false } });
  try {
    await app.ready();
    return app.swagger({ yaml: true });
  } finally {
    await app.close();
  }
}

async function main(args: readonly string[]): Promise<number> {
  const generated = await renderOpenApiYaml();
  if (args.includes('--check')) {
    const current = await readFile(openapiPath, 'utf8').catch(() => undefined);
    if (current === generated) {
      console.log('openapi.yaml is current');
      return 0;
    }
    console.error(
      current === undefined
        ? 'openapi.yaml is missing: run `npm run openapi`'
        : 'openapi.yaml is stale (the route schemas changed): run `npm run openapi` and commit the result',
    );
    return 1;
  }
  await writeFile(openapiPath, generated);
  console.log(`wrote ${openapiPath}`);
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
