import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { chromium } from 'playwright-core';
import { buildApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';

/**
 * The console's load time (issue 17): `/` with BENCH_CONSOLE_PROCESSES (default 10,000) root processes
 * present (demo.approval trees, each waiting), on an embedded server on loopback. Each run opens the
 * page in a fresh browser context (cold cache) and measures, in the page's own clock, the time from
 * navigation start until the Processes view shows its first page of rows. Printed: processes, runs,
 * p50 and max ms, and the requests the page made to /v1/ (it should be one page).
 */

const processes = Number(process.env.BENCH_CONSOLE_PROCESSES ?? 10_000);
const runs = Number(process.env.BENCH_CONSOLE_RUNS ?? 10);
const startConcurrency = 32;
const chromiumPath = '/usr/bin/chromium';

function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export async function benchConsole(): Promise<void> {
  if (!existsSync(chromiumPath)) {
    console.log(`skipped: ${chromiumPath} is absent`);
    return;
  }
  const config = loadConfig({ SCOPE_SHUTDOWN_MS: '500' });
  const host = new EngineHost({ config, defaultMetrics: false });
  const app = await buildApp({ host, config });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  try {
    const filling = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: startConcurrency }, async () => {
        while (next < processes) {
          next += 1;
          await host.startProcess({ deployment: 'demo.approval', input: { subject: `bench ${next}` } });
        }
      }),
    );
    console.log(`started ${processes} processes in ${((performance.now() - filling) / 1000).toFixed(1)} s`);
    for (const path of ['/', '/v1/processes?limit=20']) {
      const times: number[] = [];
      for (let run = 0; run < 5; run += 1) {
        const started = performance.now();
        await (await fetch(`${base}${path}`)).arrayBuffer();
        times.push(performance.now() - started);
      }
      console.log(`GET ${path}: p50 ${percentile(times, 50).toFixed(1)} ms (fetch from node, 5 runs)`);
    }
    const samples: number[] = [];
    let requests: string[] = [];
    for (let run = 0; run < runs + 1; run += 1) {
      const context = await browser.newContext();
      const tab = await context.newPage();
      const seen: string[] = [];
      tab.on('request', (request) => {
        const url = new URL(request.url());
        if (url.pathname.startsWith('/v1/')) seen.push(url.pathname + url.search);
      });
      // The page's CSP forbids eval, so the moment of the first row is recorded by an init script
      // (injected by the browser, outside the CSP) and read once the row is there.
      await tab.addInitScript({
        content: `new MutationObserver((_, observer) => {
          if (document.querySelector('tbody tr[data-process-id]') === null) return;
          window.firstRowAt = performance.now();
          observer.disconnect();
        }).observe(document, { childList: true, subtree: true });`,
      });
      await tab.goto(`${base}/#/processes`);
      await tab.waitForSelector('tbody tr[data-process-id]');
      const ms = (await tab.evaluate('window.firstRowAt')) as number;
      if (process.env.BENCH_CONSOLE_TRACE) {
        // Where the time goes: navigation, bundle, API call, long frames (ms since navigation start).
        const trace = 'JSON.stringify(performance.getEntries().map((e) => [e.name.slice(-40), e.entryType, Math.round(e.startTime), Math.round(e.duration)]))';
        console.log(await tab.evaluate(trace));
      }
      // The first run warms the server's code paths; it is not counted.
      if (run > 0) samples.push(ms);
      requests = seen;
      await context.close();
    }
    console.log(`processes  runs  p50 ms  max ms  /v1 requests of the last load`);
    console.log(
      `${String(processes).padStart(9)}  ${String(runs).padStart(4)}  ${percentile(samples, 50).toFixed(0).padStart(6)}  ${Math.max(...samples).toFixed(0).padStart(6)}  ${requests.join(' ')}`,
    );
  } finally {
    await browser.close();
    await app.close();
  }
}
