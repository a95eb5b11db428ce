import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { requireRedisServer, spawnRedisServer } from './redis-server.js';

/**
 * Starts a private Redis Cluster for tests: three masters (and, if asked, one replica each) on free ports of 127.0.0.1,
 * each `--cluster-enabled yes` with its own temp directory and node config file, AOF and RDB off.
 * The slots are assigned directly (`CLUSTER ADDSLOTSRANGE` on each node, then `CLUSTER MEET`), which
 * needs no TTY and no confirmation, unlike `redis-cli --cluster create`, and takes well under a
 * second. A node is up once the server answering on its port reports the pid we spawned. Ready means
 * `cluster_state:ok` and all 16384 slots assigned on every node, observed by polling `CLUSTER INFO`
 * against a deadline; with replicas, also every master listing its replica online.
 */

export interface RedisClusterNode {
  readonly port: number;
  readonly url: string;
  /** A replica's master (absent for a master). */
  readonly masterPort?: number;
}

export interface RedisCluster {
  /** The masters, then the replicas (if any). */
  readonly nodes: readonly RedisClusterNode[];
  /** The masters' URLs, comma-separated (the `SCOPE_REDIS_CLUSTER` form). */
  readonly urls: string;
  /** SIGKILLs one node and waits for its exit. */
  kill(port: number): Promise<void>;
  /** SIGSTOP (`true`) or SIGCONT (`false`) to one node. */
  pause(port: number, paused: boolean): void;
  /** Stops every node (SIGTERM, waits for exit) and removes the directories. Idempotent. */
  stop(): Promise<void>;
}

const slotCount = 16_384;
function cli(port: number, ...args: string[]): string {
  const result = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8', timeout: 5_000 });
  if (result.error !== undefined) throw new Error(`redis-cli ${args.join(' ')} on ${port}: ${result.error.message}`);
  if (result.status !== 0 || result.stdout.startsWith('ERR')) throw new Error(`redis-cli ${args.join(' ')} on ${port}: ${result.stdout}${result.stderr}`);
  return result.stdout;
}

/**
 * The pid of the redis-server answering on `port`, or undefined when none answers. Readiness compares
 * it with the pid we spawned: a PING alone cannot tell our node from another test file's server that
 * won the race for the same free port (ours then exits, but may not have yet).
 */
function serverPid(port: number): number | undefined {
  const result = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'INFO', 'server'], { encoding: 'utf8', timeout: 2_000 });
  if (result.status !== 0) return undefined;
  const match = /^process_id:(\d+)/m.exec(result.stdout);
  return match === null ? undefined : Number(match[1]);
}

