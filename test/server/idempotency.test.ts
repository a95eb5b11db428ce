import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { TreeCheckpoint } from '../../src/kernel/commit.js';
import { KernelError } from '../../src/kernel/errors.js';
import { ProcessId, TreeIncarnationId } from '../../src/kernel/identity.js';
import { headKey } from '../../src/store/redis/keys.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import type { EngineHost } from '../../src/server/engine-host.js';
import type { StartOutcome, StartRequest } from '../../src/server/host.js';
import { RedisHostCommitter } from '../../src/server/redis-host-committer.js';
import { idempotencyHostValue, idempotencyKeyDigest, requestDigest } from '../../src/server/idempotency.js';
import { parsePointer, RedisIdempotencyStore, reservedValue } from '../../src/store/redis/idempotency-store.js';
import { idempotencyPointerKey } from '../../src/store/redis/keys.js';
import { RedisRootIndex } from '../../src/store/redis/root-index.js';
import { conformanceTrees } from '../../src/testing/conformance-trees.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { embeddedHost, freshPrefix, redisHost, rejectsWith, type RedisHostOptions } from './harness.js';

/**
 * An Idempotency-Key starts at most one process: inside one server (same-key starts run one after the
 * other) and across servers sharing one Redis (a reservation on the key's pointer, the record in the
 * start commit as the truth).
 */

let server: RedisServer;
const clients: Redis[] = [];

before(async () => {
  server = await startRedisServer();
});
after(async () => {
  for (const client of clients) client.disconnect();
  await server?.stop();
});

function admin(): Redis {
  const client = new Redis(server.url);
  clients.push(client);
  return client;
}

/** A Redis-mode Host of a "server node": its own connection, the shared prefix. */
function node(prefix: string, options: Partial<RedisHostOptions> = {}): { host: EngineHost; close: () => Promise<void> } {
  const { host, redis } = redisHost({ url: server.url, prefix, ...options });
  return {
    host,
    close: async () => {
      await host.close(1_000);
      redis.disconnect();
    },
  };
}

