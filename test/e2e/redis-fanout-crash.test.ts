import assert from 'node:assert/strict';
import { test } from 'node:test';
import { committedCounts, crashFixture, post, readLog, resultOf, startProcess, stop, treeOf, untilChildrenPublished, untilTakenOver } from '../helpers/crash-harness.js';

/**
 * A process tree survives a SIGKILLed writer in the middle of its fan-out: `scope serve` in Redis
 * mode starts demo.fanout with 20 echo children, is SIGKILLed once some (not all) children were
 * published, and a new server over the same Redis takes the tree over (once the dead server's lease
 * lapsed) and lets it finish. The
 * committed log then shows every child published exactly once (one `agent.process.started`, which
 * rides in the child's `child_start` checkpoint) and finished exactly once (one
 * `agent.process.finished`, in its terminal checkpoint): a child admission cut short by the crash
 * may run again after recovery, its publication may not.
 */


const fanout = 20;
const { serve: serveOn } = crashFixture();
// All 20 children may be live at once (the default grant allows 16 active children).
const serve = (prefix: string) => serveOn(prefix, { SCOPE_GRANTS: JSON.stringify({ treeLimits: { maxActiveChildren: 32 } }) });

test(`a SIGKILL in the middle of a fan-out of ${fanout}: after restore every child is published once and finishes once`, async () => {
  const prefix = `fanoutcrash${process.pid}`;
  const first = await serve(prefix);
  const values = Array.from({ length: fanout }, (_, index) => `value-${index}`);
  const rootId = await startProcess(first.url, 'demo.fanout', { values });

  // The stream replays the log from its start, then follows it live: kill once two children are
  // published, while the root's frontier is still admitting the rest.
  const seen: string[] = [];
  const live = await untilChildrenPublished(first.url, rootId, 2, seen);
  await stop(first, 'SIGKILL');
  live.close();

  const second = await serve(prefix);
  const crashed = await readLog(second.url, rootId);
  const publishedBefore = committedCounts(crashed, 'agent.process.started');
  publishedBefore.delete(rootId);
  assert.ok(
    publishedBefore.size >= 2,
    `the children seen on the stream are in the log: ${JSON.stringify(crashed.slice(0, 40).map((entry) => [entry.position, entry.type, entry.data.phase, entry.processId]))}; the stream showed ${JSON.stringify(seen)}`,
  );
  assert.ok(publishedBefore.size < fanout, `the crash cut the fan-out short (${publishedBefore.size} of ${fanout} children were published)`);
  assert.ok(!crashed.some((entry) => entry.type === 'agent.process.finished' && entry.processId === rootId), 'the root had not finished');

  // The crashed server's lease lapses and the live one takes the tree over; an operator's restore is
  // then the tree as it is (before that, it would be 503 owner_unreachable: the owner looked alive).
  await untilTakenOver(second.url, rootId);
  const restored = await post(`${second.url}/v1/trees/${encodeURIComponent(rootId)}/restore`, {});
  assert.equal(restored.status, 200, await restored.clone().text());
  const result = await resultOf<{ outputs: Array<{ processId: string; value: string }>; canceled: string[] }>(second.url, rootId);
  assert.equal(result.status, 'completed', JSON.stringify(result));
  assert.deepEqual(result.output.outputs.map((entry) => entry.value), values, 'every child completed with its own value, in input order');
  const childIds = result.output.outputs.map((entry) => entry.processId);
  assert.equal(new Set(childIds).size, fanout);

  // The head: one root and its 20 children, all finished; no other process was ever created.
  const head = await treeOf(second.url, rootId);
  assert.equal(head.processes.length, fanout + 1);
  assert.deepEqual(head.processes.filter((entry) => entry.parentId === rootId).map((entry) => entry.processId).sort(), [...childIds].sort());
  assert.ok(head.processes.every((entry) => entry.status === 'completed'));

  const log = await readLog(second.url, rootId);
  const publications = committedCounts(log, 'agent.process.started');
  const terminals = committedCounts(log, 'agent.process.finished');
  for (const childId of childIds) {
    assert.equal(publications.get(childId), 1, `${childId} is published by exactly one child_start checkpoint`);
    assert.equal(terminals.get(childId), 1, `${childId} finishes in exactly one terminal checkpoint`);
  }
  assert.equal(publications.size, fanout + 1, 'no process other than the root and its children was published');
  assert.equal(terminals.get(rootId), 1, 'the root finishes once');
  assert.ok(log.some((entry) => entry.type === 'agent.process.restored' && entry.processId === rootId), 'the restore is in the log');

  await stop(second, 'SIGTERM');
});
