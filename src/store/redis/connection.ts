import { Redis } from 'ioredis';
import { codedError, HostErrorCode } from '../../errors.js';
import { luaScripts } from './scripts.js';

/**
 * The one place a Redis connection is opened (only `src/store/` imports ioredis). The rest of the
 * server holds a {@link RedisClient} it got from here or from a test, and hands it to the stores.
 */
export type RedisClient = Redis;

export interface RedisConnectionOptions {
  /**
   * The name the connection gives itself (`CLIENT SETNAME`), so `CLIENT LIST` tells a node's
   * connections apart by purpose: `scope-api` (stores), `scope-api-tail` (the shared log tail, named
   * after the client it duplicates), `scope-guards`, `scope-worker`.
   */
  readonly name?: string;
  /** Each distinct connection error, once until the connection is ready again (ioredis reconnects by itself). */
  readonly onError?: (error: Error) => void;
}

/** Connects to `url` (`redis://` or `rediss://`); commands queue while the connection (re)connects. */
export function connectRedis(url: string | undefined, options: RedisConnectionOptions = {}): RedisClient {
  if (url === undefined) throw codedError(HostErrorCode.invalidServerConfig, 'Redis mode needs SCOPE_REDIS_URL');
  const redis = new Redis(url, { maxRetriesPerRequest: 3, enableOfflineQueue: true, ...(options.name === undefined ? {} : { connectionName: options.name }) });
  // Load every script once, so the first commits find them cached on the server.
  for (const script of luaScripts().values()) void redis.script('LOAD', script.lua).catch(() => undefined);
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

/** `PING` within `timeoutMs`: `ok`, or why not. */
export async function pingRedis(redis: RedisClient, timeoutMs: number): Promise<'ok' | string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`unreachable: no answer within ${timeoutMs} ms`), timeoutMs);
  });
  try {
    return await Promise.race([
      redis.ping().then(
        (reply) => (reply === 'PONG' ? 'ok' : `unexpected reply ${String(reply)}`),
        (error: unknown) => `unreachable: ${error instanceof Error ? error.message : String(error)}`,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
