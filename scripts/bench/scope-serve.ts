import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../test/helpers/free-port.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface BenchServer {
  readonly base: string;
  /** The server's process id (e.g. to read its CPU time from /proc). */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/**
 * A real `scope serve` on a free loopback port with `env` over the bench's own environment, once its
 * /readyz answers (30 s at most). `nodeFlags` go to node before the launcher (e.g. `--cpu-prof`);
 * `checkout` is the repository whose server runs (default this one; another worktree compares its code).
 */
export async function startBenchServer(env: Record<string, string>, nodeFlags: readonly string[] = [], checkout = root): Promise<BenchServer> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [...nodeFlags, join(checkout, 'bin', 'scope.js'), 'serve'], {
    cwd: checkout,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', SCOPE_LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  killedOnExit(child);
  const base = `http://127.0.0.1:${port}`;
  const exited = once(child, 'exit');
  const deadline = performance.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`scope serve exited with ${child.exitCode} before it was ready`);
    try {
      if ((await fetch(`${base}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('scope serve did not become ready within 30 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    base,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A bench that dies, or exits without stopping what it started, leaves no child process behind. */
export function killedOnExit(child: ChildProcess): void {
  const orphan = (): void => void child.kill('SIGKILL');
  process.once('exit', orphan);
  child.once('exit', () => process.off('exit', orphan));
}

/** A node process (`args` after node itself, from the current directory) once its stdout has printed `ready`. */
export function spawnReady(args: string[], env: Record<string, string>, ready: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  killedOnExit(child);
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(ready)) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code}): ${output}`)));
  });
}
