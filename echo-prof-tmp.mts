import { EngineHost } from './src/server/engine-host.ts';
import { result, testConfig } from './test/server/harness.ts';
import { startRedisServer } from './test/helpers/redis-server.ts';
const mode = process.argv[2] ?? 'embedded';
const server = mode === 'redis' ? await startRedisServer({ appendOnly: false }) : undefined;
const env: Record<string, string> = server ? { SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: 'p' } : {};
const host = new EngineHost({ config: testConfig({ ...env, SCOPE_LOG_LEVEL: 'error' }), defaultMetrics: false });
async function once(i: number) {
  const started = await host.startProcess({ deployment: 'demo.echo', input: { value: '' } });
  const out = await result(host, started.process.processId);
  if (out.status !== 'completed') throw new Error(out.status);
}
for (let i = 0; i < 300; i++) await once(i);
const n = Number(process.argv[3] ?? 2000);
const cpu0 = process.cpuUsage(); const t = performance.now();
for (let i = 0; i < n; i++) await once(i);
const c = process.cpuUsage(cpu0);
console.log(mode, 'wall', ((performance.now() - t) / n).toFixed(3), 'ms/process; cpu', ((c.user + c.system) / n / 1000).toFixed(3), 'ms/process');
await host.close(1000); await server?.stop();
