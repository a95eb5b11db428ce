import type { RedisClient } from './connection.js';
import { headKey } from './keys.js';

/** Which head a tree has, without its snapshot: enough to tell whether a cached reading is current. */
export interface HeadVersion {
  readonly digest: string;
  readonly incarnation: string;
  readonly sequence: bigint;
}

/**
 * The head versions of many trees (undefined where a tree has no head), one small HMGET each, sent
 * together. Readers of directories (the wait index) verify against the head they name and parse a
 * snapshot only when its digest changed since they last read it.
 */
export async function readHeadVersions(redis: RedisClient, keyPrefix: string, roots: readonly string[]): Promise<(HeadVersion | undefined)[]> {
  return Promise.all(
    roots.map(async (root) => {
      const [digest, incarnation, sequence] = (await redis.hmget(headKey(keyPrefix, root), 'digest', 'incarnation', 'sequence')) as [string | null, string | null, string | null];
      if (digest === null || incarnation === null || sequence === null || !/^(0|[1-9]\d{0,19})$/.test(sequence)) return undefined;
      return { digest, incarnation, sequence: BigInt(sequence) };
    }),
  );
}
