import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { encodeCanonical } from '../../../src/kernel/canonical-json.js';
import { TreeCheckpoint } from '../../../src/kernel/commit.js';
import { Digest } from '../../../src/kernel/digest.js';
import { eventNames } from '../../../src/kernel/event.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import { RedisEventLog } from '../../../src/store/redis/event-log.js';
import { RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { runScript } from '../../../src/store/redis/scripts.js';
import { conformanceTrees } from '../../../src/testing/conformance-trees.js';
import { eventsKey, headKey } from '../../../src/store/redis/keys.js';
import { entriesOf, type EventLogEntry } from '../../../src/store/redis/log-entry.js';
import { cutRef, refEntryField, refHeadField, spliceRef } from '../../../src/store/redis/log-refs.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { drainStream, freshPrefix, redisHost, result, start } from '../../server/harness.js';

/**
 * The deployment ref once per tree (log-refs.ts): Events are stored without their `deployment_ref`,
 * which the tree's head holds once, and every reader gets the Event's JSON back byte for byte.
 */

let server: RedisServer;
let redis: Redis;

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.port, '127.0.0.1');
});

after(async () => {
  redis?.disconnect();
  await server?.stop();
});

const ref = { bindings_digest: `sha256:${'1'.repeat(64)}`, digest: `sha256:${'2'.repeat(64)}`, name: 'demo.echo' };

test('cutRef/spliceRef: the cut of a canonical Event splices back to the same text; other texts are not cut', () => {
  const event = encodeCanonical({ deployment_ref: ref, name: 'agent.process.started', process_id: 'process:1' });
  const cut = cutRef(event);
  assert.ok(cut !== undefined);
  assert.equal(cut.refJson, encodeCanonical(ref));
  assert.equal(cut.rest, '{"name":"agent.process.started","process_id":"process:1"}');
  assert.equal(spliceRef(cut.refJson, cut.rest), event);

  // Not an Event opening with a ref object followed by more members: stored as it is.
  for (const text of [
    '{"name":"x"}',
    '{"deployment_ref":"sha256:1","name":"x"}',
    `{"deployment_ref":${encodeCanonical(ref)}}`,
    `{"deployment_ref":${encodeCanonical(ref)}`,
    '{"deployment_ref":{"name":"a}"',
    '{"delta":1}',
  ]) {
    assert.equal(cutRef(text), undefined, text);
  }

  // Any JSON object as the ref, strings with braces, quotes and escapes included.
  const value = fc.jsonValue({ maxDepth: 3 });
  fc.assert(
    fc.property(fc.dictionary(fc.string(), value, { maxKeys: 5 }), fc.dictionary(fc.string(), value, { minKeys: 1, maxKeys: 5 }), (refObject, rest) => {
      const refJson = encodeCanonical(refObject);
      const text = `{"deployment_ref":${refJson},${encodeCanonical(rest).slice(1)}`;
      const found = cutRef(text);
      assert.ok(found !== undefined);
      assert.equal(found.refJson, refJson);
      assert.equal(spliceRef(found.refJson, found.rest), text);
    }),
    { seed: 13, numRuns: 300 },
  );
});

