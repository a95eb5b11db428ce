/**
 * The Host's delivery port end to end on an embedded Host: a message from example.messaging.notify
 * reaches another tree through the signals path, under the SignalId derived from its EffectId; a
 * replay delivers that id once; the capability and the tenant are checked before anything is admitted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { messageSignalId, sendCapability } from '../../../strategies/messaging/message.js';
import { notifyDefinition } from '../../../strategies/messaging/notify.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import { EffectId, ProcessId, SignalId, WaitId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { DeliveryRefusedError, type DeliveryPort, messagingDispatcher } from '../../../src/server/dispatchers/messaging.js';
import type { EngineHost } from '../../../src/server/engine-host.js';
import { hostDeliveryPort } from '../../../src/server/messaging-delivery.js';
import { effectsOf, embeddedHost, ofType, result, start, stepCommittedWith, untilEntry, untilSettled } from '../../server/harness.js';

const grants = { SCOPE_GRANTS: JSON.stringify({ capabilities: [sendCapability] }) };

async function waitingApproval(host: EngineHost, extra: { tenant?: string } = {}): Promise<{ id: string; waitId: string }> {
  const { processId } = await start(host, 'demo.approval', { subject: 'messaging' }, extra);
  await untilSettled(host, processId, stepCommittedWith('waiting', processId));
  const view = await host.inspectProcess(processId);
  return { id: processId, waitId: view.waitId as string };
}

/** The receipts a process holds under message signal ids. */
async function messageReceipts(host: EngineHost, id: string): Promise<string[]> {
  const page = await host.signals(id, { limit: 1000 });
  return page.items.map((item) => item.id).filter((receipt) => receipt.startsWith('signal:message:'));
}

test('a message answers another tree\'s wait: the recipient holds it under the signal id derived from the effect id, and completes with it', async () => {
  const host = embeddedHost({ env: grants });
  try {
    const recipient = await waitingApproval(host);
    const sender = await start(host, 'example.messaging.notify', { recipient: recipient.id, waitId: recipient.waitId, payload: { approved: true, comment: 'sent as a message' } });
    assert.deepEqual(sender.capabilities, [sendCapability]);
    const sent = await result(host, sender.processId);
    const expected = messageSignalId(EffectId.derive(ProcessId.parse(sender.processId), 1n, 0)).toString();
    assert.equal(sent.status, 'completed', JSON.stringify(sent.failure));
    assert.deepEqual(sent.output, { recipient: recipient.id, signalId: expected });
    const answered = await result(host, recipient.id);
    assert.deepEqual(answered.output, { subject: 'messaging', approved: true, comment: 'sent as a message', notes: [] });
    assert.deepEqual(await messageReceipts(host, recipient.id), [expected]);
    // A message is the machine's (agency), and the wait it answered was answered through the signal path (api).
    const receipts = (await host.signals(recipient.id, { limit: 1000 })).items;
    assert.equal(receipts.find((receipt) => receipt.id === expected)?.agency, 'machine');
    const gate = (await host.gatePage({ rootId: recipient.id, state: 'answered' })).items[0];
    assert.equal(gate?.answer?.provenance, 'api');
    assert.equal(gate?.owner === 'process' ? gate.answer?.signalId : undefined, expected);
  } finally {
    await host.close(0);
  }
});

test('a replay of the effect after an Unknown outcome delivers the same signal id, and the recipient holds it once', async () => {
  let host: EngineHost | undefined;
  const real = hostDeliveryPort({ host: () => host as EngineHost });
  const delivered: string[] = [];
  let lose = true;
  // The first attempt is admitted, then its answer is lost (the connection broke after the write).
  const lossy: DeliveryPort = {
    async deliver(sender, recipient, request, signal) {
      const outcome = await real.deliver(sender, recipient, request, signal);
      delivered.push(`${request.id.toString()} admitted=${outcome.admitted}`);
      if (lose) {
        lose = false;
        throw new Error('the answer of the delivery was lost');
      }
      return outcome;
    },
  };
  const flaky = Deployment.create({
    definition: notifyDefinition,
    dispatcher: messagingDispatcher({ port: lossy }),
    implementationDigest: Digest.of('test:messaging:lossy'),
    configurationDigest: Digest.of('test:messaging:lossy'),
  });
  host = embeddedHost({ env: grants, deployments: [flaky] });
  try {
    const recipient = await waitingApproval(host);
    const sender = await start(host, 'example.messaging.notify', { recipient: recipient.id, payload: { note: 'once' } });
    await untilEntry(host, sender.processId, ofType('agent.effect.finished', sender.processId));
    await host.captureTree(sender.processId);
    const [effect] = await effectsOf(host, sender.processId);
    assert.equal(effect?.status, 'unknown', 'a port error is never guessed: the outcome is Unknown');
    await host.replayEffect(sender.processId, effect.effectId);
    const sent = await result(host, sender.processId);
    assert.equal(sent.status, 'completed', JSON.stringify(sent.failure));
    const expected = messageSignalId(EffectId.parse(effect.effectId)).toString();
    assert.deepEqual(sent.output, { recipient: recipient.id, signalId: expected });
    // Both attempts delivered one identity; the second met the first admission (a duplicate is a success).
    assert.deepEqual(delivered, [`${expected} admitted=true`, `${expected} admitted=false`]);
    assert.deepEqual(await messageReceipts(host, recipient.id), [expected]);
  } finally {
    await host.close(0);
  }
});

