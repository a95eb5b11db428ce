/**
 * Through a real Engine: a tool that asks a person (a wait in its tool child, listed with its
 * answer schema, answered by the child's process id and wait id), steering at the next model
 * boundary (from the Host and from a parent's signal_child), the context reducer, and a tool
 * outcome that is not definite.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { test } from 'node:test';
import { Budget } from '../../../src/kernel/budget.js';
import { CapabilitySet } from '../../../src/kernel/capability.js';
import { Descriptor } from '../../../src/kernel/descriptor.js';
import { ChildSpec, ChildWaitCondition, ChildWaitSpec, Effect } from '../../../src/kernel/effect.js';
import type { Event } from '../../../src/kernel/event.js';
import { ChildKey, ProcessId, WaitId, WaitKey } from '../../../src/kernel/identity.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Schema } from '../../../src/kernel/schema.js';
import { Transition } from '../../../src/kernel/transition.js';
import { encodeModelReply } from '../../../strategies/interaction/model-wire.js';
import { machineDefinition, objectOf } from '../../../strategies/internal/machine.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { contextBytes, contextBytesBound, contextFits, droppedToolResult, reduceContext } from '../../../strategies/interaction/context.js';
import { pendingToolInputs } from '../../../strategies/interaction/pending-inputs.js';
import { steerRequest } from '../../../strategies/interaction/steer.js';
import { call, deployment, latch, modelRequests, setup, stopReply, ToolDispatcher, toolsReply } from './harness.js';

const input = Payload.encode({ task: 'Find things.' });
const waitingStep = (event: Event) => event.name === 'agent.step.committed' && (event.payload.decode<{ status: string }>().status === 'waiting') && event.relation.parentId !== undefined;

test('a tool that asks a person waits in its tool child with the answer schema, and the answer continues the loop', async () => {
  const { engine, agent, model, recorder } = setup([toolsReply(call('c1', 'ask', { question: 'Which year?' })), stopReply('It was 1969.')]);
  const process = await engine.start(agent, input);
  await recorder.awaitEvent(waitingStep);
  const tree = engine.inspectTree(process.id);
  const toolSet = agent.definition.childDeployments()[0];
  assert.ok(toolSet !== undefined);
  const pending = pendingToolInputs(tree.processes.map((entry) => entry.snapshot), toolSet);
  assert.equal(pending.length, 1);
  const [asked] = pending;
  assert.ok(asked !== undefined);
  assert.equal(asked.tool, 'ask');
  assert.equal(asked.prompt, 'Which year?');
  assert.equal(asked.parentId?.toString(), process.id.toString());
  assert.deepEqual(JSON.parse(asked.answerSchema?.json() ?? '{}').required, ['answer']);
  const child = engine.process(asked.processId);
  assert.ok(child !== undefined);
  await assert.rejects(child.deliverSignals(SignalRequest.create({ id: 'bad', waitId: asked.waitId, payload: Payload.encode({ nope: 1 }) })), 'an answer outside the schema is refused');
  await child.deliverSignals(SignalRequest.create({ id: 'answer-1', waitId: asked.waitId, payload: Payload.encode({ answer: '1969' }) }));
  const result = await process.await();
  await engine.close();
  assert.equal(result.output?.decode(), 'It was 1969.');
  const tool = (modelRequests(model)[1] ?? []).find((message) => message.role === 'tool');
  assert.equal(tool?.content, '1969');
});

test('a steer joins the context at the next model call, never mid-batch', async () => {
  const tools = new ToolDispatcher();
  const held = latch();
  tools.holds.set('a', held.promise);
  const { engine, agent, model } = setup([toolsReply(call('c1', 'lookup', { q: 'a' })), stopReply('steered')], { tools });
  const process = await engine.start(agent, input);
  await tools.began$('a');
  assert.equal(await process.deliverSignals(steerRequest('steer-1', 'Prefer primary sources.')), true);
  held.open();
  const result = await process.await();
  await engine.close();
  assert.equal(result.status, 'completed');
  const requests = modelRequests(model);
  assert.equal(requests.length, 2, 'the steer did not interrupt the batch with a model call');
  assert.deepEqual(
    (requests[1] ?? []).slice(2).map((message) => [message.role, message.content]),
    [
      ['assistant', null],
      ['tool', 'result of a'],
      ['user', 'Prefer primary sources.'],
    ],
    'after the batch results, as a user message',
  );
  await assert.rejects(process.deliverSignals(SignalRequest.create({ id: 'x', payload: Payload.encode({ other: 'shape' }) })));
});

test('the context reducer drops the oldest tool results first and fails with interaction.context_too_large when that is not enough', async () => {
  const tools = new ToolDispatcher();
  tools.overrides.set('a', { content: 'A'.repeat(600) });
  tools.overrides.set('b', { content: 'B'.repeat(600) });
  const { engine, agent, model } = setup([toolsReply(call('c1', 'lookup', { q: 'a' })), toolsReply(call('c2', 'lookup', { q: 'b' })), stopReply('ok')], { tools, maxContextBytes: 1500 });
  const result = await engine.run(agent, input);
  await engine.close();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  const third = modelRequests(model)[2] ?? [];
  const results = third.filter((message) => message.role === 'tool').map((message) => (message.content === droppedToolResult ? 'dropped' : `${message.content?.length} bytes`));
  assert.deepEqual(results, ['dropped', '600 bytes'], 'the oldest result went first; the newest stays');
  const second = modelRequests(model)[1] ?? [];
  assert.equal(second.find((message) => message.role === 'tool')?.content?.length, 600, 'nothing is dropped while the context fits');
  assert.equal(third[1]?.content, 'Find things.', 'user text is never dropped');

  const big = setup([stopReply('never')], { maxContextBytes: 1024 });
  const failed = await big.engine.run(big.agent, Payload.encode({ task: 'x'.repeat(2000) }));
  await big.engine.close();
  assert.equal(failed.status, 'failed');
  assert.equal(failed.termination.failure?.code, 'interaction.context_too_large');
  assert.equal(big.model.requests().length, 0);
});

test('a tool whose outcome is Unknown is settled explicitly, never guessed; a child that drains with it unresolved fails the Process', async () => {
  const tools = new ToolDispatcher();
  tools.overrides.set('a', { unknown: true });
  const resolved = setup([toolsReply(call('c1', 'lookup', { q: 'a' })), stopReply('after settlement')], { tools });
  const process = await resolved.engine.start(resolved.agent, input);
  const unknown = await resolved.recorder.awaitEvent((event) => event.name === 'agent.effect.finished' && event.relation.parentId !== undefined);
  assert.equal(resolved.model.requests().length, 1, 'the model waits while the tool outcome is unknown');
  const child = resolved.engine.process(unknown.processId);
  assert.ok(child !== undefined && unknown.effectId !== undefined);
  await child.resolveUnknownEffect(unknown.effectId, Settlement.of('succeeded', Payload.encode({ content: 'settled by a person' })));
  const result = await process.await();
  await resolved.engine.close();
  assert.equal(result.status, 'completed');
  assert.equal((modelRequests(resolved.model)[1] ?? []).find((message) => message.role === 'tool')?.content, 'settled by a person');

  const killed = setup([toolsReply(call('c1', 'lookup', { q: 'a' })), stopReply('never')], { tools: new ToolDispatcher() });
  killed.tools.overrides.set('a', { unknown: true });
  const root = await killed.engine.start(killed.agent, input);
  const lost = await killed.recorder.awaitEvent((event) => event.name === 'agent.effect.finished' && event.relation.parentId !== undefined);
  await killed.engine.process(lost.processId)?.kill('the tool host is gone');
  const failed = await root.await();
  await killed.engine.close();
  assert.equal(failed.termination.failure?.code, 'interaction.tool.outcome_unknown');
  assert.equal(killed.model.requests().length, 1, 'the model never saw a guessed result');
});

test('a parent delivers a steer with signal_child; it reaches the child agent at its next model call', async () => {
  const firstCall = latch();
  const { engine, agent, model } = setup([{ settlement: { status: 'succeeded', payload: encodeModelReply(toolsReply(call('c1', 'lookup', { q: 'a' }))) }, gate: firstCall.promise }, stopReply('done')]);
  type ParentState = { phase: 'start' | 'started' | 'signaled' | 'opened'; child?: string; wait?: string };
  const parent = machineDefinition<ParentState>({
    descriptor: Descriptor.create({ name: 'test.parent', description: 'Starts an agent and steers it.', inputSchema: Schema.of(true), outputSchema: Schema.of(true) }),
    stateKind: 'test.parent.state',
    childDeployments: [agent],
    initial: () => ({ phase: 'start' }),
    check: (value) => value as ParentState,
    step(state, signals) {
      const body = signals[0]?.payload.decode<Record<string, unknown>>();
      switch (state.phase) {
        case 'start':
          return {
            state: { phase: 'started' },
            transition: Transition.continue(0, [
              Effect.startChild(ChildSpec.create({ key: ChildKey.parse('agent'), deploymentRef: agent.ref, input: Payload.encode({ task: 'Find a.' }), budget: Budget.of({ steps: Quota.of(64), effects: Quota.of(32), signals: Quota.of(64) }), capabilities: CapabilitySet.empty })),
            ]),
          };
        case 'started': {
          const child = body?.process_id as string;
          return { state: { phase: 'signaled', child }, transition: Transition.continue(1, [Effect.signalChild(ProcessId.parse(child), steerRequest('parent-steer', 'Mind the budget.'))]) };
        }
        case 'signaled':
          firstCall.open();
          return {
            state: { ...state, phase: 'opened' },
            transition: Transition.continue(1, [Effect.waitChildren(ChildWaitSpec.create({ key: WaitKey.parse('agent'), children: [ProcessId.parse(state.child as string)], boundary: 'subtree_drained', condition: ChildWaitCondition.all() }))]),
          };
        case 'opened': {
          const answer = signals.find((signal) => objectOf(signal.payload)?.operation === 'child_wait_satisfied');
          if (answer === undefined) return { state: { ...state, wait: signals[0]?.waitId?.toString() }, transition: Transition.wait(signals.length, signals[0]?.waitId ?? WaitId.parse(state.wait as string)) };
          return { state, transition: Transition.complete(signals.length, Payload.encode('ok')) };
        }
      }
    },
  });
  const result = await engine.run(deployment(parent, 'test.parent'), Payload.encode(null));
  await engine.close();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  const requests = modelRequests(model);
  assert.equal(requests.length, 2);
  assert.ok(!(requests[0] ?? []).some((message) => message.content === 'Mind the budget.'), 'not in the call that was already in flight');
  assert.deepEqual((requests[1] ?? []).at(-1), { role: 'user', content: 'Mind the budget.' });
});

test('the context size is the UTF-8 length of the JSON sent, system prompt first (non-ASCII and lone surrogates included)', () => {
  const messages = [
    { role: 'user' as const, content: 'naïve ☃ café 😀' },
    { role: 'assistant' as const, content: 'lone \ud800 surrogate' },
  ];
  const sent = JSON.stringify([{ role: 'system', content: 'sys ✓' }, ...messages]);
  assert.equal(contextBytes('sys ✓', messages), new TextEncoder().encode(sent).length);
  assert.equal(contextBytes('', messages), new TextEncoder().encode(JSON.stringify(messages)).length);
  assert.ok(contextBytes('', messages) > JSON.stringify(messages).length, 'bytes, not UTF-16 code units');
});

test('the context bound is never below the exact size, so a context is refused or reduced exactly when its exact size is over', () => {
  const text = fc.string({ unit: 'binary', maxLength: 40 });
  const message = fc.oneof(
    fc.record({ role: fc.constantFrom('user' as const, 'assistant' as const), content: fc.option(text, { nil: null }) }),
    fc.record({ role: fc.constant('tool' as const), toolCallId: text, content: text }),
    fc.record({
      role: fc.constant('assistant' as const),
      content: fc.option(text, { nil: null }),
      toolCalls: fc.array(fc.record({ id: text, name: text, arguments: text }), { maxLength: 3 }),
    }),
  );
  fc.assert(
    fc.property(text, fc.array(message, { maxLength: 8 }), (system, messages) => {
      const exact = contextBytes(system, messages as never);
      assert.ok(contextBytesBound(system, messages as never) >= exact);
      assert.equal(contextFits(system, messages as never, exact), true);
      assert.equal(contextFits(system, messages as never, exact - 1), false);
      const reduced = reduceContext(system, messages as never, exact);
      assert.ok(reduced.ok && reduced.dropped === 0 && reduced.messages.length === messages.length);
    }),
    { seed: 20261207, numRuns: 300 },
  );
});
