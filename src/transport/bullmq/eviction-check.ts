import { masterConnections, type RedisClient } from '../../store/redis/connection.js';

/**
 * BullMQ's locks and our claims are plain keys: if Redis may evict them, a job can run twice. A
 * worker refuses to start unless `maxmemory-policy` is `noeviction` (on a cluster: on every master).
 */
export async function checkNoEviction(redis: RedisClient): Promise<void> {
  for (const server of await masterConnections(redis)) {
    const reply = (await server.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy !== 'noeviction') {
      throw new Error(`Redis maxmemory-policy is ${JSON.stringify(policy)}; scope worker needs noeviction (an evicted lock or claim key means a duplicate run)`);
    }
  }
}
