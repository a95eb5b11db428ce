import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import { Redis, type RedisOptions } from 'ioredis';
import { TreeActivation, TreeCheckpoint } from '../../../src/kernel/commit.js';
import { KernelError } from '../../../src/kernel/errors.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import type { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import { RedisTreeCommitter, type RedisTreeCommitterOptions } from '../../../src/store/redis/redis-committer.js';
import { luaScript } from '../../../src/store/redis/scripts.js';
import { deltaType } from '../../../src/store/event-log.js';
import { conformanceTrees } from '../../../src/testing/conformance-trees.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

/**
 * Faults on a real redis-server (AOF on, fsync always, so an acknowledged commit survives SIGKILL):
 * script-cache loss, deadlines, shutdown, a server killed between a commit's send and its reply,
 * and two writers racing on one tree.
 */

let server: RedisServer;
const clients: Redis[] = [];
let prefixes = 0;

before(async () => {
  server = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
});

after(async () => {
  for (const client of clients) client.disconnect();
  await server?.stop();
});

function client(options: RedisOptions = {}): Redis {
  const redis = new Redis(server.port, '127.0.0.1', options);
  // Connection errors while the server is paused or killed are the point of these tests; the
  // committer reports them as committer_unavailable.
  redis.on('error', () => {});
  clients.push(redis);
  return redis;
}

function committer(redis: Redis, options: Partial<RedisTreeCommitterOptions> = {}): RedisTreeCommitter {
  prefixes += 1;
  return new RedisTreeCommitter({ redis, keyPrefix: `f${process.pid}-${prefixes}`, ...options });
}

const isCode = (code: string) => (error: unknown) => error instanceof KernelError && error.code === code;

function unavailable(error: unknown): boolean {
  return isCode('committer_unavailable')(error) && /head is unknown/.test((error as Error).message);
}

function start(snapshot: TreeSnapshot): TreeCheckpoint {
  return TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot });
}

function progress(sequence: bigint, previous: TreeSnapshot, snapshot: TreeSnapshot): TreeCheckpoint {
  return TreeCheckpoint.create({ kind: 'progress', sequence, previous: previous.digest, snapshot });
}

function fresh() {
  return conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
}

test('redis faults: SCRIPT FLUSH mid-run: commits continue (EVALSHA falls back to EVAL)', async () => {
  const redis = client();
  const store = committer(redis);
  const trees = fresh();
  await store.commitCheckpoint(start(trees.running(0)));
  const sha = luaScript('commitCheckpoint').sha;
  assert.deepEqual(await redis.script('EXISTS', sha), [1]);
  let previous = trees.running(0);
  for (let step = 1; step <= 20; step += 1) {
    await redis.script('FLUSH');
    assert.deepEqual(await redis.script('EXISTS', sha), [0]);
    const next = trees.running(step);
    await store.commitCheckpoint(progress(BigInt(step + 1), previous, next));
    previous = next;
  }
  assert.deepEqual(await redis.script('EXISTS', sha), [1]);
  // Other scripts, and a second connection whose first call meets an empty cache, work too.
  await redis.script('FLUSH');
  assert.equal(await store.reconcile(progress(21n, trees.running(19), trees.running(20))), true);
  const other = new RedisTreeCommitter({ redis: client(), keyPrefix: store.keyPrefix });
  await redis.script('FLUSH');
  await other.commitCheckpoint(progress(22n, previous, trees.running(21)));
  assert.equal((await store.loadTree(trees.rootId))?.digest.equals(trees.running(21).digest), true);
});

test('redis faults: a deadline rejects with committer_unavailable and the commit may still land (never read as unchanged)', async () => {
  const redis = client();
  const store = committer(redis, { timeoutMs: 150 });
  const trees = fresh();
  await store.commitCheckpoint(start(trees.running(0)));
  const next = progress(2n, trees.running(0), trees.running(1));
  server.pause();
  try {
    await assert.rejects(store.commit(next, { entries: [{ type: 'late' }] }), unavailable);
    await assert.rejects(store.loadTree(trees.rootId), unavailable, 'reads have the same deadline');
  } finally {
    server.resume();
  }
  // The same connection answers in order: once PING returns, the timed-out commit has run.
  await redis.ping();
  assert.equal(await store.reconcile(next), true, 'the timed-out commit landed');
  assert.equal((await store.loadTree(trees.rootId))?.digest.equals(trees.running(1).digest), true);
  assert.equal(await store.events.length(trees.rootId), 1);
  const retry = await store.commit(next, { entries: [{ type: 'late' }] });
  assert.deepEqual(retry, { outcome: 'duplicate', eventIds: [] });
  assert.equal(await store.events.length(trees.rootId), 1, 'the acknowledged retry wrote nothing again');
});

