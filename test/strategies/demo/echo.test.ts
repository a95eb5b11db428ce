/**
 * demo.echo end to end through the Engine: its dispatcher streams one delta per character, and the
 * log a Host records from the listeners reads in causal order — every delta before the Effect's
 * settlement is committed, `agent.step.finished` before the commit it leads to, and
 * `agent.process.finished` last.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { echoDefinition } from '../../../strategies/demo/echo.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import type { Delta } from '../../../src/kernel/delta.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Engine } from '../../../src/kernel/engine.js';
import type { Event } from '../../../src/kernel/event.js';
import { Payload } from '../../../src/kernel/payload.js';
import { echoDispatcher } from '../../../src/server/demo-dispatchers.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';

test('demo.echo: deltas, step and process events arrive in causal order', async () => {
  const log: string[] = [];
  const engine = new Engine({
    committer: new MemoryTreeCommitter(),
    eventListeners: [(event: Event) => void log.push(event.name)],
    // Like a Host exporter: each delta is handed on asynchronously.
    deltaListeners: [async (delta: Delta) => void log.push(`delta ${(delta.payload.decode() as { char: string }).char}`)],
  });
  const echo = Deployment.create({
    definition: echoDefinition,
    dispatcher: echoDispatcher(),
    implementationDigest: Digest.of('test:demo.echo'),
    configurationDigest: Digest.of('test:demo.echo'),
  });
  const result = await engine.run(echo, Payload.encode({ value: 'héllo' }));
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { value: 'héllo' });
  await engine.flushDeltas();
  assert.deepEqual(log, [
    'agent.process.started',
    'agent.step.started',
    'agent.step.prepared',
    'agent.step.finished',
    'agent.effect.started',
    ...[...'héllo'].map((char) => `delta ${char}`),
    'agent.effect.finished',
    'agent.step.committed',
    'agent.step.started',
    'agent.step.finished',
    'agent.step.committed',
    'agent.process.finished',
  ]);
  await engine.close();
});
