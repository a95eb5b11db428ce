/**
 * The real processes of a chaos run, all on loopback: one `redis-server` (AOF, `appendfsync
 * everysec`), API nodes (`bin/scope.js serve`, Redis mode, BullMQ transport) each on its own fixed
 * port, and `scope worker` processes. Any of them can be SIGKILLed and restarted under the same
 * name, port and node id; each start bumps the member's generation, so a caller can tell "the node
 * that answered me is still that process" from "a fresh process now listens on its port".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../test/helpers/free-port.js';
import { startRedisServer, type RedisServer } from '../../test/helpers/redis-server.js';

const launcher = new URL('../../bin/scope.js', import.meta.url).pathname;

// A safety net for a run that ends abruptly (a test timeout, ^C): never leave a node or worker behind.
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export type MemberKind = 'node' | 'worker';

/** One API node or worker: a name that survives restarts, and the process behind it now. */
export interface Member {
  readonly kind: MemberKind;
  readonly name: string;
  /** The node's URL (fixed across restarts); workers have none. */
  readonly url: string | undefined;
  /** Starts so far; a restarted member has a higher one. */
  readonly generation: number;
  /** The member's process runs and has passed its readiness check. */
  readonly up: boolean;
}

class Slot implements Member {
  readonly kind: MemberKind;
  readonly name: string;
  readonly url: string | undefined;
  readonly port: number | undefined;
  generation = 0;
  up = false;
  child: ChildProcess | undefined;
  /** The tail of the process's output, for diagnostics. */
  output: string[] = [];

  constructor(kind: MemberKind, name: string, port?: number) {
    this.kind = kind;
    this.name = name;
    this.port = port;
    this.url = port === undefined ? undefined : `http://127.0.0.1:${port}`;
  }
}

export interface ClusterOptions {
  readonly nodes: number;
  readonly workers: number;
  /** Environment of each kind of member (timing, prefix, log level). */
  readonly env: (kind: MemberKind) => Readonly<Record<string, string>>;
  /** How long a start may take before the run gives up (default 60 s). */
  readonly startTimeoutMs?: number;
}

export class Cluster {
  readonly redis: RedisServer;
  readonly #slots: Slot[];
  readonly #env: (kind: MemberKind) => Readonly<Record<string, string>>;
  readonly #startTimeoutMs: number;

  private constructor(redis: RedisServer, slots: Slot[], options: ClusterOptions) {
    this.redis = redis;
    this.#slots = slots;
    this.#env = options.env;
    this.#startTimeoutMs = options.startTimeoutMs ?? 60_000;
  }

  static async start(options: ClusterOptions): Promise<Cluster> {
    const redis = await startRedisServer({ appendOnly: true, appendFsync: 'everysec', extraArgs: ['--maxmemory-policy', 'noeviction'] });
    const slots: Slot[] = [];
    for (let index = 0; index < options.nodes; index += 1) slots.push(new Slot('node', `node-${index + 1}`, await freePort()));
    for (let index = 0; index < options.workers; index += 1) slots.push(new Slot('worker', `worker-${index + 1}`));
    const cluster = new Cluster(redis, slots, options);
    try {
      await Promise.all(slots.map((slot) => cluster.#launch(slot)));
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  get members(): readonly Member[] {
    return this.#slots;
  }

  get nodes(): readonly Member[] {
    return this.#slots.filter((slot) => slot.kind === 'node');
  }

  liveNodes(): Member[] {
    return this.#slots.filter((slot) => slot.kind === 'node' && slot.up);
  }

  liveWorkers(): Member[] {
    return this.#slots.filter((slot) => slot.kind === 'worker' && slot.up);
  }

  /** SIGKILL, and wait until the process is gone. */
  async kill(member: Member): Promise<void> {
    const slot = this.#slot(member);
    const child = slot.child;
    slot.up = false;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await gone;
  }

  /** Starts the member again under its name, port and node id. */
  async restart(member: Member): Promise<void> {
    const slot = this.#slot(member);
    if (slot.up) return;
    await this.#launch(slot);
  }

  /** The last lines a member printed (pino JSON), for a violation's explanation. */
  outputOf(member: Member): string {
    return this.#slot(member).output.join('\n');
  }

  /** Kills every process (the run is over; nothing of it needs a graceful end) and stops Redis. */
  async stop(): Promise<void> {
    await Promise.all(this.#slots.map((slot) => this.kill(slot)));
    await this.redis.stop();
  }

  #slot(member: Member): Slot {
    const slot = this.#slots.find((candidate) => candidate.name === member.name);
    if (slot === undefined) throw new Error(`no member ${member.name}`);
    return slot;
  }

  async #launch(slot: Slot): Promise<void> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      SCOPE_REDIS_URL: this.redis.url,
      SCOPE_TRANSPORT: 'bullmq',
      // A node's identity, for when nodes have one (ownership): the same across its restarts.
      SCOPE_NODE_ID: slot.name,
      ...this.#env(slot.kind),
    };
    if (slot.kind === 'node') {
      env.PORT = String(slot.port);
      env.HOST = '127.0.0.1';
      if (slot.url !== undefined) env.SCOPE_ADVERTISE_URL = slot.url;
    }
    const child = spawn(process.execPath, [launcher, slot.kind === 'node' ? 'serve' : 'worker'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    slot.child = child;
    slot.generation += 1;
    running.add(child);
    const keep = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        slot.output.push(line.length > 2_000 ? `${line.slice(0, 2_000)}…` : line);
      }
      if (slot.output.length > 200) slot.output.splice(0, slot.output.length - 200);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.once('exit', () => {
      running.delete(child);
      if (slot.child === child) slot.up = false;
    });
    try {
      await this.#ready(slot, child);
    } catch (error) {
      // A member that never became ready must not outlive the run (it would keep the test alive).
      child.kill('SIGKILL');
      throw error;
    }
    slot.up = true;
  }

  /** A node is ready when /healthz answers; a worker when it logs "scope worker ready". */
  async #ready(slot: Slot, child: ChildProcess): Promise<void> {
    const deadline = Date.now() + this.#startTimeoutMs;
    const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
    for (;;) {
      if (exited()) throw new Error(`${slot.name} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${slot.output.join('\n')}`);
      if (slot.kind === 'node') {
        try {
          if ((await fetch(`${slot.url}/healthz`, { signal: AbortSignal.timeout(2_000) })).status === 200) return;
        } catch {
          // not listening yet
        }
      } else if (slot.output.some((line) => line.includes('scope worker ready'))) {
        slot.output = slot.output.filter((line) => !line.includes('scope worker ready'));
        return;
      }
      if (Date.now() > deadline) throw new Error(`${slot.name} was not ready within ${this.#startTimeoutMs} ms:\n${slot.output.join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