/** Redis's clock in ms (what `committing` pointers record). */
async function redisNow(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

function isInProgress(error: unknown): boolean {
  return error instanceof KernelError && error.code === 'idempotency_key_in_progress';
}

describe('idempotent starts across two servers over one Redis', () => {
  test('50 rounds of same-key starts racing on two servers: exactly one process per key, one processId for both callers', async () => {
    const prefix = freshPrefix();
    const nodes = [node(prefix), node(prefix)];
    const redis = admin();
    try {
      const roots = new Set<string>();
      let retried = 0;
      for (let round = 0; round < 50; round += 1) {
        const key = `race-${round}`;
        const request: StartRequest = { deployment: 'demo.approval', input: { subject: `round ${round}` } };
        const settled = await Promise.allSettled(nodes.map(({ host }) => host.startProcess(request, key)));
        const outcomes: StartOutcome[] = [];
        for (const [index, outcome] of settled.entries()) {
          if (outcome.status === 'fulfilled') {
            outcomes.push(outcome.value);
            continue;
          }
          // The only acceptable refusal: the other start was still unfinished. A retry gets its process.
          assert.ok(isInProgress(outcome.reason), `round ${round}: ${String(outcome.reason)}`);
          retried += 1;
          const retry = await (nodes[index] as (typeof nodes)[number]).host.startProcess(request, key);
          assert.equal(retry.created, false);
          outcomes.push(retry);
        }
        assert.equal(outcomes.filter((outcome) => outcome.created).length, 1, `round ${round}: one start created the process`);
        const ids = new Set(outcomes.map((outcome) => outcome.process.processId));
        assert.equal(ids.size, 1, `round ${round}: both callers got the same process (${[...ids].join(', ')})`);
        const [root] = ids as Set<string>;
        roots.add(root as string);
        // The pointer ends naming the root (the record under it is the truth).
        const pointer = await redis.get(idempotencyPointerKey(prefix, idempotencyKeyDigest(key)));
        assert.equal(pointer, root);
      }
      assert.equal(roots.size, 50);
      // Exactly one process per key exists in the store: the shared root index lists 50 started roots.
      const listed = await nodes[0]?.host.listProcesses({ limit: 100 });
      assert.deepEqual(new Set(listed?.items.map((item) => item.processId)), roots);
      assert.ok(retried <= 50);
    } finally {
      await Promise.all(nodes.map(({ close }) => close()));
    }
  });

  test('a same-key start with another body is 409 idempotency_key_conflict on the other server too', async () => {
    const prefix = freshPrefix();
    const [a, b] = [node(prefix), node(prefix)];
    try {
      const created = await a.host.startProcess({ deployment: 'demo.approval', input: { subject: 'one' } }, 'shared-key');
      const again = await b.host.startProcess({ deployment: 'demo.approval', input: { subject: 'one' } }, 'shared-key');
      assert.equal(again.created, false);
      assert.equal(again.process.processId, created.process.processId);
      await rejectsWith(b.host.startProcess({ deployment: 'demo.approval', input: { subject: 'two' } }, 'shared-key'), 'idempotency_key_conflict');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test('a start that fails gives its reservation up: the key stays free', async () => {
    const prefix = freshPrefix();
    const { host, close } = node(prefix);
    const redis = admin();
    try {
      await rejectsWith(host.startProcess({ deployment: 'demo.echo', input: { value: 3 } }, 'failing-key'), 'schema_validation_failed');
      assert.equal(await redis.get(idempotencyPointerKey(prefix, idempotencyKeyDigest('failing-key'))), null);
      const next = await host.startProcess({ deployment: 'demo.echo', input: { value: 'fine' } }, 'failing-key');
      assert.equal(next.created, true);
    } finally {
      await close();
    }
  });

  test('a reservation of a server that died: same-key starts answer 409 in progress until it expires, then one starts', async () => {
    const prefix = freshPrefix();
    const impatient = node(prefix, { idempotency: { waitMs: 50 } });
    const patient = node(prefix, { idempotency: { waitMs: 3_000 } });
    const redis = admin();
    const pointer = idempotencyPointerKey(prefix, idempotencyKeyDigest('orphaned-key'));
    try {
      await redis.set(pointer, reservedValue(randomUUID()), 'PX', 400);
      const request = { deployment: 'demo.approval', input: { subject: 'orphan' } };
      await rejectsWith(impatient.host.startProcess(request, 'orphaned-key'), 'idempotency_key_in_progress');
      const outcome = await patient.host.startProcess(request, 'orphaned-key');
      assert.equal(outcome.created, true);
      assert.equal(await redis.get(pointer), outcome.process.processId);
    } finally {
      await Promise.all([impatient.close(), patient.close()]);
    }
  });

  test('a committing start whose server died is fenced, then its key taken over: its late commit can never land', async () => {
    const prefix = freshPrefix();
    const { host, close } = node(prefix, { idempotency: { staleMs: 100 } });
    const redis = admin();
    const pointer = idempotencyPointerKey(prefix, idempotencyKeyDigest('stale-key'));
    const dead = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    try {
      // A start moved the pointer to `committing` a while ago, and its commit never came.
      await redis.set(pointer, `committing:${randomUUID()}:${(await redisNow(redis)) - 10_000}:${dead.rootId.toString()}`, 'PX', 60_000);
      const outcome = await host.startProcess({ deployment: 'demo.approval', input: { subject: 'take over' } }, 'stale-key');
      assert.equal(outcome.created, true);
      assert.notEqual(outcome.process.processId, dead.rootId.toString());
      assert.equal(await redis.get(pointer), outcome.process.processId);
      // The dead start's commit arrives late: the fence refuses it, so the key never had two processes.
      const store = new RedisTreeCommitter({ redis, keyPrefix: prefix });
      await rejectsWith(
        store.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: dead.running(0) })),
        'tree_incarnation_conflict',
      );
      assert.equal(await redis.exists(headKey(prefix, dead.rootId)), 0);
    } finally {
      await close();
    }
  });

  test('a start that committed but never named its root: the next claim finds the record and finishes the step', async () => {
    const prefix = freshPrefix();
    const [a, b] = [node(prefix), node(prefix)];
    const redis = admin();
    const pointer = idempotencyPointerKey(prefix, idempotencyKeyDigest('unfinished-key'));
    try {
      const request = { deployment: 'demo.approval', input: { subject: 'landed' } };
      const created = await a.host.startProcess(request, 'unfinished-key');
      const root = created.process.processId;
      // As if the server stopped between its commit and the pointer's last move.
      await redis.set(pointer, `committing:${randomUUID()}:${await redisNow(redis)}:${root}`, 'PX', 60_000);
      const replay = await b.host.startProcess(request, 'unfinished-key');
      assert.equal(replay.created, false);
      assert.equal(replay.process.processId, root);
      assert.equal(await redis.get(pointer), root);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test('redis committer: a start whose reservation was taken over does not commit', async () => {
    const prefix = freshPrefix();
    const redis = admin();
    const store = new RedisTreeCommitter({ redis, keyPrefix: prefix });
    const idempotency = new RedisIdempotencyStore({ redis, keyPrefix: prefix, committer: store });
    const committer = new RedisHostCommitter({ store, idempotency, roots: new RedisRootIndex({ redis, keyPrefix: prefix }) });
    const keyDigest = idempotencyKeyDigest('lost-key');
    const pointer = idempotencyPointerKey(prefix, keyDigest);
    const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    const ours = randomUUID();
    const intent = { keyDigest, requestDigest: requestDigest({ any: 'body' }), ttlMs: 60_000, token: ours };
    const start = TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) });
    const theirs = reservedValue(randomUUID());
    await redis.set(pointer, theirs, 'PX', 60_000);
    await rejectsWith(committer.commitCheckpoint(start, { events: [], hostValues: { [idempotencyHostValue]: intent } }), 'idempotency_key_in_progress');
    assert.equal(await redis.exists(headKey(prefix, trees.rootId)), 0, 'no head');
    assert.equal(await redis.get(pointer), theirs, 'their reservation stands');
    // What the committer writes before the commit reads back as `committing`, on Redis's clock.
    await redis.set(pointer, reservedValue(ours), 'PX', 60_000);
    const clock = await redisNow(redis);
    assert.equal(await idempotency.markCommitting(intent, trees.rootId.toString()), true);
    const committing = parsePointer((await redis.get(pointer)) as string);
    assert.equal(committing.kind, 'committing');
    assert.ok(committing.kind === 'committing' && committing.token === ours && committing.root === trees.rootId.toString());
    assert.ok(committing.kind === 'committing' && Math.abs(committing.sinceMs - clock) < 5_000);
    // Holding the reservation, the same start commits; the pointer passes through `committing` to the root.
    await redis.set(pointer, reservedValue(ours), 'PX', 60_000);
    await committer.commitCheckpoint(start, { events: [], hostValues: { [idempotencyHostValue]: intent } });
    assert.equal(await redis.get(pointer), trees.rootId.toString());
    assert.deepEqual(parsePointer(trees.rootId.toString()), { kind: 'root', root: trees.rootId.toString() });
  });
});

test('embedded: concurrent same-key starts inside one server run one after the other; a failed start leaves the key free', async () => {
  const host = embeddedHost();
  try {
    const request = { deployment: 'demo.approval', input: { subject: 'crowd' } };
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => host.startProcess(request, 'crowd-key')));
    assert.equal(outcomes.filter((outcome) => outcome.created).length, 1);
    assert.equal(new Set(outcomes.map((outcome) => outcome.process.processId)).size, 1);
    // Mixed bodies on one key: the first start wins, the others conflict, none starts a second process.
    const mixed = await Promise.allSettled(
      ['a', 'b', 'a', 'c'].map((subject) => host.startProcess({ deployment: 'demo.approval', input: { subject } }, 'mixed-key')),
    );
    assert.equal(mixed[0]?.status, 'fulfilled');
    assert.equal(mixed[2]?.status === 'fulfilled' && mixed[2].value.created, false);
    for (const index of [1, 3]) {
      const outcome = mixed[index] as PromiseRejectedResult;
      assert.equal(outcome.status, 'rejected');
      assert.equal((outcome.reason as KernelError).code, 'idempotency_key_conflict');
    }
    await rejectsWith(host.startProcess({ deployment: 'demo.echo', input: { value: 3 } }, 'fail-key'), 'schema_validation_failed');
    assert.equal((await host.startProcess({ deployment: 'demo.echo', input: { value: 'ok' } }, 'fail-key')).created, true);
    assert.equal((await host.listProcesses({ deployment: 'demo.approval' })).items.length, 2);
  } finally {
    await host.close(0);
  }
});