test('a tree run on Redis stores each Event without its ref, the head holds the ref once, and every reader gets the Event back byte for byte', async () => {
  const prefix = freshPrefix();
  const { host, redis: hostRedis } = redisHost({ url: server.url, prefix });
  let rootId: string;
  let records: Awaited<ReturnType<typeof drainStream>>;
  try {
    const view = await start(host, 'demo.echo', { value: 'abc' });
    rootId = view.processId;
    assert.equal((await result(host, rootId)).status, 'completed');
    records = await drainStream(host, rootId);
  } finally {
    await host.close();
    hostRedis.disconnect();
  }

  const raw = entriesOf(await redis.xrange(eventsKey(prefix, rootId), '-', '+'));
  const events = raw.filter((entry) => entry.fields.event !== undefined);
  assert.ok(events.length >= 8, `the run logged its events (${events.length})`);
  assert.ok(raw.some((entry) => entry.fields.delta !== undefined), 'and deltas');
  // Committed and best-effort Events alike: every one names its ref (the start commit defined it before any other entry).
  for (const entry of events) {
    assert.match(entry.fields[refEntryField] ?? '', /^sha256:[0-9a-f]{64}$/, `${entry.fields.name} names its ref`);
    assert.ok(!entry.fields.event?.includes('deployment_ref'), `${entry.fields.name} is stored without it`);
  }
  const ids = new Set(events.map((entry) => entry.fields[refEntryField] as string));
  assert.equal(ids.size, 1, 'one deployment, one ref');
  const [id] = [...ids] as [string];
  const refJson = await redis.hget(headKey(prefix, rootId), refHeadField(id));
  assert.ok(refJson !== null, 'the head holds the ref');
  assert.equal(Digest.of(refJson).toString(), id, 'under the sha256 of its JSON');
  const headFields = await redis.hkeys(headKey(prefix, rootId));
  assert.deepEqual(headFields.filter((field) => field.startsWith('ref:')), [refHeadField(id)]);

  // What the Host read (REST pages, SSE) is each stored entry with the ref put back, in order.
  const byPosition = new Map(records.map((record) => [record.position, record]));
  for (const entry of events) {
    const record = byPosition.get(entry.id);
    assert.ok(record !== undefined, `entry ${entry.id} was read`);
    assert.equal(record.data, spliceRef(refJson, entry.fields.event as string));
    assert.deepEqual((JSON.parse(record.data) as { deployment_ref: unknown }).deployment_ref, JSON.parse(refJson));
  }
  const stored = events.reduce((sum, entry) => sum + (entry.fields.event as string).length + id.length, 0);
  const whole = events.reduce((sum, entry) => sum + (byPosition.get(entry.id) as { data: string }).data.length, 0);
  assert.ok(stored < whole * 0.7, `the Events take ${stored} bytes in the log instead of ${whole}`);

  // A reader that has never seen the ref (another node) reads it from the head, by page and by tail.
  const client = new Redis(server.port, '127.0.0.1');
  const fresh = new RedisEventLog({ redis: client, keyPrefix: prefix });
  try {
    const page = await fresh.readAfter(rootId, '0', 1_000);
    assert.deepEqual(
      page.map((record) => record.data),
      records.map((record) => record.data),
    );
    const abort = new AbortController();
    const tailed: EventLogEntry[] = [];
    for await (const entry of fresh.tailEntries(rootId, '0', { signal: abort.signal })) {
      tailed.push(entry);
      if (tailed.length === raw.length) abort.abort();
    }
    assert.deepEqual(
      tailed.filter((entry) => entry.fields.event !== undefined).map((entry) => entry.fields),
      events.map((entry) => ({ name: entry.fields.name, event: spliceRef(refJson, entry.fields.event as string) })),
    );
  } finally {
    await fresh.close();
    client.disconnect();
  }
});

