/**
 * `bin/scope.js serve` as a child process on a free port, the way an operator runs it: its log
 * lines are kept (pino JSON on stdout; anything on stderr is suspect), its resident memory is
 * sampled from /proc/<pid>/status, and whether it is still alive can be asked at any time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { freePort } from '../../test/helpers/free-port.js';

const launcher = new URL('../../bin/scope.js', import.meta.url).pathname;

export interface ScopeServer {
  readonly url: URL;
  readonly pid: number;
  /** Log lines at level error or above, and non-JSON stderr output, since the last call. */
  takeAlarms(): string[];
  alive(): boolean;
  /** Largest VmRSS seen so far, in bytes. */
  maxRss(): number;
  /** SIGTERM and wait for the exit; resolves with the exit code (or signal). */
  stop(): Promise<string>;
  /** Why the process ended, when it did. */
  exitDescription(): string | undefined;
}

/** Resolves once GET /healthz answers 200 (the server logs at warn, so no listening line is seen). */
async function ready(url: URL, exited: () => string | undefined, log: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const why = exited();
    if (why !== undefined) throw new Error(`scope serve ended (${why}) before listening:\n${log()}`);
    try {
      if ((await fetch(new URL('/healthz', url))).status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`scope serve did not become ready within 30 s:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function startScopeServer(env: Record<string, string>): Promise<ScopeServer> {
  const port = await freePort();
  // warn: request logs would cost the server more than the fuzzing does; errors are what is watched.
  const child: ChildProcess = spawn(process.execPath, [launcher, 'serve'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), SCOPE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const alarms: string[] = [];
  let exit: string | undefined;
  let stdoutRest = '';
  let log = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdoutRest += chunk.toString('utf8');
    const lines = stdoutRest.split('\n');
    stdoutRest = lines.pop() ?? '';
    for (const line of lines) {
      if (process.env.FUZZ_SERVER_LOG) appendFileSync(process.env.FUZZ_SERVER_LOG, `${line}\n`);
      if (log.length < 20_000) log += `${line}\n`;
      let entry: { level?: number } | undefined;
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        if (line.trim() !== '') alarms.push(`stdout: ${line.slice(0, 500)}`);
        continue;
      }
      if ((entry?.level ?? 0) >= 50) alarms.push(`log: ${line.slice(0, 1000)}`);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    if (log.length < 20_000) log += text;
    alarms.push(`stderr: ${text.slice(0, 1000)}`);
  });
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = signal === null ? `exit code ${code}` : `signal ${signal}`;
      resolve(exit);
    });
  });
  const url = new URL(`http://127.0.0.1:${port}`);
  await ready(url, () => exit, () => log);
  const pid = child.pid!;
  let maxRss = 0;
  const sample = (): void => {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (match !== null) maxRss = Math.max(maxRss, Number(match[1]) * 1024);
    } catch {
      // the process is gone; its exit is reported elsewhere
    }
  };
  sample();
  const sampler = setInterval(sample, 100);
  sampler.unref();
  return {
    url,
    pid,
    takeAlarms: () => alarms.splice(0),
    alive: () => exit === undefined,
    maxRss: () => {
      sample();
      return maxRss;
    },
    async stop() {
      clearInterval(sampler);
      if (exit === undefined) child.kill('SIGTERM');
      return exited;
    },
    exitDescription: () => exit,
  };
}
