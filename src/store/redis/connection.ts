import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';
import { codedError, HostErrorCode } from '../../errors.js';
import { luaScripts } from './scripts.js';

/**
 * The one place a Redis connection is opened (only `src/store/` imports ioredis). The rest of the
 * server holds a {@link RedisClient} it got from here or from a test, and hands it to the stores.
 * A client is one Redis server or a Redis Cluster: every store command names keys of one hash slot
 * (a tree's keys share `{<root>}`; keys that span trees are single-key commands), so the stores
 * run unchanged on either.
 */
export type RedisClient = Redis | Cluster;

/** Where to connect: one `redis://` URL, or the seed URLs of a Redis Cluster (`SCOPE_REDIS_CLUSTER`). */
export type RedisTarget = string | { readonly cluster: readonly string[] };

export interface RedisConnectionOptions {
  /**
   * The name each connection gives itself (`CLIENT SETNAME`), so `CLIENT LIST` tells a node's
   * connections apart by purpose: `scope-api` (stores), `scope-api-tail` (the shared log tail, named
   * after the client it duplicates), `scope-guards`, `scope-worker`.
   */
  readonly name?: string;
  /** Each distinct connection error, once until the connection is ready again (ioredis reconnects by itself). */
  readonly onError?: (error: Error) => void;
}

const commandOptions = { maxRetriesPerRequest: 3, enableOfflineQueue: true } as const;

/** True for a Redis Cluster client. */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

/**
 * Seed nodes and the per-node options (credentials, TLS) of cluster URLs. Every URL must carry the
 * same scheme and credentials: a cluster client uses one set for every node it discovers.
 */
export function clusterSeeds(urls: readonly string[]): { nodes: ClusterNode[]; redisOptions: RedisOptions } {
  if (urls.length === 0) throw new TypeError('a Redis Cluster needs at least one seed URL');
  const parsed = urls.map((text) => new URL(text));
  const [first] = parsed as [URL, ...URL[]];
  for (const url of parsed) {
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new TypeError(`cluster seed ${url.host}: expected redis:// or rediss://`);
    if (url.protocol !== first.protocol || url.username !== first.username || url.password !== first.password) {
      throw new TypeError('every cluster seed URL must use the same scheme and credentials');
    }
    if (url.pathname !== '' && url.pathname !== '/' && url.pathname !== '/0') throw new TypeError(`cluster seed ${url.host}: a cluster has only database 0`);
  }
  const nodes = parsed.map((url) => ({ host: url.hostname, port: url.port === '' ? 6379 : Number(url.port) }));
  const redisOptions: RedisOptions = {
    ...(first.username === '' ? {} : { username: decodeURIComponent(first.username) }),
    ...(first.password === '' ? {} : { password: decodeURIComponent(first.password) }),
    ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
  };
  return { nodes, redisOptions };
}

/**
 * Connects to `target` (`redis://` or `rediss://`, or a cluster's seed URLs); commands queue while
 * the connection (re)connects.
 */
export function connectRedis(target: RedisTarget | undefined, options: RedisConnectionOptions = {}): RedisClient {
  if (target === undefined) throw codedError(HostErrorCode.invalidServerConfig, 'Redis mode needs SCOPE_REDIS_URL or SCOPE_REDIS_CLUSTER');
  let redis: RedisClient;
  const named = options.name === undefined ? commandOptions : { ...commandOptions, connectionName: options.name };
  if (typeof target === 'string') {
    redis = new Redis(target, named);
    // Load every script once, so the first commits find them cached on the server.
    preloadScripts(redis);
  } else {
    const { nodes, redisOptions } = clusterSeeds(target.cluster);
    redis = new Cluster(nodes, { redisOptions: { ...redisOptions, ...named }, enableOfflineQueue: true });
    // On every master: EVALSHA goes to the master of the keys' slot (NOSCRIPT still falls back to EVAL).
    redis.once('ready', () => preloadScripts(redis));
  }
  // Errors are reported (readiness shows the outage), never thrown.
  let last = '';
  redis.on('error', (error: Error) => {
    if (error.message !== last) options.onError?.(error);
    last = error.message;
  });
  redis.on('ready', () => {
    last = '';
  });
  return redis;
}

