import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from 'pino';
import { deferred } from '../../src/kernel/deferred.js';
import { ChildKey, ProcessId } from '../../src/kernel/identity.js';
import type { ProcessAdmission } from '../../src/kernel/index.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import { InterruptBarrier } from '../../src/server/interrupt-barrier.js';
import { decodeInterruptRecord, interruptHostValues, interruptRecordWrite, interruptReleaseHostValues } from '../../src/server/interrupt-record.js';

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

test('a restore re-arms a recorded interrupt for what is left of its time, unless it settled or its deadline passed', () => {
  const now = 1_000_000;
  const record = { action: 'pause', until: now + 5_000 };
  const fresh = (): InterruptBarrier => new InterruptBarrier({ releaseMs: 60_000, settled: () => false });
  const armed = fresh();
  armed.rearm(root.toString(), record, false, now);
  assert.equal(armed.holds(root.toString()), true);
  assert.throws(() => armed.admit(childAdmission));
  armed.close();
  for (const [why, rearm] of [
    ['no record', (barrier: InterruptBarrier) => barrier.rearm(root.toString(), undefined, false, now)],
    ['settled head', (barrier: InterruptBarrier) => barrier.rearm(root.toString(), record, true, now)],
    ['deadline passed', (barrier: InterruptBarrier) => barrier.rearm(root.toString(), record, false, now + 5_000)],
  ] as const) {
    const barrier = fresh();
    rearm(barrier);
    assert.equal(barrier.holds(root.toString()), false, why);
  }
});

test('the interrupt record: a pause, cancel or kill writes it with its deadline as TTL, a resume deletes it', () => {
  const now = 2_000_000;
  const held = interruptRecordWrite(interruptHostValues('cancel', 30_000, now), now + 100);
  assert.deepEqual(held, { suffix: 'interrupt', value: JSON.stringify({ action: 'cancel', until: now + 30_000 }), ttlMs: 29_900 });
  assert.deepEqual(decodeInterruptRecord(held?.value), { action: 'cancel', until: now + 30_000 });
  assert.deepEqual(interruptRecordWrite(interruptHostValues('resume', 30_000, now), now), { suffix: 'interrupt', value: '', remove: true });
  assert.deepEqual(interruptRecordWrite(interruptReleaseHostValues(), now), { suffix: 'interrupt', value: '', remove: true });
  assert.equal(interruptRecordWrite({ other: 1 }, now), undefined, 'a commit without a control writes nothing');
  assert.equal(decodeInterruptRecord('{"action":"resume","until":1}'), undefined);
  assert.equal(decodeInterruptRecord('not json'), undefined);
});