/** Polls `check` until it holds; `what` may be a function, read at the deadline, that tells what was last seen. */
async function until(what: string | (() => string), deadlineMs: number, check: () => boolean): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`redis cluster: ${typeof what === 'string' ? what : what()} not reached within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function launch(port: number, dir: string, nodeTimeoutMs: number): ChildProcess {
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', dir,
    '--cluster-enabled', 'yes',
    '--cluster-config-file', `nodes-${port}.conf`,
    '--cluster-node-timeout', String(nodeTimeoutMs),
    '--repl-diskless-sync-delay', '0',
    '--save', '',
    '--appendonly', 'no',
    '--daemonize', 'no',
    '--loglevel', 'warning',
  ];
  return spawnRedisServer(args, 'ignore');
}

/** Attempts at a node before giving up: each lost race for a free port costs one. */
const launchAttempts = 5;

/**
 * Launches one node on a free port and waits until that very process answers on it. A node that
 * exits first lost its port (data or bus, the port + 10000) to another process between `freePort`
 * and its bind; it is retried on a fresh port.
 */
async function launchNode(dir: string, nodeTimeoutMs: number, timeoutMs: number): Promise<{ port: number; child: ChildProcess }> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    const child = launch(port, dir, nodeTimeoutMs);
    let exited = false;
    try {
      await until(`redis-server ${child.pid} answering on ${port}`, timeoutMs, () => {
        exited = child.exitCode !== null || child.signalCode !== null;
        return exited || serverPid(port) === child.pid;
      });
    } catch (error) {
      child.kill('SIGKILL'); // not yet among the cluster's children, so stop() would not end it
      throw error;
    }
    if (!exited) return { port, child };
    if (attempt === launchAttempts) throw new Error(`redis cluster: no node could start in ${launchAttempts} attempts (the last, on port ${port}, exited with ${child.exitCode ?? child.signalCode})`);
  }
}

/** Starts a 3-master cluster; call `stop()` in an `after` hook. */
export interface RedisClusterOptions {
  /** Masters (default 3). */
  readonly masters?: number;
  /** One replica per master (default false). */
  readonly replicas?: boolean;
  /** `cluster-node-timeout` (default 5000): how soon a silent master is failed over to its replica. */
  readonly nodeTimeoutMs?: number;
  /** Startup deadline (default 15 s). */
  readonly startTimeoutMs?: number;
}

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  requireRedisServer();
  const masters = options.masters ?? 3;
  const timeoutMs = options.startTimeoutMs ?? 15_000;
  const dir = mkdtempSync(join(tmpdir(), 'scope-redis-cluster-'));
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  const replicaPorts: number[] = [];
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      child.kill('SIGCONT'); // a paused node would never act on SIGTERM
      child.kill('SIGTERM');
    }
    await Promise.all(children.map(waitForExit));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const nodeCount = options.replicas === true ? 2 * masters : masters;
    for (let index = 0; index < nodeCount; index += 1) {
      const node = await launchNode(dir, options.nodeTimeoutMs ?? 5_000, timeoutMs);
      children.push(node.child);
      (index < masters ? ports : replicaPorts).push(node.port);
    }
    // Contiguous slot ranges, one per master, then every node meets the first.
    for (const [index, port] of ports.entries()) {
      const first = Math.floor((index * slotCount) / masters);
      const last = Math.floor(((index + 1) * slotCount) / masters) - 1;
      cli(port, 'CLUSTER', 'ADDSLOTSRANGE', String(first), String(last));
    }
    const [seed] = ports as [number];
    const all = [...ports, ...replicaPorts];
    for (const port of all.slice(1)) cli(port, 'CLUSTER', 'MEET', '127.0.0.1', String(seed));
    let knownNodes: string[] = [];
    await until(() => `every node knows every node (${all.length}; known: ${knownNodes.join(', ')})`, timeoutMs, () => {
      knownNodes = all.map((port) => `${port}: ${/cluster_known_nodes:(\d+)/.exec(cli(port, 'CLUSTER', 'INFO'))?.[1] ?? '?'}`);
      return knownNodes.every((entry) => entry.endsWith(`: ${all.length}`));
    });
    for (const [index, port] of replicaPorts.entries()) {
      const masterId = cli(ports[index] as number, 'CLUSTER', 'MYID').trim();
      cli(port, 'CLUSTER', 'REPLICATE', masterId);
    }
    await until('cluster_state:ok on every node', timeoutMs, () =>
      all.every((port) => {
        const info = cli(port, 'CLUSTER', 'INFO');
        return info.includes('cluster_state:ok') && info.includes(`cluster_slots_assigned:${slotCount}`);
      }),
    );
    await until('every replica online', timeoutMs, () =>
      replicaPorts.length === 0 || ports.every((port) => /connected_slaves:1\b/.test(cli(port, 'INFO', 'replication')) && /slave0:.*state=online/.test(cli(port, 'INFO', 'replication'))),
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const masterNodes = ports.map((port) => Object.freeze({ port, url: `redis://127.0.0.1:${port}` }));
  const replicaNodes = replicaPorts.map((port, index) => Object.freeze({ port, url: `redis://127.0.0.1:${port}`, masterPort: ports[index] as number }));
  const childOf = (port: number): ChildProcess => {
    const child = children[[...ports, ...replicaPorts].indexOf(port)];
    if (child === undefined) throw new Error(`no cluster node on ${port}`);
    return child;
  };
  const kill = async (port: number): Promise<void> => {
    const child = childOf(port);
    child.kill('SIGKILL');
    await waitForExit(child);
  };
  const pause = (port: number, paused: boolean): void => {
    childOf(port).kill(paused ? 'SIGSTOP' : 'SIGCONT');
  };
  return { nodes: [...masterNodes, ...replicaNodes], urls: masterNodes.map((node) => node.url).join(','), kill, pause, stop };
}
