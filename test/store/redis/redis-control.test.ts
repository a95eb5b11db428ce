import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { deferred } from '../../../src/kernel/deferred.js';
import { Engine } from '../../../src/kernel/engine.js';
import { Payload } from '../../../src/kernel/payload.js';
import { RuntimeError } from '../../../src/kernel/runtime-error.js';
import { Transition } from '../../../src/kernel/transition.js';
import { RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { ObservationRecorder } from '../../../src/testing/scripted-dispatcher.js';
import { deploy, ProgramDefinition } from '../../kernel/engine/harness.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

/**
 * Durable host control over a real redis-server (issue 10, fix 4): an acknowledged cancel, kill or
 * pause is in the Redis head, so an Engine dropped right after the acknowledgment is recovered by a
 * fresh Engine (own connection) that applies the intent before any Step.
 */

let server: RedisServer;
const clients: Redis[] = [];

before(async () => {
  server = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
});

after(async () => {
  for (const redis of clients) redis.disconnect();
  await server?.stop();
});

function committer(prefix: string): RedisTreeCommitter {
  const redis = new Redis(server.port, '127.0.0.1', { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: null });
  redis.on('error', () => {});
  clients.push(redis);
  return new RedisTreeCommitter({ redis, keyPrefix: prefix, timeoutMs: 2_000 });
}

for (const action of ['cancel', 'kill', 'pause'] as const) {
  test(`redis: ${action} acknowledged during a Step, then the engine is dropped: the restored Process honours it before any Step`, async () => {
    const prefix = `control${process.pid}-${action}`;
    const started = deferred();
    const gate = deferred();
    let steps = 0;
    const deployment = deploy(
      new ProgramDefinition({
        async step({ step }) {
          steps += 1;
          if (step === 1 && steps === 1) {
            started.resolve();
            await gate.promise;
          }
          return Transition.complete(0, Payload.encode({ step }));
        },
      }),
    );
    const first = new Engine({ committer: committer(prefix) });
    const original = await first.start(deployment, Payload.encode({}));
    await started.promise;
    if (action === 'cancel') await original.requestCancellation('operator');
    else if (action === 'kill') await original.kill('operator');
    else await original.pause('hold');

    // The crash: the first Engine is abandoned as it stands; a fresh one reads the Redis head.
    const recovery = committer(prefix);
    const head = await recovery.loadTree(original.id);
    assert.ok(head !== undefined);
    const control = head.root.pendingControl;
    assert.equal(action === 'cancel' ? control.cancellation?.reason : action === 'kill' ? control.killReason : control.pauseReason, action === 'pause' ? 'hold' : 'operator');
    const recorder = new ObservationRecorder();
    const second = new Engine({ committer: recovery, eventListeners: [recorder] });
    const restored = await second.restoreTree(deployment, head);
    if (action === 'pause') {
      // Published only once the parked checkpoint is acknowledged by Redis.
      await recorder.awaitEvent((event) => event.name === 'agent.process.paused');
      const paused = await recovery.loadTree(original.id);
      assert.equal(paused?.root.status, 'paused');
      assert.equal(paused?.root.pauseReason, 'hold');
      assert.equal(steps, 1, 'no Step ran before the pause applied');
      await restored.resume();
      assert.equal((await restored.await()).status, 'completed');
    } else {
      const result = await restored.await();
      assert.equal(result.status, action === 'cancel' ? 'canceled' : 'killed');
      assert.equal(steps, 1, 'the restored Process ran no Step');
      assert.equal((await recovery.loadTree(original.id))?.root.status, result.status);
    }
    gate.resolve();
    await assert.rejects(original.await(), RuntimeError);
    await second.close();
  });
}
