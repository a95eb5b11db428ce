/**
 * A message in flight when its sender's server crashed (Redis mode): the recipient admitted it, the
 * sender's settlement never committed. Restored on another Host, the sender's pending Effect is replayed
 * under its EffectId (`same_identity`), so it delivers the same SignalId, which the recipient already
 * holds: one receipt, and the sender completes.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { messageSignalId, sendCapability } from '../../../strategies/messaging/message.js';
import { notifyDefinition } from '../../../strategies/messaging/notify.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import { EffectId, ProcessId } from '../../../src/kernel/identity.js';
import { type DeliveryPort, messagingDispatcher } from '../../../src/server/dispatchers/messaging.js';
import type { EngineHost } from '../../../src/server/engine-host.js';
import { hostDeliveryPort } from '../../../src/server/messaging-delivery.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { effectsOf, freshPrefix, redisHost, result, start, stepCommittedWith, untilSettled } from '../../server/harness.js';

let server: RedisServer;

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  await server?.stop();
});

const env = { SCOPE_GRANTS: JSON.stringify({ capabilities: [sendCapability] }) };

/** The notify deployment over `port`, with fixed digests so both Hosts bind the same ref. */
function notifyOver(port: DeliveryPort): Deployment {
  return Deployment.create({
    definition: notifyDefinition,
    dispatcher: messagingDispatcher({ port }),
    implementationDigest: Digest.of('test:messaging:restore'),
    configurationDigest: Digest.of('test:messaging:restore'),
  });
}

test('redis: a message replayed after its sender was restored elsewhere delivers the same signal id once', async () => {
  const prefix = freshPrefix();
  let first: EngineHost | undefined;
  let admitted!: (signalId: string) => void;
  const admission = new Promise<string>((resolve) => (admitted = resolve));
  let unblock!: () => void;
  const blocked = new Promise<void>((_resolve, reject) => (unblock = () => reject(new Error('the crashed server never answers'))));
  blocked.catch(() => undefined);
  const firstPort = hostDeliveryPort({ host: () => first as EngineHost });
  // The first server admits the message, then crashes before its settlement commits.
  const stalling: DeliveryPort = {
    async deliver(sender, recipient, request, signal) {
      await firstPort.deliver(sender, recipient, request, signal);
      admitted(request.id.toString());
      await blocked;
      throw new Error('unreachable');
    },
  };
  const crashed = redisHost({ url: server.url, prefix, env, deployments: [notifyOver(stalling)] });
  first = crashed.host;
  let second: EngineHost | undefined;
  const secondRun = redisHost({ url: server.url, prefix, env, deployments: [notifyOver(hostDeliveryPort({ host: () => second as EngineHost }))] });
  second = secondRun.host;
  try {
    const recipient = (await start(first, 'demo.approval', { subject: 'restore' })).processId;
    await untilSettled(first, recipient, stepCommittedWith('waiting', recipient));
    const sender = (await start(first, 'example.messaging.notify', { recipient, payload: { note: 'exactly once' } })).processId;
    const signalId = await admission;
    assert.equal(signalId, messageSignalId(EffectId.derive(ProcessId.parse(sender), 1n, 0)).toString());
    crashed.redis.disconnect();

    await second.restoreTree(recipient);
    await second.restoreTree(sender);
    const sent = await result(second, sender);
    assert.equal(sent.status, 'completed', JSON.stringify(sent.failure));
    assert.deepEqual(sent.output, { recipient, signalId });
    const [effect] = await effectsOf(second, sender);
    assert.equal(effect?.attempts, 2, 'the pending Effect was replayed on restore');
    const receipts = (await second.signals(recipient, { limit: 1000 })).items.filter((item) => item.id.startsWith('signal:message:'));
    assert.deepEqual(receipts.map((item) => item.id), [signalId]);
  } finally {
    unblock();
    await second.close(1_000);
    secondRun.redis.disconnect();
  }
});

test('redis + bullmq: the message is delivered by the sender\'s owner, with no worker running (the dispatcher stays in the owner)', async () => {
  const prefix = freshPrefix();
  const { host, redis } = redisHost({ url: server.url, prefix, env: { ...env, SCOPE_TRANSPORT: 'bullmq', SCOPE_TRANSPORT_CLAIM_MS: '2000' } });
  try {
    assert.equal((await host.readiness()).checks['worker:example.messaging.notify'], undefined, 'no worker is awaited for it');
    const recipient = (await start(host, 'demo.approval', { subject: 'bullmq' })).processId;
    await untilSettled(host, recipient, stepCommittedWith('waiting', recipient));
    const sender = (await start(host, 'example.messaging.notify', { recipient, payload: { note: 'owner-side' } })).processId;
    const sent = await result(host, sender);
    assert.equal(sent.status, 'completed', JSON.stringify(sent.failure));
    const receipts = (await host.signals(recipient, { limit: 1000 })).items.filter((item) => item.id.startsWith('signal:message:'));
    assert.equal(receipts.length, 1);
  } finally {
    await host.close(1_000);
    redis.disconnect();
  }
});
