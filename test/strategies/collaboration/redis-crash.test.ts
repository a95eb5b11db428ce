import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crashFixture, resultOf, startProcess, stop, treeOf, untilChildrenPublished, untilTakenOver } from '../../helpers/crash-harness.js';

/**
 * example.collaboration.research survives a SIGKILLed `scope serve` in Redis mode: the server is
 * killed once the first turn's two tasks are published (the survey task is then sleeping), a new
 * server over the same Redis takes the tree over after the dead server's lease lapsed, and the
 * collaboration completes with exactly the output of an uninterrupted run. The coordinator is
 * order-insensitive, so how many turns either run took does not change the output.
 */

const { serve } = crashFixture();
const prefix = `collabcrash${process.pid}`;
const input = { topic: 'durable agents', surveyMs: 1500 };
const start = (url: string): Promise<string> => startProcess(url, 'example.collaboration.research', input);

test('a SIGKILL mid-collaboration: after takeover the research completes with the output of an uninterrupted run', async () => {
  const first = await serve(prefix);
  const uninterrupted = await resultOf(first.url, await start(first.url));
  assert.equal(uninterrupted.status, 'completed', JSON.stringify(uninterrupted));

  const rootId = await start(first.url);
  // Kill once turn 1 and both of its tasks are published.
  const live = await untilChildrenPublished(first.url, rootId, 3);
  await stop(first, 'SIGKILL');
  live.close();

  const second = await serve(prefix);
  const crashed = await treeOf(second.url, rootId);
  assert.ok(crashed.processes.some((entry) => entry.processId === rootId && entry.status === 'running'), 'the collaboration had not finished at the crash');
  // The dead server's lease lapses and this one takes the tree over.
  await untilTakenOver(second.url, rootId);
  const restored = await resultOf(second.url, rootId);
  assert.equal(restored.status, 'completed', JSON.stringify(restored));
  assert.deepEqual(restored.output, uninterrupted.output);

  // One notes task and one survey task, each published once; every process finished.
  const tree = await treeOf(second.url, rootId);
  const children = tree.processes.filter((entry) => entry.parentId === rootId);
  assert.equal(children.filter((entry) => entry.deployment === 'example.collaboration.research.notes').length, 1);
  assert.equal(children.filter((entry) => entry.deployment === 'example.collaboration.research.survey').length, 1);
  assert.ok(tree.processes.every((entry) => entry.status === 'completed'), JSON.stringify(tree.processes));

  await stop(second, 'SIGTERM');
});
