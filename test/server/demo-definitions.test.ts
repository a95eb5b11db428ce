/**
 * The demo Definitions against the kernel's Definition conformance suite (determinism, isolation,
 * exact Snapshot → Restore), a static check that they read no clock, randomness, timers or I/O,
 * and the demo dispatchers' own contract.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { approvalDefinition } from '../../strategies/demo/approval.js';
import { counterDefinition } from '../../strategies/demo/counter.js';
import { echoDefinition } from '../../strategies/demo/echo.js';
import { sleepDefinition } from '../../strategies/demo/sleep.js';
import { unreliableDefinition } from '../../strategies/demo/unreliable.js';
import { Effect, EffectRequest } from '../../src/kernel/effect.js';
import { ExecutionState } from '../../src/kernel/execution-state.js';
import { EffectId, ProcessId, SignalId, WaitId } from '../../src/kernel/identity.js';
import { waitOpenedPayload } from '../../src/kernel/mailbox.js';
import { Payload } from '../../src/kernel/payload.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import { Signal } from '../../src/kernel/signal.js';
import type { SettlementStatus } from '../../src/kernel/settlement.js';
import { echoDispatcher, sleepDispatcher, unreliableDispatcher } from '../../src/server/demo-dispatchers.js';
import { demoDeployments } from '../../src/server/demos.js';
import { coordinationExampleNames } from '../../src/server/examples/coordination.js';
import { runDefinitionConformance } from '../../src/testing/definition-conformance.js';

const pid = ProcessId.parse('process:demo');
const effectId = EffectId.derive(pid, 1n, 0);
const waitId = WaitId.derive(effectId);

const settlement = (status: SettlementStatus, payload: unknown): Signal =>
  Signal.create({ id: SignalId.settlement(effectId), status, payload: Payload.encode(payload) });
const opening = (wait: WaitId = waitId): Signal => Signal.create({ id: SignalId.waitOpened(wait), waitId: wait, payload: waitOpenedPayload });
const answer = (id: string, payload: unknown, wait: WaitId = waitId): Signal =>
  Signal.create({ id: SignalId.parseExternal(id), waitId: wait, payload: Payload.encode(payload) });
const note = (id: string, text: string): Signal => Signal.create({ id: SignalId.parseExternal(id), payload: Payload.encode({ note: text }) });
const state = (kind: string, value: unknown): ExecutionState => ExecutionState.encode(kind, value);

runDefinitionConformance('demo.echo', {
  definition: echoDefinition,
  input: Payload.encode({ value: 'hi' }),
  initialSignals: [],
  followingSignals: [[settlement('succeeded', { value: 'hi' })]],
  restoredCases: [
    { name: 'dispatched', state: state('demo.echo', { phase: 'dispatched', input: { value: 'v' } }), signals: [settlement('failed', {})] },
  ],
});

runDefinitionConformance('demo.approval', {
  definition: approvalDefinition,
  input: Payload.encode({ subject: 's' }),
  initialSignals: [note('n0', 'early')],
  followingSignals: [[opening(), note('n1', 'with the opening')], [note('n2', 'late'), answer('a', { approved: true, comment: 'ok' })]],
  restoredCases: [
    {
      name: 'waiting with notes',
      state: state('demo.approval', { phase: 'waiting', subject: 's', notes: ['x'], wait_id: waitId.toString() }),
      signals: [answer('a', { approved: false }), note('n3', 'after the answer')],
    },
    {
      name: 'an invalid answer',
      state: state('demo.approval', { phase: 'waiting', subject: 's', notes: [], wait_id: waitId.toString() }),
      signals: [answer('a', { approved: 'yes' })],
    },
  ],
});

runDefinitionConformance('demo.counter', {
  definition: counterDefinition,
  input: Payload.encode({ target: 2 }),
  initialSignals: [],
  followingSignals: [[opening()], [answer('add-1', { add: 2 })], []],
  restoredCases: [
    {
      name: 'a second round',
      state: state('demo.counter', { phase: 'waiting', target: 5, total: 3, rounds: 1, wait_id: waitId.toString() }),
      signals: [answer('add-2', { add: 1 })],
      followingSignals: [[]],
    },
  ],
});

runDefinitionConformance('demo.sleep', {
  definition: sleepDefinition,
  input: Payload.encode({ ms: 5 }),
  initialSignals: [],
  followingSignals: [[settlement('succeeded', { sleptMs: 5 })]],
});

runDefinitionConformance('demo.unreliable', {
  definition: unreliableDefinition,
  input: Payload.encode({ mode: 'unknown', replayable: true }),
  initialSignals: [],
  followingSignals: [[settlement('succeeded', { mode: 'unknown', attempts: 2 })]],
  restoredCases: [
    {
      name: 'a resolution without attempts',
      state: state('demo.unreliable', { phase: 'dispatched', input: { mode: 'unknown', replayable: false } }),
      signals: [settlement('succeeded', { note: 'resolved by the host' })],
    },
  ],
});

test('demo definitions read no clock, randomness, timers or I/O', () => {
  const directory = new URL('../../strategies/demo/', import.meta.url);
  const forbidden = [/Date\b/, /Math\.random/, /setTimeout|setInterval|setImmediate/, /performance\./, /from ['"]node:/, /\bprocess\.(env|argv|hrtime|nextTick|uptime)/, /crypto/];
  const files = readdirSync(directory).filter((name) => name.endsWith('.ts'));
  assert.ok(files.length >= 6);
  for (const file of files) {
    const source = readFileSync(new URL(file, directory), 'utf8');
    for (const pattern of forbidden) assert.doesNotMatch(source, pattern, `${file} must not use ${pattern}`);
    for (const [, specifier] of source.matchAll(/from '([^']+)'/g)) {
      assert.ok(specifier?.startsWith('./') || specifier?.startsWith('../internal/') || specifier?.startsWith('../../src/kernel/'), `${file} imports ${specifier}`);
    }
  }
});

test('demo deployments have fixed refs, recomputed identically', () => {
  const refs = demoDeployments().map((deployment) => deployment.ref.toString());
  assert.deepEqual(
    demoDeployments().map((deployment) => deployment.ref.toString()),
    refs,
  );
  assert.deepEqual(
    refs.map((ref) => ref.split('+')[0]),
    ['demo.echo', 'demo.approval', 'demo.counter', 'demo.sleep', 'demo.unreliable', 'demo.fanout', 'example.messaging.notify', 'example.workflow.review', 'example.workflow.batch', ...coordinationExampleNames, 'example.collaboration.research', 'example.collaboration.research.coordinator', 'example.collaboration.research.notes', 'example.collaboration.research.survey', 'example.planning.errands', 'example.agent.tools', 'example.agent.research', 'example.agent.summarizer', 'example.agent.briefing'],
  );
});

function request(payload: unknown, index = 0): EffectRequest {
  return EffectRequest.create({
    processId: pid,
    relation: ProcessRelation.root(pid),
    deploymentRef: demoDeployments()[0]?.ref as never,
    stepSequence: 1n,
    batchIndex: index,
    effect: Effect.dispatcher(Payload.encode(payload)),
  });
}

test('echo dispatcher: one delta per code point, then the value', async () => {
  const deltas: unknown[] = [];
  const outcome = await echoDispatcher().dispatch(request({ value: 'a😀' }), (payload) => deltas.push(payload.decode()), new AbortController().signal);
  assert.deepEqual(deltas, [
    { index: 0, char: 'a' },
    { index: 1, char: '😀' },
  ]);
  assert.equal(outcome.status, 'succeeded');
  assert.deepEqual(outcome.payload.decode(), { value: 'a😀' });
  assert.equal((await echoDispatcher().dispatch(request({ nope: 1 }), undefined, new AbortController().signal)).status, 'failed');
});

test('sleep dispatcher: the abort signal ends the wait at once; so does the host shutdown', async () => {
  const abort = new AbortController();
  const pending = sleepDispatcher().dispatch(request({ ms: 600_000 }), undefined, abort.signal);
  abort.abort(new Error('canceled'));
  await assert.rejects(pending, /canceled/);
  const shutdown = new AbortController();
  const held = sleepDispatcher(shutdown.signal).dispatch(request({ ms: 600_000 }), undefined, new AbortController().signal);
  shutdown.abort(new Error('shutting down'));
  await assert.rejects(held, /shutting down/);
  const done = await sleepDispatcher().dispatch(request({ ms: 0 }), undefined, new AbortController().signal);
  assert.deepEqual(done.payload.decode(), { sleptMs: 0 });
});

test('unreliable dispatcher: ok, fail, unknown-then-ok; replay policy follows replayable', async () => {
  const dispatcher = unreliableDispatcher();
  const signal = new AbortController().signal;
  const ok = await dispatcher.dispatch(request({ mode: 'ok', replayable: false }), undefined, signal);
  assert.deepEqual([ok.status, ok.payload.decode()], ['succeeded', { mode: 'ok', attempts: 1 }]);
  const fail = await dispatcher.dispatch(request({ mode: 'fail', replayable: false }, 1), undefined, signal);
  assert.equal(fail.status, 'failed');
  const unknown = request({ mode: 'unknown', replayable: true }, 2);
  await assert.rejects(dispatcher.dispatch(unknown, undefined, signal), /unknown/);
  const replay = await dispatcher.dispatch(unknown, undefined, signal);
  assert.deepEqual([replay.status, replay.payload.decode()], ['succeeded', { mode: 'unknown', attempts: 2 }]);
  assert.equal(dispatcher.replayPolicy(Effect.dispatcher(Payload.encode({ mode: 'unknown', replayable: true }))), 'same_identity');
  assert.equal(dispatcher.replayPolicy(Effect.dispatcher(Payload.encode({ mode: 'unknown', replayable: false }))), 'never');
});
