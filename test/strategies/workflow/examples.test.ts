/**
 * The registered workflow examples run with the demo dispatchers: example.workflow.review merges two
 * reviewer children; example.workflow.batch maps its values through echo children four at a time
 * and refuses more than its maxItems.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Deployment } from '../../../src/kernel/deployment.js';
import type { Event } from '../../../src/kernel/event.js';
import { Engine } from '../../../src/kernel/engine.js';
import { Payload } from '../../../src/kernel/payload.js';
import { demoDeployments } from '../../../src/server/demos.js';
import { batchDefinition, batchMaxItems, reviewDefinition, workflowExampleNames } from '../../../src/server/examples/workflow.js';
import { runDefinitionConformance } from '../../../src/testing/definition-conformance.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { echo as echoDeployment } from './fixtures.js';
import { answer, childOf, opened, started } from './signals.js';

const byName = (name: string): Deployment => {
  const found = demoDeployments().find((deployment) => deployment.ref.name === name);
  assert.ok(found, `${name} is registered`);
  return found;
};

test('the workflow examples are registered, with fixed refs', () => {
  for (const name of workflowExampleNames) assert.equal(byName(name).ref.toString(), byName(name).ref.toString());
});

test('example.workflow.review: two reviewer children, merged', async () => {
  const engine = new Engine({ committer: new MemoryTreeCommitter() });
  const result = await engine.run(byName('example.workflow.review'), Payload.encode({ subject: 'v2', text: 'ship it' }));
  await engine.close();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  assert.deepEqual(result.output?.decode(), { subject: 'v2', reviews: { security: 'security review of v2: ship it', style: 'style review of v2: ship it' } });
});

test('example.workflow.batch: windows of four echo children, in order; more than maxItems is refused', async () => {
  const started: string[] = [];
  const engine = new Engine({ committer: new MemoryTreeCommitter(), eventListeners: [(event: Event) => void (event.name === 'agent.process.started' && started.push(event.processId.toString()))] });
  const values = Array.from({ length: 10 }, (_, index) => `v${index}`);
  const result = await engine.run(byName('example.workflow.batch'), Payload.encode({ values }));
  assert.deepEqual(result.output?.decode(), { echoes: values, count: 10 });
  assert.equal(started.length, 11, 'the root and one child per value');
  const tooMany = await engine.run(byName('example.workflow.batch'), Payload.encode({ values: Array.from({ length: batchMaxItems + 1 }, () => 'x') }));
  assert.equal(tooMany.termination.failure?.code, 'workflow.map.too_many_items');
  await engine.close();
});

// The examples' Definitions against the Definition conformance suite, over the windows the Engine delivers.
const review = reviewDefinition(echoDeployment);
runDefinitionConformance('example.workflow.review', {
  definition: review,
  input: Payload.encode({ subject: 'v2', text: 'ship it' }),
  initialSignals: [],
  followingSignals: [
    [started(1n, 0), started(1n, 1)],
    [opened(2n)],
    [answer(2n, [{ child: childOf(1n, 0), output: { value: 'security review of v2: ship it' } }, { child: childOf(1n, 1), output: { value: 'style review of v2: ship it' } }])],
  ],
});

runDefinitionConformance('example.workflow.batch', {
  definition: batchDefinition(echoDeployment),
  input: Payload.encode({ values: ['a', 'b', 'c', 'd', 'e'] }),
  initialSignals: [],
  followingSignals: [
    [started(1n, 0), started(1n, 1), started(1n, 2), started(1n, 3)],
    [opened(2n)],
    [answer(2n, ['a', 'b', 'c', 'd'].map((value, index) => ({ child: childOf(1n, index), output: { value } })))],
    [started(4n, 0)],
    [opened(5n)],
    [answer(5n, [{ child: childOf(4n, 0), output: { value: 'e' } }])],
  ],
});

test('the review example completes with the merged reviews once its window drained', async () => {
  const execution = await review.start(Payload.encode({ subject: 'v2', text: 'ship it' }));
  const signal = new AbortController().signal;
  await execution.step(signal, []);
  await execution.step(signal, [started(1n, 0), started(1n, 1)]);
  await execution.step(signal, [opened(2n)]);
  const done = await execution.step(signal, [answer(2n, [{ child: childOf(1n, 0), output: { value: 'sec' } }, { child: childOf(1n, 1), output: { value: 'sty' } }])]);
  assert.equal(done.kind, 'complete');
  assert.deepEqual(done.output?.decode(), { subject: 'v2', reviews: { security: 'sec', style: 'sty' } });
});
