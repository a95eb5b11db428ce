import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KernelError } from '../../src/kernel/errors.js';
import type { EngineHost } from '../../src/server/engine-host.js';
import { HistoryTrimmedError } from '../../src/server/errors.js';
import type { LogEntry } from '../../src/server/host.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { embeddedHost, freshPrefix, redisHost, rejectsWith, start, stepCommittedWith, streamOf, untilSettled } from './harness.js';

/**
 * The tree log is bounded (SCOPE_EVENT_LOG_MAXLEN): the memory ring drops its oldest entry, Redis trims
 * whole stream nodes (approximate MAXLEN). Whatever the store, a reader is never moved past trimmed
 * entries without being told: a cursor whose successors are gone is `history_trimmed` (with the oldest
 * position still held), and a stream that falls behind retention ends with it.
 */

const notes = 300;

/** A waiting demo.approval, its log before the flood, then `notes` notes: far more entries than the log keeps. */
async function trimmedTree(host: EngineHost): Promise<{ pid: string; early: LogEntry[] }> {
  const pid = (await start(host, 'demo.approval', { subject: 'retention' })).processId;
  await untilSettled(host, pid, stepCommittedWith('waiting', pid));
  const early = [...(await host.events(pid, { limit: 1000 })).items];
  await flood(host, pid);
  return { pid, early };
}

/** Notes queue without waking the process: once delivered (committed), the log is quiet. */
async function flood(host: EngineHost, pid: string): Promise<void> {
  const signals = Array.from({ length: notes }, (_, index) => ({ id: `note-${index}`, payload: { note: `note ${index}` } }));
  assert.deepEqual(await host.deliverSignals(pid, signals), { accepted: true });
}

function trimmedFlows(mode: string, make: () => { host: EngineHost; close: () => Promise<void> }): void {
  describe(`trimmed history (${mode})`, () => {
    test('a cursor whose successors were trimmed is refused with history_trimmed, never skipped', { timeout: 30_000 }, async () => {
      const { host, close } = make();
      try {
        const { pid, early } = await trimmedTree(host);
        const cursor = (early[0] as LogEntry).position;
        assert.equal(early[0]?.type, 'agent.process.started');

        // From the beginning: the page starts at the oldest entry held and says so.
        const fromStart = await host.events(pid, { limit: 1000 });
        const firstAvailable = fromStart.items[0]?.position as string;
        assert.deepEqual(fromStart.trimmed, { firstAvailable });
        assert.equal(fromStart.items[0]?.type, 'agent.signal.accepted', 'the process start is long gone');
        assert.ok(fromStart.items.length < notes);
        assert.deepEqual((await host.events(pid, { after: '0', limit: 1000 })).trimmed, { firstAvailable });

        // From a client's cursor: refused, whatever the reader (page, stream check, stream).
        const refused = await rejectsWith(host.events(pid, { after: cursor }), 'history_trimmed');
        assert.ok(refused instanceof HistoryTrimmedError);
        assert.equal(refused.firstAvailable, firstAvailable);
        assert.equal(refused.cursor, cursor);
        const abort = new AbortController();
        await rejectsWith(host.openStream(pid, { after: cursor, signal: abort.signal }), 'history_trimmed');
        const yielded: LogEntry[] = [];
        await rejectsWith(async () => {
          for await (const entry of streamOf(host, pid, { after: cursor, signal: abort.signal })) yielded.push(entry);
        }, 'history_trimmed');
        assert.deepEqual(yielded, [], 'nothing is sent before the refusal');

        // A cursor inside what is held reads on as before.
        const inside = await host.events(pid, { after: firstAvailable, limit: 1000 });
        assert.equal(inside.trimmed, undefined);
        assert.deepEqual(inside.items, fromStart.items.slice(1));

        // A stream from the beginning starts at the oldest entry held.
        const fresh = streamOf(host, pid, { signal: abort.signal })[Symbol.asyncIterator]();
        assert.equal(((await fresh.next()).value as LogEntry).position, firstAvailable);
        abort.abort();
        await fresh.return?.();
      } finally {
        await close();
      }
    });

    test('a stream that falls behind retention ends with history_trimmed where the gap starts', { timeout: 30_000 }, async () => {
      const { host, close } = make();
      const abort = new AbortController();
      try {
        const pid = (await start(host, 'demo.approval', { subject: 'slow reader' })).processId;
        await untilSettled(host, pid, stepCommittedWith('waiting', pid));
        const before = (await host.events(pid, { limit: 1000 })).items;
        const reader = streamOf(host, pid, { signal: abort.signal })[Symbol.asyncIterator]();
        const seen: LogEntry[] = [];
        const isWaiting = stepCommittedWith('waiting', pid);
        while (!seen.some(isWaiting)) seen.push((await reader.next()).value as LogEntry);
        // The reader stops pulling; the log moves on far past its retention.
        await flood(host, pid);
        let failure: unknown;
        try {
          for (;;) {
            const next = await reader.next();
            if (next.done === true) break;
            seen.push(next.value);
          }
        } catch (error) {
          failure = error;
        }
        assert.ok(failure instanceof KernelError && failure.code === 'history_trimmed', `history_trimmed, got ${String(failure)}`);
        const firstAvailable = (await host.events(pid, { limit: 1 })).items[0]?.position;
        assert.equal((failure as HistoryTrimmedError).firstAvailable, firstAvailable);
        // What it did deliver is an unbroken prefix of the log: nothing after the gap slipped through.
        assert.deepEqual(seen, before.slice(0, seen.length));
      } finally {
        abort.abort();
        await close();
      }
    });
  });
}

trimmedFlows('embedded', () => {
  const host = embeddedHost({ env: { SCOPE_EVENT_LOG_MAXLEN: '20' } });
  return { host, close: () => host.close(0) };
});

let server: RedisServer | undefined;
before(async () => {
  server = await startRedisServer();
});
after(async () => {
  await server?.stop();
});

trimmedFlows('redis', () => {
  const { host, redis } = redisHost({ url: (server as RedisServer).url, prefix: freshPrefix(), env: { SCOPE_EVENT_LOG_MAXLEN: '10' } });
  return {
    host,
    close: async () => {
      await host.close(1_000);
      redis.disconnect();
    },
  };
});
