import type { Redis } from 'ioredis';

/**
 * BullMQ's locks and our claims are plain keys: if Redis may evict them, a job can run twice. A
 * worker refuses to start unless `maxmemory-policy` is `noeviction`.
 */
export async function checkNoEviction(redis: Redis): Promise<void> {
  const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
  const policy = reply[1];
  if (policy !== 'noeviction') {
    throw new Error(`Redis maxmemory-policy is ${JSON.stringify(policy)}; scope worker needs noeviction (an evicted lock or claim key means a duplicate run)`);
  }
}
