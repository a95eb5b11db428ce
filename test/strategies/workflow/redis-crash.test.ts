import assert from 'node:assert/strict';
import { test } from 'node:test';
import { committed, crashFixture, type LogEntry, readLog, resultOf, startProcess, stop, untilChildrenPublished, untilTakenOver } from '../../helpers/crash-harness.js';

/**
 * A workflow survives a SIGKILLed writer in the middle of its fan-out: `scope serve` in Redis mode
 * runs example.workflow.batch over 40 values (ten windows of four demo.echo children) and is
 * SIGKILLed once a few children were published; a second server over the same Redis takes the tree
 * over when the dead server's lease lapses and lets it finish. The output equals an uninterrupted
 * run's, every child is published and finishes exactly once, and no window ever started before the
 * previous one drained — across the crash too.
 */

const values = Array.from({ length: 40 }, (_, index) => `item-${index}`);
const windowSize = 4;
const { serve } = crashFixture();

const startBatch = (url: string): Promise<string> => startProcess(url, 'example.workflow.batch', { values });

test('example.workflow.batch SIGKILLed mid fan-out in Redis mode: taken over, it completes with the uninterrupted output', async () => {
  const prefix = `workflowcrash${process.pid}`;
  const first = await serve(prefix);
  const rootId = await startBatch(first.url);

  const live = await untilChildrenPublished(first.url, rootId, 6);
  await stop(first, 'SIGKILL');
  live.close();

  const second = await serve(prefix);
  const crashed = await readLog(second.url, rootId);
  assert.ok(!committed(crashed, 'agent.process.finished').some((entry) => entry.processId === rootId), 'the crash came before the workflow finished');
  const before = new Set(committed(crashed, 'agent.process.started').map((entry) => entry.processId));
  assert.ok(before.size - 1 < values.length, `the crash cut the fan-out short (${before.size - 1} of ${values.length} children published)`);

  await untilTakenOver(second.url, rootId);
  const recovered = await resultOf(second.url, rootId);
  assert.equal(recovered.status, 'completed', JSON.stringify(recovered));

  // The same input, uninterrupted, on the live server: the same output.
  const reference = await resultOf(second.url, await startBatch(second.url));
  assert.equal(reference.status, 'completed');
  assert.deepEqual(recovered.output, reference.output);
  assert.deepEqual(recovered.output, { echoes: values, count: values.length });

  // Every child published once and finished once; window k+1 started only after window k drained.
  const log = await readLog(second.url, rootId);
  const starts = committed(log, 'agent.process.started').filter((entry) => entry.processId !== rootId);
  const finishes = committed(log, 'agent.process.finished').filter((entry) => entry.processId !== rootId);
  assert.equal(starts.length, values.length, 'each child is published exactly once');
  assert.equal(new Set(starts.map((entry) => entry.processId)).size, values.length);
  assert.equal(finishes.length, values.length, 'each child finishes exactly once');
  // Log order is commit order (a Redis stream id is not a number, so the index in the log is used).
  const position = (entry: LogEntry) => log.indexOf(entry);
  const finishedAt = new Map(finishes.map((entry) => [entry.processId, position(entry)]));
  for (let window = 1; window < values.length / windowSize; window += 1) {
    const previous = starts.slice((window - 1) * windowSize, window * windowSize).map((entry) => finishedAt.get(entry.processId) as number);
    const firstStart = position(starts[window * windowSize] as LogEntry);
    assert.ok(previous.every((finished) => finished < firstStart), `window ${window} started after window ${window - 1} drained`);
  }
  assert.equal(committed(log, 'agent.process.finished').filter((entry) => entry.processId === rootId).length, 1, 'the workflow finishes once');

  await stop(second, 'SIGTERM');
});