function preloadScripts(redis: RedisClient): void {
  const targets: Redis[] = isCluster(redis) ? redis.nodes('master') : [redis];
  for (const node of targets) {
    for (const script of luaScripts().values()) void node.script('LOAD', script.lua).catch(() => undefined);
  }
}

/**
 * A second connection like `redis` (same server or cluster, same credentials), with `overrides` for
 * each server connection — what `duplicate()` does, with one signature for both kinds of client.
 */
export function duplicateRedis(redis: RedisClient, overrides: Partial<RedisOptions> = {}): RedisClient {
  if (!isCluster(redis)) return redis.duplicate(overrides);
  const { lazyConnect, enableOfflineQueue, ...perNode } = overrides;
  return redis.duplicate(undefined, {
    redisOptions: { ...redis.options.redisOptions, ...perNode },
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
  });
}

/**
 * The server connections behind `redis`: the client itself, or each master of a cluster (once the
 * cluster answers), for commands that concern a server rather than a key (CONFIG, SCRIPT).
 */
export async function masterConnections(redis: RedisClient): Promise<Redis[]> {
  if (!isCluster(redis)) return [redis];
  await redis.ping(); // queued until the slot map is known
  return redis.nodes('master');
}

/**
 * Runs `send` with the connection's socket corked until the current tick ends (`process.nextTick`;
 * called from a promise continuation, that runs once the microtask queue is drained), so the commands
 * it issues leave in one write, in the order issued, together with whatever else is issued on the
 * connection before the tick ends.
 *
 * That is the group commit across trees: one socket read of Redis replies resolves several trees'
 * commits, their continuations issue the next commits within the same tick, and those leave in one
 * write — one system call instead of one per command (on a virtual machine each write that wakes the
 * Redis side is a costly exit) and, under `appendfsync always`, one fsync on the Redis side for the
 * group. Replies are unchanged; nothing waits longer than the current tick. A cluster client (a
 * socket per node) or a connection that is not open sends as it would without this.
 */
export function corked<T>(redis: RedisClient, send: () => T): T {
  const socket = isCluster(redis) || redis.status !== 'ready' ? undefined : (redis.stream as { cork?: () => void; uncork?: () => void } | undefined);
  if (typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') return send();
  if (!corkedThisTick.has(socket)) {
    corkedThisTick.add(socket);
    socket.cork();
    process.nextTick(() => {
      corkedThisTick.delete(socket);
      socket.uncork?.();
    });
  }
  return send();
}

/** Sockets corked until the end of the current tick. */
const corkedThisTick = new WeakSet<object>();

/** Quits politely within `graceMs`, then drops the socket whatever happened. */
export async function closeRedis(redis: RedisClient, graceMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, graceMs);
  });
  await Promise.race([redis.quit().then(() => undefined, () => undefined), grace]);
  clearTimeout(timer);
  redis.disconnect();
}

/** `PING` within `timeoutMs` (on a cluster: every master): `ok`, or why not. */
export async function pingRedis(redis: RedisClient, timeoutMs: number): Promise<'ok' | string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`unreachable: no answer within ${timeoutMs} ms`), timeoutMs);
  });
  const pingOne = (client: Redis | Cluster): Promise<string> =>
    client.ping().then(
      (reply) => (reply === 'PONG' ? 'ok' : `unexpected reply ${String(reply)}`),
      (error: unknown) => `unreachable: ${error instanceof Error ? error.message : String(error)}`,
    );
  const pingAll = async (): Promise<string> => {
    if (!isCluster(redis)) return pingOne(redis);
    // Routed through the cluster first: queued until the slot map is known (bounded by the timeout).
    const routed = await pingOne(redis);
    if (routed !== 'ok') return routed;
    const masters = redis.nodes('master');
    if (masters.length === 0) return 'unreachable: no cluster master known';
    const replies = await Promise.all(masters.map(async (node) => ({ node: `${node.options.host}:${node.options.port}`, reply: await pingOne(node) })));
    const failed = replies.find((entry) => entry.reply !== 'ok');
    return failed === undefined ? 'ok' : `${failed.node} ${failed.reply}`;
  };
  try {
    return await Promise.race([pingAll(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
