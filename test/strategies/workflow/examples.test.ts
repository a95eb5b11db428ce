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
import { batchMaxItems, workflowExampleNames } from '../../../src/server/examples/workflow.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';

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
