/**
 * Spliced snapshots (issue 13, "a store format that ships only what changed"): an advance of a large
 * tree sends the commit script only the text after the part it shares with the stored head, and the
 * script rebuilds the bytes. The stored head must stay byte for byte the tree's canonical JSON, what
 * travels must be the tail, and a splice that does not fit what is stored must write nothing and be
 * sent whole. Against a private redis-server.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Descriptor } from '../../../src/kernel/descriptor.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Engine } from '../../../src/kernel/engine.js';
import type { Event } from '../../../src/kernel/event.js';
import { checkpointSpacing } from '../../../src/kernel/hash-trail.js';
import { Payload } from '../../../src/kernel/payload.js';
import type { Process } from '../../../src/kernel/process.js';
import { Schema } from '../../../src/kernel/schema.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { Transition } from '../../../src/kernel/transition.js';
import { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import { eventsKey, factsKey, headKey, purgedKey, snapshotKey } from '../../../src/store/redis/keys.js';
import { RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { runScript } from '../../../src/store/redis/scripts.js';
import { machineDefinition } from '../../../strategies/internal/machine.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { netInputBytes, scriptCalls } from '../../helpers/redis-stats.js';

let server: RedisServer;
let redis: Redis;

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.port, '127.0.0.1');
});

after(async () => {
  redis.disconnect();
  await server.stop();
});

/**
 * Sums `{add}` signals and pauses when its window is empty, like example.counter, but its state keeps a
 * label from its input: non-ASCII text ahead of the mailbox in the stored bytes, so that the bytes a
 * splice keeps and the characters they hold differ in number.
 */
type Tally = { readonly label: string; readonly total: number };
const tallyDefinition = machineDefinition<Tally>({
  descriptor: Descriptor.create({
    name: 'test.tally',
    description: 'Sums add signals under a label.',
    inputSchema: Schema.of({ type: 'object', properties: { label: { type: 'string' } }, required: ['label'], additionalProperties: false }),
    outputSchema: Schema.of(true),
    signalSchema: Schema.of({ type: 'object', properties: { add: { type: 'integer' } }, required: ['add'], additionalProperties: false }),
  }),
  stateKind: 'test.tally.state',
  initial: (input) => ({ label: input.decode<{ label: string }>().label, total: 0 }),
  check: (value) => value as Tally,
  step(state, signals) {
    if (signals.length === 0) return { state, transition: Transition.pause(0, 'waiting for adds') };
    const total = signals.reduce((sum, signal) => sum + signal.payload.decode<{ add: number }>().add, state.total);
    return { state: { ...state, total }, transition: Transition.continue(signals.length) };
  },
});
const tally = Deployment.create({
  definition: tallyDefinition,
  implementationDigest: Digest.of('test:splice:implementation'),
  configurationDigest: Digest.of('test:splice:configuration'),
});
const label = 'naïve café ☕ 𝄞';

let sequence = 0;
const add = (): SignalRequest => SignalRequest.create({ id: `splice-${(sequence += 1)}`, payload: Payload.encode({ add: 1 }) });

/** Resolves once the counter paused (consumed its window) more than `count` times. */
function pauses(): { listener: (event: Event) => void; after: (count: number) => Promise<void> } {
  let seen = 0;
  const waiters = new Set<() => void>();
  return {
    listener: (event) => {
      if (event.name !== 'agent.step.committed' || event.stepCommitted()?.status !== 'paused') return;
      seen += 1;
      for (const waiter of [...waiters]) waiter();
    },
    after: (count) =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (seen <= count) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
  };
}

/** A paused tally whose retained history makes its tree larger than one hash checkpoint. */
async function largeTree(prefix: string): Promise<{ engine: Engine; committer: RedisTreeCommitter; root: Process; stored: () => Promise<string> }> {
  const committer = new RedisTreeCommitter({ redis, keyPrefix: prefix, timeoutMs: 30_000 });
  const paused = pauses();
  const engine = new Engine({ committer, eventListeners: [paused.listener] });
  const root = await engine.start(tally, Payload.encode({ label }));
  await paused.after(0);
  for (let round = 1; round <= 8; round += 1) {
    await root.deliverSignals(...Array.from({ length: 100 }, add));
    await root.resume();
    await paused.after(round);
  }
  const stored = async (): Promise<string> => (await redis.get(snapshotKey(prefix, root.id.toString()))) as string;
  return { engine, committer, root, stored };
}

/** How many scripts Redis ran while `run` ran. */
async function scriptsDuring(run: () => Promise<unknown>): Promise<number> {
  const before = await scriptCalls(redis);
  await run();
  return (await scriptCalls(redis)) - before;
}

test('a large tree’s commits travel as splices, and the stored head stays its canonical bytes', async () => {
  const { engine, root, stored } = await largeTree('splice1');
  const size = (await engine.captureTree(root.id)).encodedSize;
  assert.ok(size > 2 * checkpointSpacing, `the tree (${size} bytes) is large enough to be hashed in pieces`);
  let previous = await engine.captureTree(root.id);
  for (let accept = 0; accept < 5; accept += 1) {
    const before = await netInputBytes(redis);
    await root.deliverSignals(add());
    const sent = (await netInputBytes(redis)) - before;
    const tree = await engine.captureTree(root.id);
    const edit = tree.editOf(previous.digest);
    assert.ok(edit !== undefined && edit.keptBytes > tree.encodedSize / 2, 'most of the tree is kept');
    assert.equal(Buffer.concat([Buffer.from(previous.json()).subarray(0, edit.keptBytes), Buffer.from(edit.tail)]).toString(), tree.json());
    assert.equal(tree.editOf(Digest.of('another tree')), undefined, 'an edit only of the tree it was hashed against');
    previous = tree;
    const bytes = await stored();
    assert.ok(bytes.includes(label));
    assert.equal(bytes, tree.json(), 'the stored head is the tree’s canonical JSON, byte for byte');
    assert.equal(TreeSnapshot.parse(bytes).digest.toString(), tree.digest.toString());
    assert.ok(sent < tree.encodedSize / 4, `accepting one signal sent ${sent} bytes for a ${tree.encodedSize}-byte tree`);
  }
  await root.kill('test done');
  const final = await engine.captureTree(root.id);
  assert.equal(await stored(), final.json());
  await engine.close();
});

