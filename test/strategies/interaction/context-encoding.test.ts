/**
 * The interaction re-encodes only what a Step added to its context (context-encoding.ts). What must
 * hold: every state snapshot and every model request is byte for byte the plain canonical encoding
 * of its value, whether the context's text was reused (the candidate just encoded) or not (a state
 * restored from a copy, as after a crash); and a restored candidate's context takes its text back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Definition, Execution } from '../../../src/kernel/definition.js';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import { Payload } from '../../../src/kernel/payload.js';
import { contextPayload, encodeWithContext, extended, restoredContext } from '../../../strategies/interaction/context-encoding.js';
import { chatMessages, type ChatMessage } from '../../../strategies/interaction/model-wire.js';
import { steerRequest } from '../../../strategies/interaction/steer.js';
import { call, latch, reply, setup, stopReply, ToolDispatcher, toolsReply } from './harness.js';

/** Text that canonical JSON escapes or encodes in several UTF-8 bytes. */
const awkward = 'é <b>&amp;</b> \u2028 😀 "quoted" \\ back';

/**
 * Checks every snapshot of the wrapped Definition against the plain encoding of its decoded value,
 * and restores every other state from a fresh copy of its bytes (no text to take back).
 */
function checkedEncoding(): { readonly wrap: (definition: Definition) => Definition; readonly mismatches: string[]; readonly counts: { snapshots: number; copies: number } } {
  const mismatches: string[] = [];
  const counts = { snapshots: 0, copies: 0 };
  const watch = (execution: Execution): Execution => ({
    step: (signal, window) => execution.step(signal, window),
    snapshot() {
      const state = execution.snapshot();
      counts.snapshots += 1;
      const plain = Payload.encode(state.payload.decode()).json();
      if (plain !== state.payload.json()) mismatches.push(`snapshot ${counts.snapshots}: ${state.payload.json()} is not ${plain}`);
      return state;
    },
  });
  let restores = 0;
  const wrap = (definition: Definition): Definition => ({
    descriptor: () => definition.descriptor(),
    childDeployments: () => definition.childDeployments(),
    start: (input) => watch(definition.start(input) as Execution),
    async restore(state, signal) {
      restores += 1;
      let source = state;
      if (restores % 2 === 0) {
        counts.copies += 1;
        source = ExecutionState.encode(state.kind, Payload.parse(state.payload.json()));
      }
      return watch(await definition.restore(source, signal));
    },
  });
  return { wrap, mismatches, counts };
}

/** Every model request the scripted model saw is the plain encoding of its value. */
function checkRequests(requests: readonly { readonly effect: { readonly payload: Payload } }[]): void {
  assert.ok(requests.length > 0);
  for (const [index, request] of requests.entries()) {
    assert.equal(request.effect.payload.json(), Payload.encode(request.effect.payload.decode()).json(), `model request ${index}`);
  }
}

const input = Payload.encode({ task: `Find things: ${awkward}` });

test('batches of tool results: every snapshot and model request is the plain canonical encoding, text reused or not', async () => {
  const tools = new ToolDispatcher();
  tools.overrides.set('a', { content: `A ${awkward}` });
  tools.overrides.set('c', { content: `C ${awkward}`.repeat(20) });
  const checked = checkedEncoding();
  const { engine, agent, model } = setup(
    [
      toolsReply(call('c1', 'lookup', { q: 'a' }), call('c2', 'lookup', { q: 'b' })),
      reply('tool_calls', `thinking ${awkward}`, [call('c3', 'lookup', { q: 'c' })]),
      toolsReply(call('c4', 'broken', { q: 'd' }), call('c5', 'nonesuch', { q: 'e' })),
      stopReply(`done ${awkward}`),
    ],
    { tools, wrap: checked.wrap },
  );
  const result = await engine.run(agent, input);
  await engine.close();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  assert.deepEqual(checked.mismatches, []);
  assert.ok(checked.counts.snapshots >= 12 && checked.counts.copies >= 6, JSON.stringify(checked.counts));
  checkRequests(model.requests());
});

test('steers, a truncated reply, a refused answer and the context reducer encode exactly as well', async () => {
  const tools = new ToolDispatcher();
  const held = latch();
  tools.holds.set('a', held.promise);
  tools.overrides.set('a', { content: 'A'.repeat(700) });
  tools.overrides.set('b', { content: `B ${awkward}`.repeat(25) });
  const checked = checkedEncoding();
  const { engine, agent, model } = setup(
    [
      toolsReply(call('c1', 'lookup', { q: 'a' })),
      reply('length', `cut ${awkward}`, [call('c2', 'lookup', { q: 'x' })]),
      toolsReply(call('c3', 'lookup', { q: 'b' })),
      stopReply('refused'),
      stopReply('accepted'),
    ],
    { tools, wrap: checked.wrap, maxContextBytes: 1800, completionValidator: (output) => (output === 'refused' ? `not yet ${awkward}` : undefined) },
  );
  const process = await engine.start(agent, input);
  await tools.began$('a');
  assert.equal(await process.deliverSignals(steerRequest('steer-1', `Prefer primary sources ${awkward}.`)), true);
  held.open();
  const result = await process.await();
  await engine.close();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  assert.equal(result.output?.decode(), 'accepted');
  const sent = model.requests().map((request) => (request.effect.payload.decode() as { messages: ChatMessage[] }).messages);
  assert.ok(
    sent.some((messages) => messages.some((message) => message.content === '[tool result dropped to fit the context]')),
    'the reducer dropped a result on the way (a context not built by appending)',
  );
  assert.ok(
    sent.some((messages) => messages.some((message) => message.content === `Prefer primary sources ${awkward}.`)),
    'the steer reached the model',
  );
  assert.deepEqual(checked.mismatches, []);
  checkRequests(model.requests());
});

test('a restored candidate takes its context text back; a copy of the same bytes re-encodes to the same bytes', () => {
  const task: ChatMessage = { role: 'user', content: `task ${awkward}` };
  const first = extended([task], [{ role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{"q":"<a>"}' }] }]);
  const messages = extended(first, [{ role: 'tool', content: `result ${awkward}`, toolCallId: 'c1' }]);
  const state = { messages, turns: 1, truncations: 0, rejections: 0, steers: [], waits: 1 };
  const payload = encodeWithContext(state);
  assert.equal(payload.json(), Payload.encode(JSON.parse(JSON.stringify(state))).json());
  assert.equal(contextPayload(messages).json(), Payload.encode([...messages]).json());

  const decode = (from: Payload): readonly ChatMessage[] => {
    const decoded = chatMessages((from.decode() as { messages: unknown }).messages);
    assert.ok(decoded.ok);
    return decoded.value;
  };
  const restored = decode(payload);
  restoredContext(payload, restored);
  assert.equal(contextPayload(restored), contextPayload(messages), 'the candidate context text is taken back, not encoded again');

  const copy = Payload.parse(payload.json());
  const fromCopy = decode(copy);
  restoredContext(copy, fromCopy);
  assert.notEqual(contextPayload(fromCopy), contextPayload(messages), 'a copy is not recognised');
  assert.equal(contextPayload(fromCopy).json(), contextPayload(messages).json());

  const next = extended(restored, [{ role: 'user', content: 'more' }]);
  assert.equal(contextPayload(next).json(), Payload.encode([...next]).json());
  assert.equal(extended(next, []), next, 'nothing added: the same array');
});