test('redis faults: best-effort entries a timed-out commit carried are counted lost, and written once (with the commit that landed)', async () => {
  const lost: number[] = [];
  const redis = client();
  const store = committer(redis, { timeoutMs: 150, onLogAppendError: (_error, count) => lost.push(count) });
  const trees = fresh();
  const root = trees.rootId.toString();
  await store.commitCheckpoint(start(trees.running(0)));
  const next = progress(2n, trees.running(0), trees.running(1));
  server.pause();
  try {
    // Queued in the same turn as the commit, so the commit's script carries it.
    store.events.append(root, [{ type: deltaType, processId: root, data: JSON.stringify({ process_id: root, index: 0 }) }]);
    await assert.rejects(store.commit(next), unavailable);
  } finally {
    server.resume();
  }
  await redis.ping();
  assert.deepEqual(lost, [1], 'its fate was unknown: counted lost, not appended again');
  assert.equal(store.events.failedAppends, 1);
  assert.equal(await store.reconcile(next), true, 'the timed-out commit landed');
  assert.deepEqual((await store.events.entriesAfter(root, '0', 10)).map((entry) => entry.fields.name), [deltaType], 'with its carried entry, once');
});

test('redis faults: the host shutdown signal releases a blocked call and refuses later ones', async () => {
  const redis = client();
  const shutdown = new AbortController();
  const store = committer(redis, { shutdown: shutdown.signal, timeoutMs: 60_000 });
  const trees = fresh();
  await store.commitCheckpoint(start(trees.running(0)));
  server.pause();
  try {
    const blocked = store.commitCheckpoint(progress(2n, trees.running(0), trees.running(1)));
    shutdown.abort(new Error('host stopping'));
    await assert.rejects(blocked, (error) => unavailable(error) && /shut the store down/.test((error as Error).message));
    await assert.rejects(store.loadTree(trees.rootId), unavailable);
  } finally {
    server.resume();
  }
  await redis.ping();
});

/** Resolves once `redis` is connected and ready again (a barrier on its own event, never a sleep). */
async function reconnected(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') await once(redis, 'ready');
}

test('redis faults: SIGKILL between a commit\'s send and its reply: rejected, restart with AOF, reconcile, retry, finish', async () => {
  // No automatic resend after reconnect: the lost command stays lost, so the outcome is exact.
  const redis = client({ autoResendUnfulfilledCommands: false, retryStrategy: () => 20, maxRetriesPerRequest: null });
  const store = committer(redis, { timeoutMs: 400 });
  const trees = fresh();
  const writes = (type: string) => ({ entries: [{ type }], records: [{ suffix: `idem:${type}`, value: type }] });
  await store.commit(start(trees.running(0)), writes('start'));
  const acknowledged = progress(2n, trees.running(0), trees.running(1));
  await store.commit(acknowledged, writes('one'));
  assert.equal(redis.status, 'ready');

  // The server stops reading; the commit goes into its socket; the server dies without reading it.
  server.pause();
  const lost = progress(3n, trees.running(1), trees.running(2));
  const outcome = store.commit(lost, writes('two'));
  await server.kill('SIGKILL');
  await assert.rejects(outcome, unavailable, 'a lost reply is a non-protocol failure, never an ack');

  await server.restart();
  // Reads below have the store's 400 ms deadline: wait for the client's reconnection first (on a
  // loaded machine it can take longer than that), so that a deadline means what the test says.
  await reconnected(redis);
  // The authoritative head is the last acknowledged one (fsync always), and the lost commit is
  // neither installed nor acknowledged by reconciliation; none of its host writes exist.
  const head = await store.loadHead(trees.rootId);
  assert.equal(head?.digest, trees.running(1).digest.toString());
  assert.equal(head?.sequence, 2n);
  assert.equal(await store.reconcile(lost), false);
  assert.equal(await store.reconcile(acknowledged), true);
  assert.equal(await store.events.length(trees.rootId), 2);
  assert.equal(await store.readRecord(trees.rootId, 'idem:two'), undefined);

  // Finish: the retry installs it (writes applied once), a second retry is a duplicate.
  assert.equal((await store.commit(lost, writes('two'))).outcome, 'installed');
  assert.equal((await store.commit(lost, writes('two'))).outcome, 'duplicate');
  assert.equal(await store.reconcile(lost), true);
  const done = TreeCheckpoint.create({ kind: 'terminal', sequence: 4n, previous: trees.running(2).digest, snapshot: trees.completed() });
  await store.commit(done, writes('done'));
  const log = await store.events.entriesAfter(trees.rootId, '0');
  assert.deepEqual(log.map((entry) => entry.fields.type), ['start', 'one', 'two', 'done']);
  assert.equal(await store.readRecord(trees.rootId, 'idem:two'), 'two');

  // An acknowledged commit survives a SIGKILL (AOF, fsync always).
  await server.kill('SIGKILL');
  await server.restart();
  await reconnected(redis);
  assert.equal((await store.loadTree(trees.rootId))?.digest.equals(trees.completed().digest), true);
  assert.equal(await store.purgeTree(trees.rootId), 'purged');
});

