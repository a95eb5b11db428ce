import { spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

/**
 * Starts a private `redis-server` for tests and benchmarks: a free port on 127.0.0.1, its own temp
 * directory (`--dir`), no RDB snapshots (`--save ""`), AOF on or off as asked. Readiness is
 * observed, not timed: the server's "Ready to accept connections" line, then a PING answered with
 * PONG on a fresh socket. Never touches a Redis on 6379.
 */

export interface RedisServerOptions {
  /** `--appendonly yes` (default false). */
  readonly appendOnly?: boolean;
  /** `--appendfsync` (default everysec, Redis's own default). */
  readonly appendFsync?: 'always' | 'everysec' | 'no';
  /** Further `--name value` arguments. */
  readonly extraArgs?: readonly string[];
  /** Startup deadline (default 10 s). */
  readonly startTimeoutMs?: number;
  /** `--requirepass`: clients must AUTH (the url carries it as `redis://:<password>@…`). */
  readonly password?: string;
}

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  readonly pid: number | undefined;
  /** Graceful stop (SIGTERM), waits for exit. Idempotent. Removes the directory unless `keepDir`. */
  stop(options?: { keepDir?: boolean }): Promise<void>;
  /** Sends `signal`; for a terminating signal (default SIGKILL) waits until the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGSTOP: the server keeps its sockets but answers nothing. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** Starts the server again on the same port and directory (after kill or stop({keepDir})). */
  restart(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A safety net for a crashed test file: never leave a redis-server behind.
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

/** Spawns `redis-server args`, killed when this process exits (a crashed test file leaves none behind). */
export function spawnRedisServer(args: readonly string[], stdio: StdioOptions): ChildProcess {
  installExitHook();
  const child = spawn('redis-server', args, { stdio });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** Throws a readable error when `redis-server` cannot be run. */
export function requireRedisServer(): void {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error(
      'redis-server is not on PATH (these tests start their own Redis on a free port). ' +
        'Install it, e.g. `apt-get install redis-server` or `brew install redis`, then rerun.' +
        (probe.error !== undefined ? ` (${probe.error.message})` : ''),
    );
  }
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    let reply = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('error', () => done(false));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      // With a password set, the refusal to an unauthenticated PING shows the server answering just as well.
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG') || reply.startsWith('-NOAUTH'));
    });
    socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
  });
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Spawns redis-server and resolves once it answers PING; rejects with its log otherwise. */
function launch(port: number, dir: string, options: RedisServerOptions): Promise<ChildProcess> {
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', dir,
    '--save', '',
    '--appendonly', options.appendOnly === true ? 'yes' : 'no',
    '--appendfsync', options.appendFsync ?? 'everysec',
    '--daemonize', 'no',
    '--protected-mode', 'yes',
    '--loglevel', 'notice',
    ...(options.password === undefined ? [] : ['--requirepass', options.password]),
    ...(options.extraArgs ?? []),
  ];
  const child = spawnRedisServer(args, ['ignore', 'pipe', 'pipe']);
  let log = '';
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => fail(`did not become ready within ${options.startTimeoutMs ?? 10_000} ms`), options.startTimeoutMs ?? 10_000);
    let settled = false;
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      child.kill('SIGKILL');
      reject(new Error(`redis-server on port ${port} ${why}\n${log}`));
    };
    const onOutput = (chunk: Buffer): void => {
      log += chunk.toString('utf8');
      if (!settled && log.includes('Ready to accept connections')) {
        void ping(port).then((ok) => {
          if (settled) return;
          if (!ok) return fail('printed ready but did not answer PING');
          settled = true;
          clearTimeout(deadline);
          child.stdout?.off('data', onOutput);
          child.stdout?.resume();
          resolve(child);
        });
      }
    };
    child.stdout?.on('data', onOutput);
    child.stderr?.on('data', (chunk: Buffer) => {
      log += chunk.toString('utf8');
    });
    child.once('error', (error) => fail(`could not start: ${error.message}`));
    child.once('exit', (code, signal) => fail(`exited early (code ${code}, signal ${signal})`));
  });
}

/** Starts a private redis-server; call `stop()` in an `after` hook. */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  requireRedisServer();
  installExitHook();
  const dir = mkdtempSync(join(tmpdir(), 'scope-redis-'));
  let port = 0;
  let child: ChildProcess | undefined;
  let lastError: unknown;
  // A port found free can be taken before redis binds it: try a few.
  for (let attempt = 0; attempt < 5 && child === undefined; attempt += 1) {
    port = await freePort();
    try {
      child = await launch(port, dir, options);
    } catch (error) {
      lastError = error;
    }
  }
  if (child === undefined) {
    rmSync(dir, { recursive: true, force: true });
    throw lastError;
  }
  let current: ChildProcess | undefined = child;
  let removed = false;
  const server: RedisServer = {
    url: options.password === undefined ? `redis://127.0.0.1:${port}` : `redis://:${encodeURIComponent(options.password)}@127.0.0.1:${port}`,
    port,
    dir,
    get pid() {
      return current?.pid;
    },
    async stop(stopOptions = {}) {
      const running = current;
      current = undefined;
      if (running !== undefined) {
        if (running.exitCode === null && running.signalCode === null) {
          running.kill('SIGCONT'); // a paused server would never act on SIGTERM
          running.kill('SIGTERM');
        }
        await waitForExit(running);
      }
      if (stopOptions.keepDir !== true && !removed) {
        removed = true;
        rmSync(dir, { recursive: true, force: true });
      }
    },
    async kill(signal = 'SIGKILL') {
      const running = current;
      if (running === undefined) return;
      running.kill(signal);
      if (signal === 'SIGSTOP' || signal === 'SIGCONT') return;
      await waitForExit(running);
      current = undefined;
    },
    pause() {
      current?.kill('SIGSTOP');
    },
    resume() {
      current?.kill('SIGCONT');
    },
    async restart() {
      if (current !== undefined) throw new Error('redis-server is still running; kill or stop it first');
      if (removed) throw new Error('the server directory was removed; stop({ keepDir: true }) before a restart');
      current = await launch(port, dir, options);
    },
  };
  return server;
}

// ---------------------------------------------------------------------------------------------
// Redis Cluster key slots, computed independently of Redis: CRC16/XMODEM (poly 0x1021, init 0,
// no reflection) of the hash tag — the part between the first `{` and the next `}` when that part
// is non-empty, else the whole key — modulo 16384.

const crcTable = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte += 1) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

/** CRC16/XMODEM of `data`. */
export function crc16(data: Uint8Array): number {
  let crc = 0;
  for (const byte of data) crc = ((crc << 8) & 0xffff) ^ (crcTable[((crc >> 8) ^ byte) & 0xff] as number);
  return crc;
}

/** The substring Redis Cluster hashes for `key`. */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/** The Redis Cluster slot of `key`. */
export function clusterSlot(key: string): number {
  return crc16(Buffer.from(hashTagOf(key), 'utf8')) % 16384;
}
