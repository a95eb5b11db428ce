/**
 * The ToolSet Definition (one tool call per Process) against the Definition conformance suite, in
 * both of its paths — a dispatched tool (`calling`) and a tool that asks a person (`opening` →
 * `waiting`) — plus its ordinary tool errors and its restore refusals.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Engine } from '../../../src/kernel/engine.js';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import { EffectId, ProcessId, SignalId, WaitId } from '../../../src/kernel/identity.js';
import { waitOpenedPayload } from '../../../src/kernel/mailbox.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Signal } from '../../../src/kernel/signal.js';
import { runDefinitionConformance } from '../../../src/testing/definition-conformance.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { toolErrorPayload, toolResultPayload } from '../../../strategies/interaction/tool-wire.js';
import { deployment, testTools, ToolDispatcher } from './harness.js';

const root = ProcessId.parse('process:tool');
const effect = (step: number): EffectId => EffectId.derive(root, BigInt(step), 0);
const waitOf = (step: number): WaitId => WaitId.derive(effect(step));
const settled = (step: number, status: 'succeeded' | 'failed', payload: Payload): Signal => Signal.create({ id: SignalId.settlement(effect(step)), status, payload });
const opened = (step: number): Signal => Signal.create({ id: SignalId.waitOpened(waitOf(step)), waitId: waitOf(step), payload: waitOpenedPayload });
const answered = (step: number, answer: unknown): Signal => Signal.create({ id: SignalId.parseExternal('answer-1'), waitId: waitOf(step), payload: Payload.encode(answer) });
const state = (value: Record<string, unknown>): ExecutionState => ExecutionState.encode('test.tools.state', value);
const definition = testTools.definition;

runDefinitionConformance('toolset dispatch', {
  definition,
  input: Payload.encode({ tool: 'lookup', arguments: '{"q":"a"}' }),
  initialSignals: [],
  followingSignals: [[settled(1, 'succeeded', toolResultPayload('result of a'))]],
  restoredCases: [{ name: 'a failed call', state: state({ phase: 'calling', tool: 'lookup', arguments: '{"q":"a"}' }), signals: [settled(1, 'failed', toolErrorPayload('x.y', 'no'))] }],
  rejectedCases: [
    { name: 'an opening where the settlement belongs', state: state({ phase: 'calling', tool: 'lookup', arguments: '{"q":"a"}' }), signals: [opened(1)], failureKind: 'contract', failureCode: 'toolset.protocol.invalid' },
  ],
});

runDefinitionConformance('toolset ask', {
  definition,
  input: Payload.encode({ tool: 'ask', arguments: '{"question":"Which year?"}' }),
  initialSignals: [],
  followingSignals: [[opened(1)], [answered(1, { answer: '1969' })]],
  restoredCases: [{ name: 'waiting for the answer', state: state({ phase: 'waiting', tool: 'ask', arguments: '{"question":"Q"}', waitId: waitOf(1).toString() }), signals: [answered(1, { answer: 'x' })] }],
});

test('malformed arguments and a failed settlement are ordinary tool errors (the child fails), not Step errors', async () => {
  const tools = new ToolDispatcher();
  const engine = new Engine({ committer: new MemoryTreeCommitter() });
  const set = deployment(testTools.definition, 'test.tools', tools);
  const notJson = await engine.run(set, Payload.encode({ tool: 'lookup', arguments: '{q' }));
  const wrongShape = await engine.run(set, Payload.encode({ tool: 'lookup', arguments: '{"x":1}' }));
  const broken = await engine.run(set, Payload.encode({ tool: 'broken', arguments: '{"q":"z"}' }));
  await engine.close();
  assert.equal(notJson.termination.failure?.code, 'toolset.arguments.invalid');
  assert.equal(wrongShape.termination.failure?.code, 'toolset.arguments.invalid');
  assert.equal(broken.termination.failure?.code, 'toolset.tool.failed');
  assert.deepEqual(tools.began, ['z'], 'bad arguments never reach the dispatcher');
});

test('restore refuses a ToolSet state that breaks its invariants', () => {
  const broken: Record<string, Record<string, unknown>> = {
    'a tool the set does not have': { phase: 'ready', tool: 'ghost', arguments: '{}' },
    'a dispatched tool waiting': { phase: 'waiting', tool: 'lookup', arguments: '{}', waitId: waitOf(1).toString() },
    'an ask tool calling': { phase: 'calling', tool: 'ask', arguments: '{}' },
    'waiting without its wait': { phase: 'waiting', tool: 'ask', arguments: '{}' },
    'an unknown member': { phase: 'ready', tool: 'lookup', arguments: '{}', extra: 1 },
  };
  for (const [name, value] of Object.entries(broken)) {
    assert.throws(() => definition.restore(state(value), new AbortController().signal), /invalid test\.tools\.state state/, name);
  }
});
