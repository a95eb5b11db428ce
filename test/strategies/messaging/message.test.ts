/**
 * Messaging without a Host: the Message wire and its strict decode, the SignalId derived from the
 * EffectId, the dispatcher's three outcomes over a scripted port, and example.messaging.notify through
 * the Definition conformance suite.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { decodeMessage, message, messageEffect, messageSignalId, sendCapability } from '../../../strategies/messaging/message.js';
import { notifyDefinition } from '../../../strategies/messaging/notify.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Effect, EffectRequest } from '../../../src/kernel/effect.js';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import { EffectId, ProcessId, SignalId, WaitId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { ProcessRelation } from '../../../src/kernel/relation.js';
import type { SettlementStatus } from '../../../src/kernel/settlement.js';
import { Signal, type SignalRequest } from '../../../src/kernel/signal.js';
import { DeliveryRefusedError, type DeliveryPort, messagingDispatcher } from '../../../src/server/dispatchers/messaging.js';
import { messagingDeployments } from '../../../src/server/examples/messaging.js';
import { runDefinitionConformance } from '../../../src/testing/definition-conformance.js';

const sender = ProcessId.parse('process:sender');
const recipient = 'process:recipient';
const waitId = WaitId.derive(EffectId.derive(ProcessId.parse(recipient), 1n, 0));
const ref = (messagingDeployments()[0] as Deployment).ref;

function request(payload: unknown, step = 1n): EffectRequest {
  return EffectRequest.create({
    processId: sender,
    relation: ProcessRelation.root(sender),
    deploymentRef: ref,
    stepSequence: step,
    batchIndex: 0,
    effect: Effect.dispatcher(Payload.encode(payload)),
  });
}

/** A port that records each delivery and answers as scripted. */
function scriptedPort(answer: (request: SignalRequest) => Promise<{ admitted: boolean }>): DeliveryPort & { calls: { recipient: string; request: SignalRequest }[] } {
  const calls: { recipient: string; request: SignalRequest }[] = [];
  return {
    calls,
    deliver(from, to, signalRequest) {
      assert.ok(from.equals(sender));
      calls.push({ recipient: to.toString(), request: signalRequest });
      return answer(signalRequest);
    },
  };
}

const live = (): AbortSignal => new AbortController().signal;

test('the signal id is signal:message:sha256:<hex(sha256(effect id))>, stable for one effect id and distinct across effects', () => {
  const effect = EffectId.derive(sender, 3n, 1);
  const expected = `signal:message:sha256:${createHash('sha256').update(effect.toString()).digest('hex')}`;
  assert.equal(messageSignalId(effect).toString(), expected);
  assert.ok(messageSignalId(EffectId.parse(effect.toString())).equals(messageSignalId(effect)));
  assert.notEqual(messageSignalId(EffectId.derive(sender, 3n, 2)).toString(), expected);
  // A caller-chosen id, not the Engine's reserved namespace: the recipient admits it as external input.
  assert.equal(SignalId.parseExternal(expected).engineOwned, false);
});

test('a Message is one dispatcher Effect {recipient, wait_id?, payload} that requires scope.messaging.send', () => {
  const effect = messageEffect(message({ recipient, waitId, payload: { approved: true } }));
  assert.equal(effect.target, 'dispatcher');
  assert.deepEqual(effect.payload.decode(), { recipient, wait_id: waitId.toString(), payload: { approved: true } });
  assert.deepEqual(effect.requiredCapabilities.values(), [sendCapability]);
  const decoded = decodeMessage(effect.payload);
  assert.ok(decoded.ok);
  assert.equal(decoded.message.recipient.toString(), recipient);
  assert.ok(decoded.message.waitId?.equals(waitId));
  assert.deepEqual(messageEffect(message({ recipient, payload: 1 })).payload.decode(), { recipient, payload: 1 });
});

test('decoding is strict: no unknown member, a process id recipient, a wait id, a payload', () => {
  for (const bad of [[], 'x', null, { recipient }, { recipient: 7, payload: 1 }, { recipient: 'not a process id', payload: 1 }, { recipient, wait_id: 3, payload: 1 }, { recipient, wait_id: 'a b', payload: 1 }, { recipient, payload: 1, extra: true }]) {
    assert.equal(decodeMessage(Payload.encode(bad)).ok, false, JSON.stringify(bad));
  }
});

test('a delivered message settles succeeded with receipt {signal_id}; a replay of the effect delivers the same signal id', async () => {
  const port = scriptedPort(async () => ({ admitted: true }));
  const dispatcher = messagingDispatcher({ port });
  const effect = request({ recipient, wait_id: waitId.toString(), payload: { approved: true } });
  assert.equal(dispatcher.replayPolicy(effect.effect), 'same_identity');
  const first = await dispatcher.dispatch(effect, undefined, live());
  const replay = await dispatcher.dispatch(request({ recipient, wait_id: waitId.toString(), payload: { approved: true } }), undefined, live());
  const expected = messageSignalId(effect.id).toString();
  assert.equal(first.status, 'succeeded');
  assert.deepEqual(first.payload.decode(), { signal_id: expected });
  assert.deepEqual(replay.payload.decode(), { signal_id: expected });
  assert.deepEqual(port.calls.map((call) => [call.recipient, call.request.id.toString(), call.request.waitId?.toString(), call.request.payload.decode()]), [
    [recipient, expected, waitId.toString(), { approved: true }],
    [recipient, expected, waitId.toString(), { approved: true }],
  ]);
  // Another effect of the same sender is another delivery.
  const other = await dispatcher.dispatch(request({ recipient, payload: {} }, 2n), undefined, live());
  assert.notDeepEqual(other.payload.decode(), { signal_id: expected });
});