test('without scope.messaging.send nothing is delivered: the Step fails at preparation, and the port refuses such a sender itself', async () => {
  const host = embeddedHost({ env: grants });
  try {
    const recipient = await waitingApproval(host);
    // A start that narrows the grant to nothing: the message Effect requires the capability.
    const sender = await start(host, 'example.messaging.notify', { recipient: recipient.id, payload: { note: 'no authority' } }, { capabilities: [] });
    const denied = await result(host, sender.processId);
    assert.equal(denied.status, 'failed');
    assert.equal(denied.failure?.code, 'engine.capability.denied');
    // The port does not trust the Effect: a sender lacking the capability is refused definitely.
    assert.deepEqual((await host.inspectProcess(sender.processId)).capabilities, []);
    const port = hostDeliveryPort({ host: () => host });
    const request = SignalRequest.create({ id: SignalId.parseExternal('signal:message:sha256:00'), payload: Payload.encode({ note: 'forged' }) });
    await assert.rejects(port.deliver(ProcessId.parse(sender.processId), ProcessId.parse(recipient.id), request, new AbortController().signal), (error: unknown) => {
      assert.ok(error instanceof DeliveryRefusedError);
      assert.equal(error.code, 'messaging.capability_denied');
      return true;
    });
    assert.deepEqual(await messageReceipts(host, recipient.id), []);
    assert.equal((await host.inspectProcess(recipient.id)).status, 'waiting');
  } finally {
    await host.close(0);
  }
});

test('a recipient of another tenant is refused exactly as an unknown process, and nothing is delivered', async () => {
  const host = embeddedHost({ env: grants });
  try {
    const foreign = await waitingApproval(host, { tenant: 'globex' });
    const refusal = async (recipient: string): Promise<string | undefined> => {
      const sender = await start(host, 'example.messaging.notify', { recipient, payload: { note: 'probe' } }, { tenant: 'acme' });
      const outcome = await result(host, sender.processId);
      assert.equal(outcome.status, 'failed');
      assert.equal(outcome.failure?.code, 'example.messaging.notify.refused');
      return outcome.failure?.message.replace(recipient, '<id>');
    };
    const cross = await refusal(foreign.id);
    const unknown = await refusal('process:00000000000000000000000000000000');
    assert.equal(cross, 'process_not_found: no process <id>');
    assert.equal(cross, unknown);
    assert.deepEqual(await messageReceipts(host, foreign.id), []);
    // The same tenant may: the recipient's own tenant sends to it.
    const own = await start(host, 'example.messaging.notify', { recipient: foreign.id, payload: { note: 'same tenant' } }, { tenant: 'globex' });
    assert.equal((await result(host, own.processId)).status, 'completed');
    assert.equal((await messageReceipts(host, foreign.id)).length, 1);
  } finally {
    await host.close(0);
  }
});

test('the recipient\'s own refusals before admission are definite: a malformed answer and a wait that is not current fail the send, the wait stays open', async () => {
  const host = embeddedHost({ env: grants });
  try {
    const recipient = await waitingApproval(host);
    const send = async (input: Record<string, unknown>): Promise<string | undefined> => {
      const sender = await start(host, 'example.messaging.notify', { recipient: recipient.id, ...input } as never);
      const outcome = await result(host, sender.processId);
      assert.equal(outcome.status, 'failed');
      return outcome.failure?.message.split(':')[0];
    };
    assert.equal(await send({ waitId: recipient.waitId, payload: { approved: 'yes' } }), 'schema_validation_failed');
    assert.equal(await send({ waitId: WaitId.derive(EffectId.derive(ProcessId.parse(recipient.id), 9n, 0)).toString(), payload: { approved: true } }), 'signal_rejected');
    assert.deepEqual(await messageReceipts(host, recipient.id), []);
    assert.equal((await host.inspectProcess(recipient.id)).status, 'waiting');
  } finally {
    await host.close(0);
  }
});

test('a hibernated recipient is woken by a message, as by any signal', async () => {
  let now = 0;
  const host = embeddedHost({ env: { ...grants, SCOPE_HIBERNATE_AFTER_MS: '1000' }, monotonic: () => now });
  try {
    const recipient = await waitingApproval(host);
    now += 1_000;
    assert.equal(await host.hibernateIdle(), 1);
    assert.equal((await host.inspectProcess(recipient.id)).work, 'inactive', 'no runtime holds the recipient');
    const sender = await start(host, 'example.messaging.notify', { recipient: recipient.id, waitId: recipient.waitId, payload: { approved: false } });
    assert.equal((await result(host, sender.processId)).status, 'completed');
    assert.deepEqual((await result(host, recipient.id)).output, { subject: 'messaging', approved: false, notes: [] });
  } finally {
    await host.close(0);
  }
});
