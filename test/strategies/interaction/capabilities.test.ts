/**
 * Capabilities through the interaction's bindings (kernel-contract §4.15 capability attenuation):
 * a delegate's or tool binding's `capabilities` are exactly what its call children hold. A child
 * granted a capability runs the Effect that needs it; a child without it is denied before anything
 * is dispatched; a grant beyond the interaction's own is refused at start. Through a real Engine
 * (memory committer) and a scripted model.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CapabilitySet } from '../../../src/kernel/capability.js';
import type { Dispatcher, ReplayPolicy } from '../../../src/kernel/definition.js';
import { Descriptor } from '../../../src/kernel/descriptor.js';
import { Effect, type EffectRequest } from '../../../src/kernel/effect.js';
import { Engine } from '../../../src/kernel/engine.js';
import { Failure } from '../../../src/kernel/failure.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Schema } from '../../../src/kernel/schema.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { Transition } from '../../../src/kernel/transition.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { ObservationRecorder } from '../../../src/testing/scripted-dispatcher.js';
import { define, type DelegateBinding } from '../../../strategies/interaction/definition.js';
import { machineDefinition } from '../../../strategies/internal/machine.js';
import { call, deployment, modelRequests, scriptedModel, stopReply, testTools, toolBudget, ToolDispatcher, toolsReply } from './harness.js';

const fetchCapability = 'web.fetch';
const input = Payload.encode({ task: 'Fetch the page.' });

/** The fetcher's dispatcher: answers every request with the page, and remembers the URLs it was asked for. */
class PageDispatcher implements Dispatcher {
  readonly fetched: string[] = [];

  async dispatch(request: EffectRequest): Promise<Settlement> {
    const { url } = request.effect.payload.decode<{ url: string }>();
    this.fetched.push(url);
    return Settlement.of('succeeded', Payload.encode({ body: `page at ${url}` }));
  }

  replayPolicy(): ReplayPolicy {
    return 'never';
  }
}

/** A delegate Definition whose one Effect needs `web.fetch`: `{url}` → `{body}`. */
function fetcher(pages: PageDispatcher) {
  type State = { readonly url: string; readonly dispatched: boolean };
  const definition = machineDefinition<State>({
    descriptor: Descriptor.create({
      name: 'test.fetcher',
      description: 'Fetches a page (needs web.fetch).',
      inputSchema: Schema.of({ type: 'object', properties: { url: { type: 'string' } }, required: ['url'], additionalProperties: false }),
      outputSchema: Schema.of({ type: 'object', properties: { body: { type: 'string' } }, required: ['body'], additionalProperties: false }),
    }),
    stateKind: 'test.fetcher.state',
    initial: (payload) => ({ url: payload.decode<{ url: string }>().url, dispatched: false }),
    check: (value) => value as State,
    step(state, signals) {
      if (!state.dispatched) {
        const effect = Effect.dispatcher(Payload.encode({ url: state.url }), CapabilitySet.of([fetchCapability]));
        return { state: { ...state, dispatched: true }, transition: Transition.continue(0, [effect]) };
      }
      const settlement = signals[0];
      if (settlement?.status !== 'succeeded') return { state, transition: Transition.fail(signals.length, Failure.create('external', 'test.fetcher.failed', 'the page was not fetched')) };
      return { state, transition: Transition.complete(1, settlement.payload) };
    },
  });
  return deployment(definition, 'test.fetcher', pages);
}

interface Run {
  readonly pages: PageDispatcher;
  readonly engine: Engine;
  readonly recorder: ObservationRecorder;
  readonly model: ReturnType<typeof scriptedModel>;
  readonly agent: ReturnType<typeof deployment>;
}

/**
 * An interaction offering the `fetch` delegate (granted `delegateGrant`) and the test tools
 * (granted `toolGrant`), on an Engine that holds `web.fetch` and `tools.lookup`.
 */