test('redis faults: 200 rounds of two writers racing activations and advances: exactly one wins, heads never fork', async (t) => {
  // Durability is not under test here; fsync per write would only make the rounds slow.
  const admin = client();
  await admin.config('SET', 'appendfsync', 'no');
  t.after(() => admin.config('SET', 'appendfsync', 'always'));
  const storeA = committer(client());
  const storeB = new RedisTreeCommitter({ redis: client(), keyPrefix: storeA.keyPrefix });
  const rootId = ProcessId.newRoot();
  let incarnation = TreeIncarnationId.random();
  let step = 0;
  let head = conformanceTrees(rootId, incarnation).running(step);
  let sequence = 1n;
  await storeA.commitCheckpoint(start(head));
  const chain: { previous: string; installed: string }[] = [];
  const rounds = { activations: 0, advances: 0, mixed: 0 };
  const winsBy = { A: 0, B: 0 };

  for (let round = 0; round < 200; round += 1) {
    const kind = round % 3;
    const activation = () =>
      TreeActivation.create({ previousIncarnationId: incarnation, previousDigest: head.digest, snapshot: head.withIncarnation(TreeIncarnationId.random()) });
    const advance = (offset: number) => progress(sequence + 1n, head, conformanceTrees(rootId, incarnation).running(step + offset));
    let contenders: [TreeActivation | TreeCheckpoint, TreeActivation | TreeCheckpoint];
    let loserCodes: string[];
    if (kind === 0) {
      contenders = [activation(), activation()];
      loserCodes = ['tree_incarnation_conflict'];
      rounds.activations += 1;
    } else if (kind === 1) {
      // Same writer, same sequence: the same identity with other content.
      contenders = [advance(1), advance(2)];
      loserCodes = ['commit_conflict'];
      rounds.advances += 1;
    } else {
      // A restore fencing the writer while the writer advances.
      contenders = [activation(), advance(1)];
      loserCodes = ['tree_incarnation_conflict'];
      rounds.mixed += 1;
    }
    // Alternate which connection sends first.
    const [first, second] = round % 2 === 0 ? [storeA, storeB] : [storeB, storeA];
    const outcomes = await Promise.allSettled([first.commit(contenders[0]), second.commit(contenders[1])]);
    const winners = outcomes.flatMap((outcome, index) => (outcome.status === 'fulfilled' ? [index] : []));
    assert.equal(winners.length, 1, `round ${round}: ${winners.length} winners`);
    const winnerIndex = winners[0] as number;
    winsBy[(winnerIndex === 0) === (first === storeA) ? 'A' : 'B'] += 1;
    const loser = outcomes[1 - winnerIndex];
    assert.ok(
      loser?.status === 'rejected' && loser.reason instanceof KernelError && loserCodes.includes(loser.reason.code),
      `round ${round}: loser ${loser?.status === 'rejected' ? String(loser.reason) : 'fulfilled'}, want ${loserCodes.join('|')}`,
    );
    const won = contenders[winnerIndex] as TreeActivation | TreeCheckpoint;
    assert.equal((outcomes[winnerIndex] as PromiseFulfilledResult<{ outcome: string }>).value.outcome, 'installed');
    chain.push({ previous: head.digest.toString(), installed: won.snapshot.digest.toString() });
    if (won instanceof TreeActivation) {
      incarnation = won.incarnationId;
      sequence = 0n;
    } else {
      sequence = won.sequence;
      step += 2;
    }
    head = won.snapshot;
    // Both connections see the one authoritative head, at the winner's sequence.
    const [seenA, seenB] = await Promise.all([storeA.loadHead(rootId), storeB.loadHead(rootId)]);
    assert.equal(seenA?.digest, head.digest.toString(), `round ${round}: head A`);
    assert.equal(seenB?.digest, head.digest.toString(), `round ${round}: head B`);
    assert.equal(seenA?.sequence, sequence);
    // The loser cannot land late either: its retry is refused.
    const lost = contenders[1 - winnerIndex] as TreeActivation | TreeCheckpoint;
    await assert.rejects(storeA.commit(lost), (error) => error instanceof KernelError && ['commit_conflict', 'tree_incarnation_conflict'].includes(error.code));
  }
  // One linear history: every installed head names the previous installed head.
  for (let index = 1; index < chain.length; index += 1) {
    assert.equal(chain[index]?.previous, chain[index - 1]?.installed, `fork at round ${index}`);
  }
  assert.deepEqual(rounds, { activations: 67, advances: 67, mixed: 66 });
  t.diagnostic(`wins by connection: A ${winsBy.A}, B ${winsBy.B}`);
});
