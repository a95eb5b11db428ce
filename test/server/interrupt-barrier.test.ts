import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from 'pino';
import { deferred } from '../../src/kernel/deferred.js';
import { ChildKey, ProcessId } from '../../src/kernel/identity.js';
import type { ProcessAdmission } from '../../src/kernel/index.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import { InterruptBarrier } from '../../src/server/interrupt-barrier.js';

/** The barrier's own rules: roots always pass, a settled tree lifts it, and the time cap lifts it with a log line. */

const root = ProcessId.newRoot();
const childAdmission = { relation: ProcessRelation.child(ProcessId.newRoot(), ProcessRelation.root(root), ChildKey.parse('c')) } as unknown as ProcessAdmission;

test('a held tree refuses child starts with engine.child.interrupt_pending; settling lifts it', () => {
  let settled = false;
  const barrier = new InterruptBarrier({ releaseMs: 60_000, settled: () => settled });
  barrier.hold(root.toString(), 'pause');
  assert.doesNotThrow(() => barrier.admit({ relation: ProcessRelation.root(ProcessId.newRoot()) } as unknown as ProcessAdmission), 'a root start is never held');
  assert.throws(() => barrier.admit(childAdmission), (error: unknown) => (error as Error).cause instanceof Error && ((error as Error).cause as { code?: string }).code === 'engine.child.interrupt_pending');
  barrier.observe(root.toString());
  assert.equal(barrier.holds(root.toString()), true, 'not settled yet');
  settled = true;
  barrier.observe(root.toString());
  assert.equal(barrier.holds(root.toString()), false);
  assert.doesNotThrow(() => barrier.admit(childAdmission));
});

test('the time cap releases a tree that never settles, and says so in the log', async () => {
  const logged = deferred<unknown>();
  const logger = { warn: (fields: unknown) => logged.resolve(fields) } as unknown as Logger;
  const barrier = new InterruptBarrier({ releaseMs: 20, settled: () => false, logger });
  barrier.hold(root.toString(), 'cancel');
  // The cap's timer is unref'd (it must not keep a server alive): hold the loop open while it runs.
  const keepAlive = setInterval(() => undefined, 1_000);
  const fields = (await logged.promise.finally(() => clearInterval(keepAlive))) as { rootId: string; action: string; releaseMs: number };
  assert.deepEqual(fields, { rootId: root.toString(), action: 'cancel', releaseMs: 20 });
  assert.equal(barrier.holds(root.toString()), false);
});
