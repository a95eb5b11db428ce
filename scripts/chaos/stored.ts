/**
 * What Redis holds of a tree at the end of a run, read raw (no server in between), for the checks:
 * every event-log entry with its `scope.prev` link, the head's incarnation, and the transport's
 * execution counts (counted by the claim script before anything ran) and `never` claims.
 */
import type { Redis } from 'ioredis';
import { eventEntryFields, previousEntryField } from '../../src/store/redis/log-entry.js';
import { eventsKey, executionsKey, headKey, neverClaimsKey } from '../../src/store/redis/keys.js';

export interface StoredEntry {
  readonly id: string;
  /** The `scope.prev` link (the id appended just before), if the entry has one. */
  readonly previous: string | undefined;
  readonly name: string | undefined;
  /** Parsed from the kernel Event JSON; undefined for deltas and host entries. */
  readonly phase: string | undefined;
  readonly processId: string | undefined;
  readonly incarnation: string | undefined;
  readonly signalId: string | undefined;
}

export interface StoredTree {
  readonly rootId: string;
  readonly entries: readonly StoredEntry[];
  readonly headIncarnation: string | undefined;
  readonly executions: Readonly<Record<string, number>>;
  /** Effects claimed under the `never` policy (effect id → the attempt that claimed it). */
  readonly neverClaims: Readonly<Record<string, string>>;
}

function entryOf(id: string, raw: string[]): StoredEntry {
  const fields = new Map<string, string>();
  for (let index = 0; index + 1 < raw.length; index += 2) fields.set(raw[index] as string, raw[index + 1] as string);
  let event: { phase?: string; process_id?: string; tree_incarnation_id?: string; payload?: { signal_id?: string } } | undefined;
  const text = fields.get(eventEntryFields.event);
  if (text !== undefined) {
    try {
      event = JSON.parse(text);
    } catch {
      event = undefined;
    }
  }
  return {
    id,
    previous: fields.get(previousEntryField),
    name: fields.get(eventEntryFields.name),
    phase: event?.phase,
    processId: event?.process_id,
    incarnation: event?.tree_incarnation_id,
    signalId: event?.payload?.signal_id,
  };
}

export async function readStoredTree(redis: Redis, prefix: string, rootId: string): Promise<StoredTree> {
  const entries: StoredEntry[] = [];
  let start = '-';
  for (;;) {
    const page = (await redis.xrange(eventsKey(prefix, rootId), start, '+', 'COUNT', 1_000)) as Array<[string, string[]]>;
    for (const [id, raw] of page) entries.push(entryOf(id, raw));
    if (page.length < 1_000) break;
    start = `(${page[page.length - 1]?.[0]}`;
  }
  const [incarnation, executions, claims] = await Promise.all([
    redis.hget(headKey(prefix, rootId), 'incarnation'),
    redis.hgetall(executionsKey(prefix, rootId)),
    redis.hgetall(neverClaimsKey(prefix, rootId)),
  ]);
  return {
    rootId,
    entries,
    headIncarnation: incarnation ?? undefined,
    executions: Object.fromEntries(Object.entries(executions).map(([effect, count]) => [effect, Number(count)])),
    neverClaims: claims,
  };
}
