import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

/**
 * The console's load time (issue 17): `/` with BENCH_CONSOLE_PROCESSES (default 10,000) root processes
 * present (demo.approval trees, each waiting), on a real `scope serve` (embedded mode) on loopback. Each
 * run opens `/#/processes` in a fresh browser context (cold cache) and measures, in the page's own
 * clock, the time from navigation start until the first row of the Processes view is painted (its
 * Element Timing render time: what a user sees, not the earlier moment the row entered the DOM).
 * Printed: processes, runs, p50 and max ms, and the requests the page made to /v1/ (it should be one).
 *
 * The server runs in its own process, as a user's would: in the bench's process its event loop would
 * also carry the browser driver's protocol traffic. Nothing is evaluated in the page while it loads
 * (Playwright's selector engine is a large script; injected mid-load it delays the very frame being
 * measured): a small init script observes the row and reports the time on the console.
 *
 * BENCH_CONSOLE_BASE=<checkout> also serves another worktree (say, main's HEAD) and alternates the runs
 * between the two, printing both and the ratio this/base from the same run. BENCH_CONSOLE_TRACE=1 prints
 * where each load's time went (navigation, resources, long animation frames, paints). BENCH_CONSOLE_CPU=1
 * records a Chromium trace of each load and adds the CPU time (thread time, not wall time) the page's
 * renderer main thread spent from the navigation request to the row's paint: a figure that a busy,
 * shared machine disturbs far less than the wall clock (tracing slows the load itself, so take the
 * wall figures from a run without it).
 */

const processes = Number(process.env.BENCH_CONSOLE_PROCESSES ?? 10_000);
const runs = Number(process.env.BENCH_CONSOLE_RUNS ?? 10);
const base = process.env.BENCH_CONSOLE_BASE;
const cpu = process.env.BENCH_CONSOLE_CPU !== undefined && process.env.BENCH_CONSOLE_CPU !== '';
const chromiumPath = '/usr/bin/chromium';

function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

interface BenchServer {
  readonly base: string;
  stop(): Promise<void>;
}

/**
 * An embedded server from `checkout` in a child process (console-server.ts), with `processes`
 * demo.approval roots started, once it says it listens.
 */
async function startServer(label: string, checkout: string): Promise<BenchServer> {
  const script = join(dirname(fileURLToPath(import.meta.url)), 'console-server.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', script, checkout, String(processes)], {
    cwd: checkout,
    env: { ...process.env, SCOPE_LOG_LEVEL: 'error' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) child.stdin?.end();
    await exited;
  };
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  for await (const line of lines) {
    const [word, url, seconds] = line.split(' ');
    if (word !== 'listening' || url === undefined) continue;
    console.log(`${label}: started ${processes} processes in ${seconds} s (${checkout})`);
    return { base: url, stop };
  }
  await stop();
  throw new Error(`the ${label} server exited before it listened`);
}

/**
 * Runs in the page before its own scripts (injected by the browser, outside the page's CSP). When the
 * first row enters the DOM it marks the row's first cell for Element Timing (Chromium attributes text
 * to its block, the cell, not the inline link in it); the paint of that text is the moment reported
 * (`scope-bench-row <ms>`).
 */
const observeFirstRow = `(() => {
  new PerformanceObserver((list, observer) => {
    const entry = list.getEntries().find((e) => e.identifier === 'scope-bench-row');
    if (entry === undefined) return;
    observer.disconnect();
    performance.mark('scope-bench-row-painted');
    console.debug('scope-bench-row ' + (entry.renderTime || entry.loadTime));
  }).observe({ type: 'element', buffered: true });
  new MutationObserver((_, observer) => {
    const cell = document.querySelector('tbody tr[data-process-id] td');
    if (cell === null) return;
    observer.disconnect();
    window.scopeBenchRowInDom = performance.now();
    cell.setAttribute('elementtiming', 'scope-bench-row');
  }).observe(document, { childList: true, subtree: true });
})();`;

/** Where one load's time went, read after the row was painted. */
const traceScript = `JSON.stringify((() => {
  const r = (x) => Math.round(x);
  const nav = performance.getEntriesByType('navigation')[0];
  return {
    rowInDom: r(window.scopeBenchRowInDom),
    nav: { request: r(nav.requestStart), response: r(nav.responseStart), responseEnd: r(nav.responseEnd), domInteractive: r(nav.domInteractive), domContentLoaded: r(nav.domContentLoadedEventEnd) },
    resources: performance.getEntriesByType('resource').map((e) => [e.name.replace(/^.*\\//, ''), r(e.startTime), r(e.responseStart), r(e.responseEnd)]),
    paints: performance.getEntriesByType('paint').map((e) => [e.name, r(e.startTime)]),
    frames: performance.getEntriesByType('long-animation-frame').map((e) => ({ start: r(e.startTime), ms: r(e.duration), render: r(e.renderStart), scripts: e.scripts.map((s) => [s.invoker.slice(-40), r(s.startTime), r(s.duration)]) })),
  };
})())`;

interface Load {
  readonly ms: number;
  /** The renderer main thread's CPU ms until the paint (BENCH_CONSOLE_CPU), else undefined. */
  readonly cpuMs: number | undefined;
  readonly requests: readonly string[];
}

interface TraceEvent {
  readonly name: string;
  readonly ph: string;
  readonly pid: number;
  readonly tid: number;
  readonly ts: number;
  readonly dur?: number;
  readonly tdur?: number;
  readonly args?: { readonly name?: string; readonly data?: { readonly resourceType?: string; readonly url?: string } };
}

