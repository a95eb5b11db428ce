import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { spawnServe } from '../helpers/scope-serve.js';

/**
 * Several real `scope serve` nodes on one test Redis, with short leases (the acceptance tests of
 * ownership, forwarding, takeover, drain and eviction: test/e2e/nodes-*.test.ts).
 */

export const leaseMs = 1_500;
export const renewMs = 250;

export interface Node {
  readonly id: string;
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything the node logged so far. */
  output(): string;
}

export class Cluster {
  readonly prefix = `nodes${process.pid}x${Math.floor(Math.random() * 1e9)}`;
  readonly #children: ChildProcess[] = [];
  #redis: RedisServer | undefined;
  #client: Redis | undefined;

  async start(): Promise<void> {
    this.#redis = await startRedisServer();
    this.#client = new Redis(this.#redis.url, { maxRetriesPerRequest: 1 });
  }

  get redis(): Redis {
    return this.#client as Redis;
  }

  async node(id: string, env: Record<string, string> = {}): Promise<Node> {
    const { child, url } = await spawnServe(
      {
        SCOPE_REDIS_URL: (this.#redis as RedisServer).url,
        SCOPE_KEY_PREFIX: this.prefix,
        SCOPE_NODE_ID: id,
        SCOPE_NODE_LEASE_MS: String(leaseMs),
        SCOPE_NODE_RENEW_MS: String(renewMs),
        SCOPE_SHUTDOWN_MS: '3000',
        ...env,
      },
      (spawned) => this.#children.push(spawned),
    );
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    return { id, url, child, output: () => output };
  }

  async stop(): Promise<void> {
    for (const child of this.#children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    this.#client?.disconnect();
    await this.#redis?.stop();
  }
}

export async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise((resolve) => child.once('exit', resolve));
}

export async function json(response: Response): Promise<any> {
  const text = await response.text();
  return text === '' ? undefined : JSON.parse(text);
}

export function post(url: string, body?: unknown): Promise<Response> {
  return body === undefined
    ? fetch(url, { method: 'POST' })
    : fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

export function processUrl(node: Node, id: string, rest = ''): string {
  return `${node.url}/v1/processes/${encodeURIComponent(id)}${rest}`;
}

export function treeUrl(node: Node, id: string, rest = ''): string {
  return `${node.url}/v1/trees/${encodeURIComponent(id)}${rest}`;
}

export async function startProcess(node: Node, deployment: string, input: unknown): Promise<string> {
  const response = await post(`${node.url}/v1/processes`, { deployment, input });
  assert.equal(response.status, 201, await response.clone().text());
  return (await json(response)).processId as string;
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs `check`; when it fails, the error carries the tail of each node's log (a cluster failure is rarely explained by one node). */
export async function explained<T>(nodes: readonly Node[], check: () => Promise<T>): Promise<T> {
  try {
    return await check();
  } catch (error) {
    const logs = nodes.map((node) => `--- node ${node.id} (last 6000 characters of its log)\n${node.output().slice(-6_000)}`).join('\n');
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${logs}`, { cause: error });
  }
}

export async function waitingWaitId(node: Node, id: string): Promise<string> {
  return eventually(async () => {
    const view = await json(await fetch(processUrl(node, id)));
    return view.status === 'waiting' && typeof view.waitId === 'string' ? (view.waitId as string) : undefined;
  }, `${id} waiting`);
}

/** The owner record of a tree, as stored. */
export async function ownerOf(cluster: Cluster, root: string): Promise<{ node: string; epoch: number; incarnation: string } | undefined> {
  const text = await cluster.redis.get(`${cluster.prefix}:{${root}}:record:owner`);
  return text === null ? undefined : JSON.parse(text);
}

/** Which node holds the tree in memory (GET /v1/trees says `active` there). */
export async function activeOn(nodes: readonly Node[], root: string): Promise<Node[]> {
  const views = await Promise.all(nodes.map(async (node) => (await json(await fetch(treeUrl(node, root)))).active === true));
  return nodes.filter((_node, index) => views[index]);
}

export async function committedNames(node: Node, id: string): Promise<string[]> {
  const page = await json(await fetch(processUrl(node, id, '/events?limit=1000')));
  return (page.items as Array<{ type: string }>).map((entry) => entry.type);
}
