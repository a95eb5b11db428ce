/**
 * Delegates (kernel-contract §6.4 "delegate bindings, typed delegate Artifacts"): Deployments the model
 * calls like tools. Each call is a child Process of the delegate's own deployment; its output, typed
 * by that Definition's output schema, goes back to the model as JSON and stays in the state as an
 * artifact. Through a real Engine (memory committer) and a scripted model.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KernelError } from '../../../src/kernel/errors.js';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Descriptor } from '../../../src/kernel/descriptor.js';
import { Schema } from '../../../src/kernel/schema.js';
import { Transition } from '../../../src/kernel/transition.js';
import { define } from '../../../strategies/interaction/definition.js';
import { machineDefinition } from '../../../strategies/internal/machine.js';
import type { Artifact } from '../../../strategies/interaction/state.js';
import { interactionStateKind } from '../../../strategies/interaction/state.js';
import { call, deployment, latch, modelRequests, setup, stopReply, summarizer, testTools, toolBudget, ToolDispatcher, toolsReply } from './harness.js';

const input = Payload.encode({ task: 'Summarise trees and look up oaks.' });
const typed = deployment(summarizer('typed'), 'test.summarizer.typed');
const untyped = deployment(summarizer('untyped'), 'test.summarizer.untyped');
const summarize = { name: 'summarize', description: 'Hands a topic to the summariser.', deployment: typed, budget: toolBudget() };

test('a delegate is offered with its input schema, runs as a child of its own deployment, and its typed output returns as JSON and stays as an artifact', async () => {
  const seen: Artifact[][] = [];
  const { engine, model, recorder, agent, tools } = setup([toolsReply(call('d1', 'summarize', { topic: 'trees' }), call('c2', 'lookup', { q: 'oaks' })), stopReply('Trees, summarised.')], {
    delegates: [summarize],
    completionValidator: (_output, _messages, artifacts) => {
      seen.push([...artifacts]);
      return undefined;
    },
  });
  const result = await engine.run(agent, input);
  await engine.close();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));

  const offered = (model.requests()[0]?.effect.payload.decode() as { tools: { name: string; parameters: unknown }[] }).tools;
  assert.deepEqual(
    offered.find((tool) => tool.name === 'summarize')?.parameters,
    JSON.parse(typed.definition.descriptor().inputSchema.json()),
    'the model sees the delegate Definition’s input schema as the parameters',
  );
  const starts = recorder.events().filter((event) => event.name === 'agent.process.started' && !event.processId.equals(event.relation.rootId));
  assert.deepEqual(starts.map((event) => event.deploymentRef.name).sort(), ['test.summarizer.typed', 'test.tools'], 'the delegate call ran as a child of its own deployment');
  assert.deepEqual(tools.began, ['oaks']);

  const results = (modelRequests(model)[1] ?? []).filter((message) => message.role === 'tool');
  assert.deepEqual(
    results.map((message) => [message.toolCallId, message.content]),
    [
      ['d1', '{"summary":"all about trees","words":3}'],
      ['c2', 'result of oaks'],
    ],
    'the artifact as canonical JSON, in call order with the tool result',
  );
  assert.deepEqual(seen, [[{ delegate: 'summarize', turn: 1, call: 'd1', output: { summary: 'all about trees', words: 3 } }]], 'the validator sees the typed artifact');
});

test('a batch starts all its delegate calls at once, outside the tools’ window, and returns every result in call order once all drained', async () => {
  const tools = new ToolDispatcher();
  const held = latch();
  tools.holds.set('a', held.promise);
  const { engine, model, recorder, agent } = setup(
    [toolsReply(call('c1', 'lookup', { q: 'a' }), call('d1', 'summarize', { topic: 'x' }), call('c2', 'lookup', { q: 'b' }), call('d2', 'summarize', { topic: 'y' })), stopReply('done')],
    { tools, delegates: [summarize], maxToolConcurrency: 1 },
  );
  const process = await engine.start(agent, input);
  // Both delegates finish while `a` holds the one tool slot, so `b` has not begun.
  const finishedDelegates = () => recorder.events().filter((event) => event.name === 'agent.process.finished' && event.deploymentRef.name === 'test.summarizer.typed').length;
  await recorder.awaitEvent(() => finishedDelegates() === 2, { signal: AbortSignal.timeout(10_000) });
  await tools.began$('a');
  assert.deepEqual(tools.began, ['a'], 'the tool window (1) holds b back; the delegates did not wait for it');
  held.open();
  const result = await process.await();
  await engine.close();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  assert.deepEqual(tools.began, ['a', 'b']);
  const results = (modelRequests(model)[1] ?? []).filter((message) => message.role === 'tool');
  assert.deepEqual(
    results.map((message) => [message.toolCallId, message.content]),
    [
      ['c1', 'result of a'],
      ['d1', '{"summary":"all about x","words":3}'],
      ['c2', 'result of b'],
      ['d2', '{"summary":"all about y","words":3}'],
    ],
  );
});

test('delegate arguments its input schema refuses reach the model as the start’s code; arguments that are not JSON start nothing', async () => {
  const { engine, model, recorder, agent } = setup(
    [toolsReply(call('d1', 'summarize', { topic: '' }), { id: 'd2', name: 'summarize', arguments: '{"topic":' }), stopReply('Nothing to summarise.')],
    { delegates: [summarize] },
  );
  const result = await engine.run(agent, input);
  await engine.close();
  assert.equal(result.status, 'completed');
  const results = (modelRequests(model)[1] ?? []).filter((message) => message.role === 'tool').map((message) => JSON.parse(message.content ?? '') as unknown);
  assert.deepEqual(results[0], { error: { code: 'engine.child.input.invalid' } }, 'the refusal’s code only');
  assert.equal((results[1] as { error: { code: string } }).error.code, 'interaction.delegate.arguments_invalid');
  assert.equal(recorder.events().filter((event) => event.name === 'agent.process.started' && !event.processId.equals(event.relation.rootId)).length, 0, 'no child ran');
});

test('a delegate output its own schema refuses is not an artifact: the child fails, and the model sees an ordinary error', async () => {
  const seen: Artifact[][] = [];
  const { engine, model, agent } = setup([toolsReply(call('d1', 'claim', { topic: 'trees' })), stopReply('It failed.')], {
    delegates: [{ ...summarize, name: 'claim', deployment: untyped }],
    completionValidator: (_output, _messages, artifacts) => {
      seen.push([...artifacts]);
      return undefined;
    },
  });
  const result = await engine.run(agent, input);
  await engine.close();
  assert.equal(result.status, 'completed');
  const content = (modelRequests(model)[1] ?? []).find((message) => message.role === 'tool')?.content ?? '';
  const error = (JSON.parse(content) as { error?: { code?: string; message?: string } }).error;
  assert.match(error?.code ?? '', /output/, content);
  assert.deepEqual(seen, [[]], 'no artifact from an output its schema refused');
});

test('a delegate configuration that cannot be offered is refused at definition time', () => {
  const toolSet = deployment(testTools.definition, 'test.tools', new ToolDispatcher());
  const base = { name: 'test.agent', description: 'x', system: '', tools: { deployment: toolSet, specs: testTools.specs, budget: toolBudget() }, maxTurns: 4, maxToolConcurrency: 2, maxContextBytes: 16 * 1024 };
  const refuses = (delegates: unknown, pattern: RegExp) => assert.throws(() => define({ ...base, delegates: delegates as never }), (error: unknown) => error instanceof KernelError && pattern.test(error.message));
  refuses([{ ...summarize, name: 'lookup' }], /two bindings offer a tool or delegate lookup/);
  refuses([summarize, summarize], /two bindings offer a tool or delegate summarize/);
  refuses([{ ...summarize, name: 'sum marize' }], /delegate name must match/);
  refuses([{ ...summarize, budget: undefined }], /a delegate is/);
  refuses('summarize', /delegates must be an array/);
  // The model is offered the input schema as function parameters, which must be an object schema.
  const anyInput = machineDefinition<{ readonly done: true }>({
    descriptor: Descriptor.create({ name: 'test.any_input', description: 'Takes anything.', inputSchema: Schema.of(true), outputSchema: Schema.of(true) }),
    stateKind: 'test.any_input.state',
    initial: () => ({ done: true }),
    check: (value) => value as { readonly done: true },
    step: (state) => ({ state, transition: Transition.complete(0, Payload.encode(null)) }),
  });
  refuses([{ ...summarize, deployment: deployment(anyInput, 'test.any_input') }], /delegate summarize: its Definition's input schema must be an object schema/);
});

test('restore refuses artifacts that break the interaction invariants', () => {
  const toolSet = deployment(testTools.definition, 'test.tools', new ToolDispatcher());
  const definition = define({ name: 'test.agent', description: 'x', system: '', tools: { deployment: toolSet, specs: testTools.specs, budget: toolBudget() }, delegates: [summarize], maxTurns: 4, maxToolConcurrency: 2, maxContextBytes: 16 * 1024 });
  const base = { messages: [{ role: 'user', content: 'Go.' }], turns: 2, truncations: 0, rejections: 0, steers: [], waits: 1, model: true };
  const artifact = { delegate: 'summarize', turn: 1, call: 'd1', output: { summary: 's', words: 1 } };
  const restore = (artifacts: unknown) => definition.restore(ExecutionState.encode(interactionStateKind, { ...base, artifacts }), new AbortController().signal);
  assert.doesNotThrow(() => restore([artifact, { ...artifact, turn: 2, call: 'd1' }]), 'the same call id in another turn is another artifact');
  // The batch: delegate calls start with the batch and stay outside the tools' window.
  const calls = [call('c1', 'lookup', { q: 'a' }), call('c2', 'lookup', { q: 'b' }), call('d1', 'summarize', { topic: 'x' }), call('c3', 'lookup', { q: 'c' })];
  const batchState = (entries: unknown[]) =>
    ExecutionState.encode(interactionStateKind, { ...base, model: undefined, messages: [base.messages[0], { role: 'assistant', content: null, toolCalls: calls }], waits: 0, batch: { calls: entries } });
  assert.doesNotThrow(() => definition.restore(batchState([{ starting: true }, { starting: true }, { starting: true }, {}]), new AbortController().signal), 'two tools and a delegate start at once under maxToolConcurrency 2');
  for (const [name, entries] of Object.entries({
    'a delegate call the batch has not started': [{ starting: true }, { starting: true }, {}, {}],
    'three tool calls running under maxToolConcurrency 2': [{ starting: true }, { starting: true }, { starting: true }, { starting: true }],
  })) {
    assert.throws(() => definition.restore(batchState(entries), new AbortController().signal), (error: unknown) => error instanceof KernelError && error.code === 'invalid_execution_state', name);
  }

  const broken: Record<string, unknown> = {
    'an empty list (absent while there is none)': [],
    'a delegate this interaction does not bind': [{ ...artifact, delegate: 'lookup' }],
    'a turn after the last': [{ ...artifact, turn: 3 }],
    'turn 0 (no model call made it)': [{ ...artifact, turn: 0 }],
    'out of turn order': [{ ...artifact, turn: 2 }, artifact],
    'no call id': [{ ...artifact, call: '' }],
    'no output': [{ delegate: 'summarize', turn: 1, call: 'd1' }],
    'an unknown member': [{ ...artifact, extra: true }],
  };
  for (const [name, artifacts] of Object.entries(broken)) {
    assert.throws(() => restore(artifacts), (error: unknown) => error instanceof KernelError && error.code === 'invalid_execution_state', name);
  }
});
