/**
 * The console bench's server, in a process of its own: an embedded Scope server from the checkout named
 * by argv[2] (default this one) with argv[3] demo.approval roots started through its EngineHost (in
 * process: starting 10,000 over HTTP would take the bench minutes). Prints `listening <url>` once full;
 * exits when its parent closes stdin.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const checkout = resolve(process.argv[2] ?? '.');
const processes = Number(process.argv[3] ?? 10_000);
const startConcurrency = 32;

const from = (path: string): string => pathToFileURL(resolve(checkout, path)).href;
const { buildApp } = (await import(from('src/app/app.ts'))) as typeof import('../../src/app/app.js');
const { loadConfig } = (await import(from('src/server/config.ts'))) as typeof import('../../src/server/config.js');
const { EngineHost } = (await import(from('src/server/engine-host.ts'))) as typeof import('../../src/server/engine-host.js');

const config = loadConfig({ SCOPE_SHUTDOWN_MS: '500' });
const host = new EngineHost({ config, defaultMetrics: false });
const app = await buildApp({ host, config });
await app.listen({ port: 0, host: '127.0.0.1' });
const started = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: startConcurrency }, async () => {
    while (next < processes) {
      next += 1;
      await host.startProcess({ deployment: 'demo.approval', input: { subject: `bench ${next}` } });
    }
  }),
);
const address = app.server.address();
if (address === null || typeof address === 'string') throw new Error('the server has no port');
console.log(`listening http://127.0.0.1:${address.port} ${((performance.now() - started) / 1000).toFixed(1)}`);
process.stdin.resume();
process.stdin.on('end', () => {
  void app.close().then(() => process.exit(0));
});
