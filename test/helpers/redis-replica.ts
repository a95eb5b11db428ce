import { Redis } from 'ioredis';
import { startRedisServer, type RedisServer } from './redis-server.js';

/**
 * A primary and one replica (`REPLICAOF`), both private redis-servers on free ports. Ready means the
 * primary lists the replica `online` and the replica's link is `up`, observed by polling INFO.
 */
export interface ReplicatedRedis {
  readonly primary: RedisServer;
  readonly replica: RedisServer;
  /** Resolves once the primary sees `count` online replicas (after a replica restart, say). */
  untilReplicas(count: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

async function info(port: number, section: string): Promise<string> {
  const client = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.info(section);
  } catch {
    return '';
  } finally {
    client.disconnect();
  }
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export async function startReplicatedRedis(): Promise<ReplicatedRedis> {
  // Diskless full sync without its default 5 s delay (which waits for more replicas to join).
  const primary = await startRedisServer({ extraArgs: ['--repl-diskless-sync-delay', '0'] });
  // `--replicaof` on the command line, so a restarted replica (kill, then restart()) resyncs by itself.
  let replica: RedisServer;
  try {
    replica = await startRedisServer({ extraArgs: ['--replicaof', '127.0.0.1', String(primary.port)] });
  } catch (error) {
    await primary.stop();
    throw error;
  }
  const online = async (count: number): Promise<boolean> => {
    const text = await info(primary.port, 'replication');
    return new RegExp(`connected_slaves:${count}\\b`).test(text) && (count === 0 || /slave0:.*state=online/.test(text));
  };
  const untilReplicas = async (count: number, timeoutMs = 10_000): Promise<void> => {
    await until(`${count} online replica(s)`, timeoutMs, () => online(count));
    if (count > 0) await until('the replica link up', timeoutMs, async () => (await info(replica.port, 'replication')).includes('master_link_status:up'));
  };
  try {
    await untilReplicas(1);
  } catch (error) {
    await Promise.all([replica.stop(), primary.stop()]);
    throw error;
  }
  return {
    primary,
    replica,
    untilReplicas,
    async stop() {
      await Promise.all([replica.stop(), primary.stop()]);
    },
  };
}