/** Sums the thread time of the outermost tasks on the page's main thread from its navigation request to the paint mark. */
function mainThreadCpuMs(trace: Buffer, url: string): number | undefined {
  const events = (JSON.parse(trace.toString()) as { traceEvents: TraceEvent[] }).traceEvents;
  const navigation = events.find((e) => e.name === 'ResourceSendRequest' && e.args?.data?.resourceType === 'Document' && e.args.data.url === url);
  const mark = events.find((e) => e.name === 'scope-bench-row-painted');
  if (navigation === undefined || mark === undefined) return undefined;
  const main = events.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === mark.pid && e.args?.name === 'CrRendererMain');
  if (main === undefined) return undefined;
  const tasks = events
    .filter((e) => e.pid === main.pid && e.tid === main.tid && e.ph === 'X' && e.name === 'ThreadControllerImpl::RunTask' && e.ts >= navigation.ts && e.ts < mark.ts)
    .sort((a, b) => a.ts - b.ts);
  let sum = 0;
  let until = 0;
  for (const task of tasks) {
    if (task.ts < until) continue; // nested in the previous task
    sum += task.tdur ?? 0;
    until = task.ts + (task.dur ?? 0);
  }
  return sum / 1000;
}

async function load(browser: Browser, server: BenchServer, label: string): Promise<Load> {
  const context = await browser.newContext();
  try {
    const tab = await context.newPage();
    const requests: string[] = [];
    tab.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname.startsWith('/v1/')) requests.push(url.pathname + url.search);
    });
    await tab.addInitScript({ content: observeFirstRow });
    const painted = tab.waitForEvent('console', { predicate: (message) => message.text().startsWith('scope-bench-row '), timeout: 30_000 });
    const url = `${server.base}/#/processes`;
    if (cpu) await browser.startTracing(tab, { categories: ['devtools.timeline', 'toplevel', 'blink.user_timing'] });
    await tab.goto(url, { waitUntil: 'commit' });
    const ms = Number((await painted).text().split(' ')[1]);
    const cpuMs = cpu ? mainThreadCpuMs(await browser.stopTracing(), url) : undefined;
    if (process.env.BENCH_CONSOLE_TRACE) console.log(`${label} ${Math.round(ms)} ms ${(await tab.evaluate(traceScript)) as string}`);
    return { ms, cpuMs, requests };
  } finally {
    await context.close();
  }
}

interface Served {
  readonly label: string;
  readonly server: BenchServer;
  readonly samples: number[];
  readonly cpuSamples: number[];
  requests: readonly string[];
}

export async function benchConsole(): Promise<void> {
  if (!existsSync(chromiumPath)) {
    console.log(`skipped: ${chromiumPath} is absent`);
    return;
  }
  const served: Served[] = [];
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  try {
    for (const [label, checkout] of [['this', resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')], ...(base === undefined ? [] : [['base', resolve(base)]])] as const) {
      const server = await startServer(label, checkout);
      served.push({ label, server, samples: [], cpuSamples: [], requests: [] });
      for (const path of ['/', '/v1/processes?limit=20']) {
        const times: number[] = [];
        for (let run = 0; run < 5; run += 1) {
          const started = performance.now();
          await (await fetch(`${server.base}${path}`)).arrayBuffer();
          times.push(performance.now() - started);
        }
        console.log(`${label}: GET ${path}: p50 ${percentile(times, 50).toFixed(1)} ms (fetch from node, 5 runs)`);
      }
    }
    // The first round warms the servers' code paths and the browser; it is not counted. The servers
    // take turns run by run, so a change in the machine's load touches both alike.
    for (let run = 0; run < runs + 1; run += 1) {
      for (const entry of run % 2 === 0 ? served : [...served].reverse()) {
        const { ms, cpuMs, requests } = await load(browser, entry.server, entry.label);
        if (run > 0) entry.samples.push(ms);
        if (run > 0 && cpuMs !== undefined) entry.cpuSamples.push(cpuMs);
        entry.requests = requests;
      }
    }
    console.log(`server  processes  runs  p50 ms  max ms${cpu ? '  p50 main-thread CPU ms' : ''}  /v1 requests of the last load`);
    for (const { label, samples, cpuSamples, requests } of served) {
      const cpuColumn = cpu ? `  ${(cpuSamples.length === 0 ? '-' : percentile(cpuSamples, 50).toFixed(0)).padStart(22)}` : '';
      console.log(
        `${label.padEnd(6)}  ${String(processes).padStart(9)}  ${String(runs).padStart(4)}  ${percentile(samples, 50).toFixed(0).padStart(6)}  ${Math.max(...samples).toFixed(0).padStart(6)}${cpuColumn}  ${requests.join(' ')}`,
      );
    }
    const [mine, other] = served;
    if (mine !== undefined && other !== undefined) {
      const cpuRatio = cpu && mine.cpuSamples.length > 0 && other.cpuSamples.length > 0 ? `, main-thread CPU p50 ${(percentile(mine.cpuSamples, 50) / percentile(other.cpuSamples, 50)).toFixed(2)}` : '';
      console.log(`ratio this/base: p50 ${(percentile(mine.samples, 50) / percentile(other.samples, 50)).toFixed(2)}${cpuRatio}`);
    }
  } finally {
    await browser.close();
    await Promise.all(served.map(({ server }) => server.stop()));
  }
}
