import { spawn, type ChildProcess } from 'node:child_process';

const launcher = new URL('../../bin/scope.js', import.meta.url).pathname;

/**
 * Spawns the real CLI, `bin/scope.js serve`, on any free port with exactly `env` (plus PATH), and
 * resolves once it logs "scope listening on" (the URL read from that JSON line), or rejects with its
 * output if it exits first. `track` sees the child at once (so a test's cleanup kills one that never
 * gets to listen); the caller kills the child. `entry` replaces the launcher (the compiled
 * `dist/src/app/cli.js`, say).
 */
export async function spawnServe(env: Readonly<Record<string, string>>, track?: (child: ChildProcess) => void, entry = launcher): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [entry, 'serve'], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', SCOPE_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track?.(child);
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const scan = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const line = output.split('\n').find((candidate) => candidate.includes('scope listening on'));
      if (line !== undefined) resolve((JSON.parse(line) as { url: string }).url);
    };
    child.stdout?.on('data', scan);
    child.stderr?.on('data', scan);
    child.once('exit', (code) => reject(new Error(`scope serve exited (${code}) before listening:\n${output}`)));
  });
  return { child, url };
}
