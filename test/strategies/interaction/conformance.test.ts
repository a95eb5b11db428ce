/**
 * The interaction Definition against the kernel's Definition conformance suite (determinism, hidden
 * mutable input, shared state, lossy restore, per-batch validation, rejected steps) over windows
 * shaped like the Engine's — model settlements, start results, batch-wait openings and answers,
 * a steer in the middle of a batch — through every phase; and restore refusing broken invariants.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import { EffectId, ProcessId, SignalId, WaitId } from '../../../src/kernel/identity.js';
import { childWaitOpenedPayload } from '../../../src/kernel/mailbox.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Signal } from '../../../src/kernel/signal.js';
import { runDefinitionConformance } from '../../../src/testing/definition-conformance.js';
import { define } from '../../../strategies/interaction/definition.js';
import { encodeModelReply, type ModelReply } from '../../../strategies/interaction/model-wire.js';
import { interactionStateKind } from '../../../strategies/interaction/state.js';
import { call, deployment, stopReply, summarizer, testTools, toolBudget, ToolDispatcher, toolsReply } from './harness.js';

const root = ProcessId.parse('process:interaction');
const effect = (step: number, index = 0): EffectId => EffectId.derive(root, BigInt(step), index);
const child = (step: number, index = 0): string => ProcessId.child(effect(step, index)).toString();
const waitOf = (step: number): WaitId => WaitId.derive(effect(step));

const modelSettled = (step: number, reply: ModelReply): Signal => Signal.create({ id: SignalId.settlement(effect(step)), status: 'succeeded', payload: encodeModelReply(reply) });
const modelFailed = (step: number): Signal =>
  Signal.create({ id: SignalId.settlement(effect(step)), status: 'failed', payload: Payload.encode({ error: { code: 'rate_limited', message: 'slow down', status: 429 } }) });
const started = (step: number, index = 0): Signal =>
  Signal.create({ id: SignalId.settlement(effect(step, index)), payload: Payload.encode({ operation: 'start_child', process_id: child(step, index) }) });
const refused = (step: number, index = 0): Signal =>
  Signal.create({
    id: SignalId.settlement(effect(step, index)),
    payload: Payload.encode({ operation: 'start_child', failure: { kind: 'execution', code: 'engine.child.budget_exhausted', message: 'no budget' } }),
  });
const opening = (step: number): Signal => Signal.create({ id: SignalId.waitOpened(waitOf(step)), waitId: waitOf(step), payload: childWaitOpenedPayload });
const steer = (id: string, text: string): Signal => Signal.create({ id: SignalId.parseExternal(id), payload: Payload.encode({ steer: text }) });

interface Drained {
  readonly processId: string;
  readonly status?: string;
  readonly output?: unknown;
  readonly failure?: unknown;
  readonly unresolved?: number;
}
const answer = (step: number, outcomes: readonly Drained[]): Signal =>
  Signal.create({
    id: SignalId.childWaitSatisfied(waitOf(step)),
    waitId: waitOf(step),
    payload: Payload.encode({
      operation: 'child_wait_satisfied',
      outcomes: outcomes.map((outcome) => ({
        result: {
          process_id: outcome.processId,
          started_at: '2026-12-01T00:00:00Z',
          finished_at: '2026-12-01T00:00:01Z',
          ...(outcome.output === undefined ? {} : { output: outcome.output }),
          termination: { status: outcome.status ?? 'completed', cause: 'completion', ...(outcome.failure === undefined ? {} : { failure: outcome.failure }) },
          usage: { accepted_signals: 1, committed_steps: 2, dropped_deltas: 0, prepared_effects: 1 },
        },
        subtree_unresolved_effects: Array.from({ length: outcome.unresolved ?? 0 }, (_, index) => ({ process_id: outcome.processId, effect_id: EffectId.derive(ProcessId.parse(outcome.processId), 1n, index).toString() })),
      })),
    }),
  });

const toolSet = deployment(testTools.definition, 'test.tools', new ToolDispatcher());
const definition = define({
  name: 'test.agent',
  description: 'An interaction under the conformance suite.',
  system: 'Be brief.',
  tools: { deployment: toolSet, specs: testTools.specs, budget: toolBudget() },
  delegates: [{ name: 'summarize', description: 'Summarises a topic.', deployment: deployment(summarizer(), 'test.summarizer'), budget: toolBudget() }],
  maxTurns: 4,
  maxToolConcurrency: 2,
  maxContextBytes: 16 * 1024,
});

const threeCalls = [call('c1', 'lookup', { q: 'a' }), call('c2', 'lookup', { q: 'b' }), call('c3', 'lookup', { q: 'c' })];
const task = { role: 'user', content: 'Find a, b and c.' };
const assistant = { role: 'assistant', content: null, toolCalls: threeCalls };
const base = { messages: [task], turns: 1, truncations: 0, rejections: 0, steers: [], waits: 0 };
const state = (value: Record<string, unknown>): ExecutionState => ExecutionState.encode(interactionStateKind, { ...base, ...value });

runDefinitionConformance('interaction', {
  definition,
  input: Payload.encode({ task: 'Find a, b and c.' }),
  initialSignals: [],
  followingSignals: [
    // Step 2: three calls, concurrency 2: a and b start.
    [modelSettled(1, toolsReply(...threeCalls))],
    // Step 3: both started; the batch wait is declared; step 4: it opens.
    [started(2, 0), started(2, 1)],
    [opening(3)],
    // Step 5: b drains first (and a steer arrives mid-batch): c starts in the freed slot.
    [steer('steer-1', 'Prefer recent sources.'), answer(3, [{ processId: child(2, 1), output: { content: 'B' } }])],
    // Step 6: c started; a new wait over a and c; step 7: it opens already answered.
    [started(5, 0)],
    [opening(6), answer(6, [{ processId: child(2, 0), output: { content: 'A' } }, { processId: child(5, 0), status: 'failed', failure: { kind: 'execution', code: 'toolset.tool.failed', message: 'c: no' } }])],
    // Step 8: the model (which now sees the results in call order and the steer) answers.
    [modelSettled(7, stopReply('a, b; c failed'))],
  ],
  restoredCases: [
    { name: 'a model call in flight', state: state({ model: true }), signals: [modelSettled(5, toolsReply(call('x1', 'ask', { question: 'Which?' })))] },
    { name: 'a model call that failed', state: state({ model: true }), signals: [modelFailed(5)] },
    {
      name: 'starts settling, one refused',
      state: state({ messages: [task, assistant], batch: { calls: [{ starting: true }, { starting: true }, {}] } }),
      signals: [refused(4, 0), started(4, 1)],
      followingSignals: [[started(5, 0)], [opening(6)]],
    },
    {
      name: 'waiting, a child drains with an unknown outcome',
      state: state({ messages: [task, assistant], waits: 1, batch: { calls: [{ child: child(2, 0) }, { child: child(2, 1) }, {}], waitId: waitOf(3).toString() } }),
      signals: [answer(3, [{ processId: child(2, 0), unresolved: 1 }])],
    },
    {
      name: 'a delegate drains: its typed output becomes an artifact and the result',
      state: state({
        messages: [task, { role: 'assistant', content: null, toolCalls: [call('d1', 'summarize', { topic: 'trees' }), call('c2', 'lookup', { q: 'b' })] }],
        waits: 1,
        batch: { calls: [{ child: child(2, 0) }, { child: child(2, 1) }], waitId: waitOf(3).toString() },
      }),
      signals: [answer(3, [{ processId: child(2, 0), output: { summary: 'all about trees', words: 3 } }])],
      followingSignals: [[opening(5)], [answer(5, [{ processId: child(2, 1), output: { content: 'B' } }])], [modelSettled(7, stopReply('done'))]],
    },
    {
      name: 'a model call in flight with artifacts kept',
      state: state({ model: true, artifacts: [{ delegate: 'summarize', turn: 1, call: 'd1', output: { summary: 's', words: 1 } }] }),
      signals: [modelSettled(5, stopReply('done'))],
    },
    {
      name: 'a length-truncated reply gets one more attempt',
      state: state({ model: true }),
      signals: [modelSettled(5, { ...toolsReply(call('x', 'lookup', { q: 'z' })), finishReason: 'length' })],
      followingSignals: [[modelSettled(6, stopReply('short'))]],
    },
  ],
  rejectedCases: [
    { name: 'a start result where the model settlement belongs', state: state({ model: true }), signals: [started(5, 0)], failureKind: 'contract', failureCode: 'interaction.protocol.invalid' },
    {
      name: 'an answer about a child the batch did not await',
      state: state({ messages: [task, assistant], waits: 1, batch: { calls: [{ child: child(2, 0) }, {}, {}], waitId: waitOf(3).toString() } }),
      signals: [answer(3, [{ processId: child(9, 0), output: { content: 'x' } }])],
      failureKind: 'contract',
      failureCode: 'interaction.protocol.invalid',
    },
  ],
});

test('restore refuses a state that breaks the interaction invariants', () => {
  const oneCall = { role: 'assistant', content: null, toolCalls: [call('c1', 'lookup', { q: 'a' })] };
  const broken: Record<string, Record<string, unknown>> = {
    'an unknown member': { model: true, extra: 1 },
    'the first message is not the task': { messages: [{ role: 'assistant', content: 'hi' }], model: true },
    'a tool result without its call': { messages: [task, { role: 'tool', toolCallId: 'c1', content: 'x' }], model: true },
    'results out of call order': {
      messages: [task, assistant, { role: 'tool', toolCallId: 'c2', content: 'b' }, { role: 'tool', toolCallId: 'c1', content: 'a' }, { role: 'tool', toolCallId: 'c3', content: 'c' }],
      model: true,
    },
    'a model call and a batch at once': { messages: [task, oneCall], model: true, batch: { calls: [{ starting: true }] } },
    'tool calls without a batch': { messages: [task, oneCall] },
    'a batch with the wrong number of entries': { messages: [task, assistant], batch: { calls: [{ starting: true }] } },
    'more children running than maxToolConcurrency': {
      messages: [task, assistant],
      batch: { calls: [{ child: child(2, 0) }, { child: child(2, 1) }, { child: child(2, 2) }], waitId: waitOf(3).toString() },
    },
    'a call begun before an earlier one': { messages: [task, assistant], batch: { calls: [{}, { starting: true }, {}] } },
    'a wait opened while starts are pending': { messages: [task, assistant], batch: { calls: [{ child: child(2, 0) }, { starting: true }, {}], waitId: waitOf(3).toString() } },
    'one child running two calls': { messages: [task, assistant], batch: { calls: [{ child: child(2, 0) }, { child: child(2, 0) }, {}], waitId: waitOf(3).toString() } },
    'turns beyond maxTurns': { turns: 5, model: true },
    'a model call whose context exceeds maxContextBytes': { messages: [{ role: 'user', content: 'x'.repeat(17 * 1024) }], model: true },
    'an empty steer': { model: true, steers: [' '] },
    'idle after a turn': { turns: 1 },
  };
  for (const [name, value] of Object.entries(broken)) {
    assert.throws(() => definition.restore(state(value), new AbortController().signal), /invalid interaction\.state state/, name);
  }
  // And the valid neighbours restore.
  assert.doesNotThrow(() => definition.restore(state({ model: true, steers: ['go'] }), new AbortController().signal));
  assert.doesNotThrow(() => definition.restore(state({ messages: [task, assistant], batch: { calls: [{ child: child(2, 0), result: 'A' }, { child: child(2, 1) }, { starting: true }] } }), new AbortController().signal));
});
