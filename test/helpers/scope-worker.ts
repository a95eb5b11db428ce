/**
 * A real `scope worker` child process for tests: spawned with `bin/scope.js worker`, resolved once it
 * logged `scope worker ready` (it joined the worker registry before saying so), with its worker id
 * read from that log line. Its stdout log lines are the barriers, never sleeps.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

export interface WorkerChild {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The id it heartbeats the registry under (`host:pid:random`). */
  readonly workerId: string;
  /** Everything it logged so far. */
  output(): string;
  /** SIGKILL, resolved once it exited. */
  kill(): Promise<void>;
  /** SIGTERM (a graceful stop), resolved once it exited. */
  stop(): Promise<void>;
}

/** `entry` replaces the launcher (the compiled `dist/src/app/cli.js`, say). */
export async function spawnScopeWorker(env: Record<string, string>, entry = 'bin/scope.js'): Promise<WorkerChild> {
  const child = spawn(process.execPath, [entry, 'worker'], { env: { ...process.env, SCOPE_LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let text = '';
  const exited = once(child, 'exit');
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const line = text.split('\n').find((entry) => entry.includes('"msg":"scope worker ready"'));
      if (line !== undefined) resolve((JSON.parse(line) as { workerId: string }).workerId);
    });
    void exited.then(([code]) => reject(new Error(`scope worker exited (${String(code)}) before it was ready: ${text}`)));
  });
  const end = async (signal: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  try {
    const workerId = await ready;
    return { child, pid: child.pid as number, workerId, output: () => text, kill: () => end('SIGKILL'), stop: () => end('SIGTERM') };
  } catch (error) {
    await end('SIGKILL');
    throw error;
  }
}
