import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { Payload } from '../../src/kernel/payload.js';
import { JsonLinesWorker } from '../../src/transport/json-lines-worker.js';
import { PidLedger, rejectsWithCode } from '../supervisor/helpers.js';

const scriptedPath = fileURLToPath(new URL('../fixtures/jsonl-scripted.mjs', import.meta.url));

async function startScripted(ledger: PidLedger, args: readonly string[] = [], signal?: AbortSignal): Promise<JsonLinesWorker> {
  return JsonLinesWorker.start({ command: process.execPath, args: [scriptedPath, ...args], signal, onSpawn: (pid) => ledger.record(pid) });
}

const script = (...lines: string[]) => Payload.encode({ lines });
const long = { timeoutMs: 60_000 };

test('answers are matched by effect id in any order; deltas reach their request; stray lines are counted', async () => {
  const ledger = new PidLedger();
  const worker = await startScripted(ledger);
  const deltas: string[] = [];
  const slow = worker.request('e-slow', script(), { ...long, onDelta: (payload) => deltas.push(payload.json()) });
  assert.equal(worker.inFlight, 1);
  const fast = await worker.request(
    'e-fast',
    script(
      '{"effectId":"e-slow","delta":{"step":1}}',
      'some stray log output',
      '{"effectId":"e-unknown","status":"succeeded","payload":1}',
      '{"effectId":"{{id}}","status":"succeeded","payload":{"fast":true}}',
      '{"effectId":"e-slow","status":"failed","payload":{"slow":true}}',
    ),
    long,
  );
  assert.deepEqual(fast, { kind: 'answered', status: 'succeeded', payload: Payload.encode({ fast: true }) });
  assert.deepEqual(await slow, { kind: 'answered', status: 'failed', payload: Payload.encode({ slow: true }) });
  assert.deepEqual(deltas, ['{"step":1}']);
  assert.equal(worker.strayLines, 2);
  assert.equal(worker.inFlight, 0);
  await worker.close();
  ledger.assertAllGone();
});

test('an invalid answer for a request in flight loses it (unknown); a duplicate effect id is not sent', async () => {
  const ledger = new PidLedger();
  const worker = await startScripted(ledger);
  const pending = worker.request('e1', script(), long);
  const duplicate = await worker.request('e1', script(), long);
  assert.equal(duplicate.kind, 'not_sent');
  assert.equal(duplicate.kind === 'not_sent' && duplicate.code, 'duplicate_effect');
  const garbled = await worker.request('e2', script('{"effectId":"{{id}}","status":"maybe","payload":1}', '{"effectId":"e1","status":"succeeded"}'), long);
  assert.equal(garbled.kind === 'lost' && garbled.code, 'invalid_answer');
  const first = await pending;
  assert.equal(first.kind === 'lost' && first.code, 'invalid_answer');
  await worker.close();
  ledger.assertAllGone();
});

test('canceling after sending loses the request; a dead command is not sent to', async () => {
  const ledger = new PidLedger();
  const worker = await startScripted(ledger);
  const controller = new AbortController();
  const pending = worker.request('e1', script(), { ...long, signal: controller.signal });
  controller.abort();
  const canceled = await pending;
  assert.equal(canceled.kind === 'lost' && canceled.code, 'canceled');
  const before = new AbortController();
  before.abort();
  const early = await worker.request('e2', script(), { ...long, signal: before.signal });
  assert.equal(early.kind === 'not_sent' && early.code, 'canceled');
  const inFlight = worker.request('e3', script(), long);
  worker.child.kill();
  const dying = await inFlight;
  assert.equal(dying.kind === 'lost' && dying.code, 'command_exited');
  const after = await worker.request('e4', script(), long);
  assert.equal(after.kind === 'not_sent' && after.code, 'command_exited');
  await worker.close();
  ledger.assertAllGone();
});

test('a start without the handshake, or aborted, fails with the command already gone', async () => {
  const ledger = new PidLedger();
  await rejectsWithCode(startScripted(ledger, ['--handshake={"hello":1}']), 'invalid_handshake');
  await rejectsWithCode(startScripted(ledger, ['--handshake=not json']), 'invalid_handshake');
  const early = new AbortController();
  early.abort(Object.assign(new Error('start canceled'), { code: 'test_abort' }));
  await rejectsWithCode(startScripted(ledger, [], early.signal), 'test_abort');
  // A command that never says ready, aborted once spawned: the start ends with it killed.
  const controller = new AbortController();
  const silent = JsonLinesWorker.start({
    command: process.execPath,
    args: [scriptedPath, '--handshake='],
    signal: controller.signal,
    onSpawn: (pid) => {
      ledger.record(pid);
      controller.abort(Object.assign(new Error('start canceled'), { code: 'test_abort' }));
    },
  });
  await rejectsWithCode(silent, 'test_abort');
  assert.equal(ledger.pids.length, 3);
  ledger.assertAllGone();
});
