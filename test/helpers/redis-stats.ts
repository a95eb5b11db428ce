import type { Redis } from 'ioredis';

/**
 * Counters a test reads off the server it talks to (INFO): how many scripts ran (EVAL and EVALSHA:
 * ioredis sends EVAL when the server does not hold the script yet) and how many bytes clients sent.
 */

export async function scriptCalls(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  let calls = 0;
  for (const match of stats.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

export async function netInputBytes(redis: Redis): Promise<number> {
  return Number(/total_net_input_bytes:(\d+)/.exec(await redis.info('stats'))?.[1]);
}