test('a best-effort Event is cut only once a commit acknowledged here defined its ref; an entry whose ref is not found is no record', async () => {
  const prefix = freshPrefix();
  const rootId = 'process:0123456789abcdef0123456789abcdef';
  const log = new RedisEventLog({ redis, keyPrefix: prefix });
  const event = encodeCanonical({ deployment_ref: ref, name: 'agent.step.started', process_id: rootId });
  const refJson = encodeCanonical(ref);
  const id = Digest.of(refJson).toString();
  try {
    // Not known to be in the head: stored whole.
    log.append(rootId, [{ type: 'agent.step.started', processId: rootId, data: event }]);
    // Known (as a commit acknowledged here would leave it): stored cut.
    await redis.hset(headKey(prefix, rootId), refHeadField(id), refJson);
    log.refs.markDefined(headKey(prefix, rootId), [id]);
    log.append(rootId, [{ type: 'agent.step.started', processId: rootId, data: event }]);
    // Names a ref no head holds; and one whose stored JSON is not what its id says.
    const forged = Digest.of('forged').toString();
    await redis.hset(headKey(prefix, rootId), refHeadField(forged), refJson);
    const lastId = (await redis.xrevrange(eventsKey(prefix, rootId), '+', '-', 'COUNT', 1))[0]?.[0] as string;
    const unknownId = await redis.xadd(eventsKey(prefix, rootId), '*', 'name', 'agent.step.started', 'ref', `sha256:${'0'.repeat(64)}`, 'event', `{"name":"agent.step.started","process_id":"${rootId}"}`, 'scope.prev', lastId);
    await redis.xadd(eventsKey(prefix, rootId), '*', 'name', 'agent.step.started', 'ref', forged, 'event', `{"name":"agent.step.started","process_id":"${rootId}"}`, 'scope.prev', unknownId as string);
    log.append(rootId, [{ type: 'agent.step.started', processId: rootId, data: event }]);

    const raw = entriesOf(await redis.xrange(eventsKey(prefix, rootId), '-', '+'));
    assert.equal(raw.length, 5);
    assert.deepEqual(raw[0]?.fields, { name: 'agent.step.started', event });
    assert.deepEqual(raw[1]?.fields, { name: 'agent.step.started', ref: id, event: `{"name":"agent.step.started","process_id":"${rootId}"}` });

    const fresh = new RedisEventLog({ redis, keyPrefix: prefix });
    const records = await fresh.readAfter(rootId, '0', 100);
    assert.deepEqual(
      records.map((record) => [record.position, record.data]),
      [raw[0], raw[1], raw[4]].map((entry) => [entry?.id, event]),
      'the unresolvable entries are skipped, the rest read whole',
    );
    assert.equal(records[2]?.previous, raw[1]?.id, 'and the record after them links past them, not to a trimmed gap');
    const entries = await fresh.entriesAfter(rootId, '0', 100);
    assert.equal(entries[2]?.fields[refEntryField], `sha256:${'0'.repeat(64)}`, 'the raw reader sees the unresolved entry as stored');
    await fresh.close();
  } finally {
    await log.close();
  }
});

test('a refused commit writes neither its cut Events nor their ref, and leaves the ref unknown to best-effort appends', async () => {
  const prefix = freshPrefix();
  const owner = new RedisTreeCommitter({ redis, keyPrefix: prefix });
  const rival = new RedisTreeCommitter({ redis, keyPrefix: prefix });
  const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  const root = trees.rootId.toString();
  const event = encodeCanonical({ deployment_ref: ref, name: eventNames.processStarted, process_id: root });
  const logged = { name: eventNames.processStarted, json: () => event };
  const id = Digest.of(encodeCanonical(ref)).toString();
  try {
    await owner.commit(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }), { events: [] });
    // Another writer's start for the same root: refused, so it writes no entry and no ref.
    const rivalStart = TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: conformanceTrees(trees.rootId, TreeIncarnationId.random()).running(0) });
    await assert.rejects(rival.commit(rivalStart, { events: [logged] }), (error: unknown) => (error as { code?: string }).code === 'tree_incarnation_conflict');
    assert.equal(await redis.xlen(eventsKey(prefix, root)), 0);
    assert.equal(await redis.hget(headKey(prefix, root), refHeadField(id)), null, 'no ref was stored');
    // The rival never learnt the ref is defined: its best-effort Event goes whole (a reader could not splice a cut one).
    rival.events.append(root, [{ type: eventNames.processStarted, processId: root, data: event }]);
    rival.events.flush();
    const [stored] = entriesOf(await redis.xrange(eventsKey(prefix, root), '-', '+'));
    assert.deepEqual(stored?.fields, { name: eventNames.processStarted, event });
  } finally {
    await owner.close();
    await rival.close();
  }
});