test('a duplicate admission (the port already held that signal id) is a success', async () => {
  const dispatcher = messagingDispatcher({ port: scriptedPort(async () => ({ admitted: false })) });
  const settlement = await dispatcher.dispatch(request({ recipient, payload: 1 }), undefined, live());
  assert.equal(settlement.status, 'succeeded');
});

test('any port error leaves the outcome Unknown: the dispatch rejects, it never settles failed', async () => {
  const dispatcher = messagingDispatcher({ port: scriptedPort(async () => Promise.reject(new Error('connection reset after the write'))) });
  await assert.rejects(dispatcher.dispatch(request({ recipient, payload: 1 }), undefined, live()), /connection reset/);
});

test('a definite refusal of the port settles failed with its code; nothing is retried', async () => {
  const port = scriptedPort(async () => Promise.reject(new DeliveryRefusedError('messaging.capability_denied', 'no capability')));
  const settlement = await messagingDispatcher({ port }).dispatch(request({ recipient, payload: 1 }), undefined, live());
  assert.equal(settlement.status, 'failed');
  assert.deepEqual(settlement.payload.decode(), { error: { code: 'messaging.capability_denied', message: 'no capability' } });
  assert.equal(port.calls.length, 1);
});

test('an undecodable message settles failed with a JSON diagnostic, is never replayable, and reaches no port', async () => {
  const port = scriptedPort(async () => ({ admitted: true }));
  const dispatcher = messagingDispatcher({ port });
  const bad = request({ to: recipient, payload: 1 });
  assert.equal(dispatcher.replayPolicy(bad.effect), 'never');
  const settlement = await dispatcher.dispatch(bad, undefined, live());
  assert.equal(settlement.status, 'failed');
  const diagnostic = settlement.payload.decode<{ error: { code: string; message: string } }>();
  assert.equal(diagnostic.error.code, 'messaging.invalid_message');
  assert.match(diagnostic.error.message, /unknown member "to"/);
  assert.equal(port.calls.length, 0);
  // Without a port (a catalog outside a Host) a message is refused, not lost as Unknown.
  const orphan = await messagingDispatcher({ port: undefined }).dispatch(request({ recipient, payload: 1 }), undefined, live());
  assert.deepEqual(orphan.payload.decode(), { error: { code: 'messaging.no_port', message: 'no delivery port is configured for this dispatcher' } });
});

const effectId = EffectId.derive(sender, 1n, 0);
const settlement = (status: SettlementStatus, payload: unknown): Signal => Signal.create({ id: SignalId.settlement(effectId), status, payload: Payload.encode(payload) });
const wire = { recipient, wait_id: waitId.toString(), payload: { approved: true } };

runDefinitionConformance('example.messaging.notify', {
  definition: notifyDefinition,
  input: Payload.encode({ recipient, waitId: waitId.toString(), payload: { approved: true } }),
  initialSignals: [],
  followingSignals: [[settlement('succeeded', { signal_id: messageSignalId(effectId).toString() })]],
  restoredCases: [
    { name: 'sent, refused', state: ExecutionState.encode('example.messaging.notify', { phase: 'sent', message: wire }), signals: [settlement('failed', { error: { code: 'process_not_found', message: 'no process' } })] },
  ],
  rejectedCases: [
    {
      name: 'no settlement after the message',
      state: ExecutionState.encode('example.messaging.notify', { phase: 'sent', message: wire }),
      signals: [Signal.create({ id: SignalId.parseExternal('stray'), payload: Payload.encode(1) })],
      failureKind: 'contract',
      failureCode: 'example.messaging.notify.missing_settlement',
    },
  ],
});

test('example.messaging.notify: the first Step declares exactly the message Effect; a malformed state is refused at restore', async () => {
  const execution = await notifyDefinition.start(Payload.encode({ recipient, payload: { note: 'hi' } }));
  const transition = await execution.step(live(), []);
  assert.equal(transition.kind, 'continue');
  assert.deepEqual(transition.effects.map((effect) => [effect.payload.decode(), effect.requiredCapabilities.values()]), [[{ recipient, payload: { note: 'hi' } }, [sendCapability]]]);
  const sent = await notifyDefinition.restore(ExecutionState.encode('example.messaging.notify', { phase: 'sent', message: wire }), live());
  const refused = await sent.step(live(), [settlement('failed', { error: { code: 'messaging.capability_denied', message: 'no capability' } })]);
  assert.equal(refused.kind, 'fail');
  assert.deepEqual([refused.failure?.kind, refused.failure?.code, refused.failure?.message], ['external', 'example.messaging.notify.refused', 'messaging.capability_denied: no capability']);
  assert.throws(() => notifyDefinition.restore(ExecutionState.encode('example.messaging.notify', { phase: 'sent', message: { recipient: 'bad id', payload: 1 } }), live()), /invalid example.messaging.notify state/);
});

test('the example deployment has fixed refs', () => {
  assert.equal(ref.toString(), (messagingDeployments()[0] as Deployment).ref.toString());
  assert.equal(ref.name, 'example.messaging.notify');
  void Digest;
});