function setup(delegateGrant: CapabilitySet | undefined, toolGrant: CapabilitySet | undefined, script: Parameters<typeof scriptedModel>[0]): Run {
  const pages = new PageDispatcher();
  const fetch: DelegateBinding = {
    name: 'fetch',
    description: 'Fetches a page.',
    deployment: fetcher(pages),
    budget: toolBudget(),
    ...(delegateGrant === undefined ? {} : { capabilities: delegateGrant }),
  };
  const model = scriptedModel(script);
  const definition = define({
    name: 'test.agent',
    description: 'A test ReAct agent.',
    system: 'You are a test agent.',
    maxTurns: 4,
    maxToolConcurrency: 2,
    maxContextBytes: 64 * 1024,
    delegates: [fetch],
    tools: {
      deployment: deployment(testTools.definition, 'test.tools', new ToolDispatcher()),
      specs: testTools.specs,
      budget: toolBudget(),
      ...(toolGrant === undefined ? {} : { capabilities: toolGrant }),
    },
  });
  const recorder = new ObservationRecorder();
  const engine = new Engine({
    committer: new MemoryTreeCommitter(),
    capabilities: CapabilitySet.of([fetchCapability, 'tools.lookup']),
    eventListeners: [recorder],
    deltaListeners: [recorder],
  });
  return { pages, engine, recorder, model, agent: deployment(definition, 'test.agent', model) };
}

/** The tool messages the model was shown in its second call. */
function toolResults(run: Run): [string | undefined, string | null][] {
  return (modelRequests(run.model)[1] ?? []).filter((message) => message.role === 'tool').map((message) => [message.toolCallId, message.content]);
}

function childStarts(run: Run): string[] {
  return run.recorder
    .events()
    .filter((event) => event.name === 'agent.process.started' && !event.processId.equals(event.relation.rootId))
    .map((event) => event.deploymentRef.name)
    .sort();
}

test('a delegate granted web.fetch runs the Effect that needs it, and its child holds exactly the grant', async () => {
  const run = setup(CapabilitySet.of([fetchCapability]), undefined, [toolsReply(call('d1', 'fetch', { url: 'https://example.test/a' })), stopReply('Fetched.')]);
  const process = await run.engine.start(run.agent, input);
  const result = await process.await();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  assert.deepEqual(run.pages.fetched, ['https://example.test/a'], 'the gated Effect was dispatched once');
  assert.deepEqual(toolResults(run), [['d1', '{"body":"page at https://example.test/a"}']]);

  const tree = await run.engine.captureTree(process.id);
  const child = tree.processSnapshots().find((snapshot) => snapshot.deploymentRef.name === 'test.fetcher');
  assert.deepEqual(child?.capabilities.values(), [fetchCapability], 'the child holds the binding’s grant, not the Engine’s whole set');
  assert.deepEqual(tree.root.capabilities.values(), ['tools.lookup', fetchCapability]);
  await run.engine.close();
});

test('a delegate without the grant is denied its gated Effect before dispatch; the model sees the denial and the interaction goes on', async () => {
  const run = setup(undefined, undefined, [toolsReply(call('d1', 'fetch', { url: 'https://example.test/b' })), stopReply('Could not fetch.')]);
  const result = await run.engine.run(run.agent, input);
  await run.engine.close();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  assert.deepEqual(run.pages.fetched, [], 'nothing was dispatched');
  assert.deepEqual(childStarts(run), ['test.fetcher'], 'the child started (with no capabilities) and failed on its own Effect');
  const [[id, content]] = toolResults(run) as [[string, string]];
  assert.equal(id, 'd1');
  assert.equal((JSON.parse(content) as { error: { code: string } }).error.code, 'engine.capability.denied');
});

test('a grant beyond the interaction’s own capabilities is refused at start: no child, nothing dispatched', async () => {
  const run = setup(CapabilitySet.of([fetchCapability]), undefined, [toolsReply(call('d1', 'fetch', { url: 'https://example.test/c' })), stopReply('Refused.')]);
  // The root is started with none of the Engine's capabilities, so its delegate's grant escalates.
  const process = await run.engine.start(run.agent, input, { capabilities: CapabilitySet.empty });
  const result = await process.await();
  await run.engine.close();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  assert.deepEqual(childStarts(run), [], 'the refused start created no child');
  assert.deepEqual(run.pages.fetched, []);
  assert.deepEqual(toolResults(run), [['d1', '{"error":{"code":"engine.child.capability_escalation"}}']], 'a refused start shows its code only');
});

test('a tool binding’s capabilities are what its tool-call children hold', async () => {
  const run = setup(undefined, CapabilitySet.of(['tools.lookup']), [toolsReply(call('c1', 'lookup', { q: 'oaks' })), stopReply('Looked up.')]);
  const process = await run.engine.start(run.agent, input);
  const result = await process.await();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  assert.deepEqual(toolResults(run), [['c1', 'result of oaks']]);
  const tree = await run.engine.captureTree(process.id);
  const child = tree.processSnapshots().find((snapshot) => snapshot.deploymentRef.name === 'test.tools');
  assert.deepEqual(child?.capabilities.values(), ['tools.lookup']);
  await run.engine.close();
});