test('the scripts check every entry and ref definition before writing: a malformed one writes nothing', async () => {
  const prefix = freshPrefix();
  const rootId = 'process:0123456789abcdef0123456789abcdef';
  const events = eventsKey(prefix, rootId);
  const head = headKey(prefix, rootId);
  const entry = ['2', 'agent.step.started', 'event', '{}'];
  // appendLog: a good entry followed by a bad one (a pair count other than 2 or 3, or too few arguments) writes neither.
  for (const bad of [['4', 'n', 'event', '{}'], ['3', 'n', 'ref', 'sha256:0', 'event']]) {
    const reply = await runScript(redis, 'appendLog', [events], ['10', ...entry, ...bad]);
    assert.equal((reply as unknown[])[0], -4, JSON.stringify(bad));
  }
  assert.equal(await redis.exists(events), 0, 'no entry was written');
  // A commit whose ref definition has no field/value separator is refused before its compare-and-swap.
  const reply = await runScript(redis, 'commitEffect', [head, `${head}:facts`, events, `${head}:snapshot`, head], ['id', 'content', '1', 'previous', 'digest', 'incarnation', '{}', '10', '0', 'no-separator', '+h']);
  assert.deepEqual(reply, [-4, `hash entry for ${head} needs a field and a value`]);
  assert.equal(await redis.exists(head), 0, 'nothing was written');
  // A ref whose head key holds another type is refused as a head key, and writes nothing either.
  await redis.set(head, 'not a hash');
  const wrongType = await runScript(redis, 'commitEffect', [head, `${head}:facts`, events, `${head}:snapshot`, head], ['id', 'content', '1', 'previous', 'digest', 'incarnation', '{}', '10', '0', 'ref:x {}', '+h']);
  assert.deepEqual(wrongType, [-4, `head key ${head} holds a string`]);
  assert.equal(await redis.get(head), 'not a hash');
  assert.equal(await redis.exists(`${head}:facts`), 0, 'no fact was written');
});

test('a reader that cannot read the ref from the head gets committer_unavailable, never an Event without its ref', async () => {
  const prefix = freshPrefix();
  const { host, redis: hostRedis } = redisHost({ url: server.url, prefix });
  let rootId: string;
  try {
    rootId = (await start(host, 'demo.echo', { value: 'ab' })).processId;
    assert.equal((await result(host, rootId)).status, 'completed');
  } finally {
    await host.close();
    hostRedis.disconnect();
  }
  // A real refusal by Redis, of the ref read alone: this user may read the stream but not HMGET.
  const user = `refless${process.pid}`;
  await redis.acl('SETUSER', user, 'on', '>secret', '~*', '&*', '+@all', '-hmget');
  const client = new Redis({ port: server.port, host: '127.0.0.1', username: user, password: 'secret' });
  const fresh = new RedisEventLog({ redis: client, keyPrefix: prefix });
  const unavailable = (error: unknown): boolean => (error as { code?: unknown }).code === 'committer_unavailable';
  try {
    assert.ok((await client.xlen(eventsKey(prefix, rootId))) > 0, 'the stream itself is readable');
    await assert.rejects(fresh.readAfter(rootId, '0', 1_000), unavailable);
    const tailed: EventLogEntry[] = [];
    await assert.rejects(async () => {
      for await (const entry of fresh.tailEntries(rootId, '0')) tailed.push(entry);
    }, unavailable);
    assert.equal(tailed.length, 0, 'no entry reached the reader before the failure');
    assert.equal(fresh.tailCount, 0, 'the failed tail left the shared tail');

    // Readable again: the same log resolves the ref and hands out every Event whole.
    await redis.acl('SETUSER', user, '+hmget');
    const abort = new AbortController();
    const length = await client.xlen(eventsKey(prefix, rootId));
    for await (const entry of fresh.tailEntries(rootId, '0', { signal: abort.signal })) {
      tailed.push(entry);
      if (tailed.length === length) abort.abort();
    }
    const events = tailed.filter((entry) => entry.fields.event !== undefined);
    assert.ok(events.length > 0);
    for (const entry of events) assert.ok(entry.fields.event?.startsWith('{"deployment_ref":{'), `${entry.fields.name} has its ref back`);
  } finally {
    await fresh.close();
    client.disconnect();
    await redis.acl('DELUSER', user);
  }
});