test('a splice that does not fit the stored snapshot writes nothing, and the commit is sent whole', async () => {
  const { engine, root, stored } = await largeTree('splice2');
  const key = headKey('splice2', root.id.toString());
  const bytesKey = snapshotKey('splice2', root.id.toString());
  const control = await scriptsDuring(() => root.deliverSignals(add()));
  // The stored bytes are cut short behind the committer's back (the digest still names the full text):
  // they are shorter than what the splice keeps.
  await redis.set(bytesKey, (await stored()).slice(0, 100));
  assert.equal(await scriptsDuring(() => root.deliverSignals(add())), control + 1, 'the splice was sent, refused, and the commit sent again');
  let tree = await engine.captureTree(root.id);
  assert.equal(await stored(), tree.json(), 'the commit went whole after the splice was refused');
  assert.equal(await redis.hget(key, 'digest'), tree.digest.toString());
  // Longer than the spliced result would be: a splice never truncates.
  await redis.append(bytesKey, ' '.repeat(10_000));
  assert.equal(await scriptsDuring(() => root.deliverSignals(add())), control + 1);
  tree = await engine.captureTree(root.id);
  assert.equal(await stored(), tree.json());
  await root.kill('test done');
  await engine.close();
});

test('the scripts refuse a malformed splice, a tail that does not come to its total, and a start sent as a splice, writing nothing', async () => {
  const { engine, root, stored } = await largeTree('splice3');
  const rootId = root.id.toString();
  const head = headKey('splice3', rootId);
  const before = await redis.hgetall(head);
  const bytesBefore = await stored();
  const [digest, sequenceText, incarnation] = [before.digest as string, before.sequence as string, before.incarnation as string];
  const keys = [head, factsKey('splice3', rootId), eventsKey('splice3', rootId), snapshotKey('splice3', rootId)];
  const reply = (await runScript(redis, 'commitEffect', keys, ['effect:x', 'sha256:' + '0'.repeat(64), String(BigInt(sequenceText) + 1n), digest, 'sha256:' + '1'.repeat(64), incarnation, '+12,x,tail'])) as unknown[];
  assert.deepEqual(reply, [-4, 'a spliced snapshot is +<kept>,<total>,<tail>']);
  // Well formed, but its tail does not come to the total it names: refused as stale (sent whole next).
  const kept = Buffer.byteLength(bytesBefore) - 10;
  const short = (await runScript(redis, 'commitEffect', keys, ['effect:x', 'sha256:' + '0'.repeat(64), String(BigInt(sequenceText) + 1n), digest, 'sha256:' + '1'.repeat(64), incarnation, `+${kept},${kept + 20},tail`])) as unknown[];
  assert.deepEqual(short, [-5]);
  const start = (await runScript(redis, 'commitCheckpoint', [headKey('splice3', 'process:other'), factsKey('splice3', 'process:other'), purgedKey('splice3', 'process:other'), eventsKey('splice3', 'process:other'), snapshotKey('splice3', 'process:other')], ['start', 'c', 'sha256:' + '0'.repeat(64), '1', '', 'sha256:' + '1'.repeat(64), incarnation, '+1,1,x'])) as unknown[];
  assert.deepEqual(start, [-4, 'a start sends its snapshot whole']);
  assert.deepEqual(await redis.hgetall(head), before, 'nothing was written');
  assert.equal(await stored(), bytesBefore);
  await root.kill('test done');
  await engine.close();
});

test('a tree restored by another writer from its stored head goes on committing as splices after its first commit, fencing the old one', async () => {
  const { engine: first, root, stored } = await largeTree('splice4');
  // A second writer takes the tree over from what Redis holds (the activation writes it whole).
  const committer = new RedisTreeCommitter({ redis, keyPrefix: 'splice4', timeoutMs: 30_000 });
  const loaded = await committer.loadTree(root.id);
  assert.ok(loaded !== undefined);
  const second = new Engine({ committer });
  const restored = await second.restoreTree(tally, loaded);
  assert.ok(!(await second.captureTree(root.id)).incarnationId.equals(loaded.incarnationId), 'a new incarnation');
  for (let accept = 0; accept < 3; accept += 1) {
    const before = await netInputBytes(redis);
    await restored.deliverSignals(add());
    const sent = (await netInputBytes(redis)) - before;
    const tree = await second.captureTree(root.id);
    assert.equal(await stored(), tree.json());
    // The first commit after the activation goes whole (its tree was not hashed against the activated head's).
    if (accept === 0) continue;
    assert.ok(sent < tree.encodedSize / 4, `accepting one signal sent ${sent} bytes for a ${tree.encodedSize}-byte tree`);
  }
  // The first writer is fenced: its next commit changes nothing.
  await assert.rejects(root.deliverSignals(add()));
  assert.equal(await stored(), (await second.captureTree(root.id)).json());
  await restored.kill('test done');
  await second.close();
  await first.close();
});
