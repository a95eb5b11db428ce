import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Engine } from '../../../src/kernel/engine.js';
import { KernelError } from '../../../src/kernel/errors.js';
import type { ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { RuntimeError } from '../../../src/kernel/runtime-error.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { CommitWatcher } from '../../../src/testing/commit-gate.js';
import { waitDefinition } from '../../../src/testing/example-definitions.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

/**
 * Engines over a real redis-server: a server killed mid-commit stops the writer with a
 * RuntimeError and the tree finishes after restore from the authoritative head; Engines racing on
 * one tree never fork its head.
 */

let server: RedisServer;
const clients: Redis[] = [];
let prefixes = 0;

before(async () => {
  server = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
});

after(async () => {
  for (const redis of clients) redis.disconnect();
  await server?.stop();
});

function store(options: { timeoutMs?: number; prefix?: string } = {}): { committer: RedisTreeCommitter; prefix: string } {
  const redis = new Redis(server.port, '127.0.0.1', { autoResendUnfulfilledCommands: false, retryStrategy: () => 20, maxRetriesPerRequest: null });
  redis.on('error', () => {});
  clients.push(redis);
  prefixes += 1;
  const prefix = options.prefix ?? `engine${process.pid}-${prefixes}`;
  return { committer: new RedisTreeCommitter({ redis, keyPrefix: prefix, timeoutMs: options.timeoutMs ?? 2_000 }), prefix };
}

const deployment = Deployment.create({
  definition: waitDefinition,
  implementationDigest: Digest.of('redis-engine-wait-implementation'),
  configurationDigest: Digest.of('redis-engine-wait-configuration'),
});

async function waiting(watcher: CommitWatcher, rootId: ProcessId) {
  const tree = await watcher.awaitTree(rootId, (candidate) => candidate.root.status === 'waiting');
  return tree.root.waitId as NonNullable<typeof tree.root.waitId>;
}

test('redis engine: SIGKILL between a commit and its reply stops the writer; restore from the authoritative head finishes', async () => {
  const first = store({ timeoutMs: 500 });
  const watcher = new CommitWatcher(first.committer);
  const engine = new Engine({ committer: watcher });
  const process = await engine.start(deployment, Payload.encode({}));
  const waitId = await waiting(watcher, process.id);
  const acknowledged = await first.committer.loadTree(process.id);

  // The answer's signals checkpoint goes into a socket the server never reads; then it dies.
  server.pause();
  const answer = SignalRequest.create({ id: 'signal:answer', waitId, payload: Payload.encode({ approved: true }) });
  const delivery = process.deliverSignals(answer);
  delivery.catch(() => undefined);
  await server.kill('SIGKILL');
  await assert.rejects(delivery, (error: unknown) => error instanceof RuntimeError && error.causeCode === 'committer_unavailable');
  const stopped = await process.await().then(
    () => assert.fail('a stopped writer must not report a result'),
    (error: unknown) => error as RuntimeError,
  );
  assert.ok(stopped instanceof RuntimeError);
  assert.equal(stopped.headDigest.equals(acknowledged?.digest), true, 'the error names the last acknowledged head');

  await server.restart();
  const second = store({ prefix: first.prefix });
  const head = await second.committer.loadTree(process.id);
  assert.ok(head !== undefined);
  assert.equal(head.digest.equals(acknowledged?.digest), true, 'the lost commit was never installed');
  const recovered = new Engine({ committer: second.committer });
  const restored = await recovered.restoreTree(deployment, head);
  assert.equal(await restored.deliverSignals(answer), true);
  const result = await restored.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { approved: true });
  await recovered.close();
});

test('redis engine: two Engines racing on one tree, 200 rounds: one writer survives, heads never fork', async () => {
  const { committer } = store();
  const watcher = new CommitWatcher(committer);
  const source = new Engine({ committer: watcher });
  const rounds = 200;
  for (let round = 0; round < rounds; round += 1) {
    const process = await source.start(deployment, Payload.encode({}));
    const waitId = await waiting(watcher, process.id);
    const base = await committer.loadTree(process.id);
    assert.ok(base !== undefined);
    // Two new writers restore the same head at once: exactly one activation lands.
    const contenders = [new Engine({ committer }), new Engine({ committer })];
    const outcomes = await Promise.allSettled(contenders.map((engine) => engine.restoreTree(deployment, base)));
    const winners = outcomes.flatMap((outcome, index) => (outcome.status === 'fulfilled' ? [{ process: outcome.value, engine: contenders[index] as Engine }] : []));
    const losers = outcomes.filter((outcome) => outcome.status === 'rejected');
    assert.equal(winners.length, 1, `round ${round}: one winner`);
    assert.ok(losers.every((outcome) => outcome.status === 'rejected' && outcome.reason instanceof KernelError && outcome.reason.code === 'tree_incarnation_conflict'));
    const winner = winners[0] as { process: Awaited<ReturnType<Engine['restoreTree']>>; engine: Engine };
    // The fenced source and the winner both answer: only the winner's commit lands.
    const answer = SignalRequest.create({ id: `signal:answer-${round}`, waitId, payload: Payload.encode({ round }) });
    const [fenced, survived] = await Promise.allSettled([process.deliverSignals(answer), winner.process.deliverSignals(answer)]);
    assert.ok(fenced.status === 'rejected' && fenced.reason instanceof RuntimeError && fenced.reason.causeCode === 'tree_incarnation_conflict', `round ${round}: the fenced writer stops`);
    assert.ok(survived.status === 'fulfilled' && survived.value === true, `round ${round}: the survivor's answer lands`);
    const result = await winner.process.await();
    assert.equal(result.status, 'completed');
    const head = await committer.loadTree(process.id);
    assert.ok(head !== undefined && head.root.status === 'completed');
    assert.equal(head.incarnationId.equals(winner.engine.inspectTree(process.id).incarnationId), true, `round ${round}: the head belongs to the survivor`);
    await winner.engine.close();
  }
});
