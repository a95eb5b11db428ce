/**
 * What the interaction tests share: a scripted model (a ScriptedDispatcher answering `model.chat`
 * Effects with encodeModelReply payloads), a tool dispatcher whose calls a test can hold open and
 * release (gates, never sleeps), a ToolSet with a dispatched `lookup`, a failing `broken` and an
 * `ask` tool, and an Engine with an observation recorder.
 */
import { Budget } from '../../../src/kernel/budget.js';
import type { Definition, Dispatcher, ReplayPolicy } from '../../../src/kernel/definition.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import type { EffectRequest } from '../../../src/kernel/effect.js';
import { Engine } from '../../../src/kernel/engine.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { ObservationRecorder, ScriptedDispatcher, type ScriptedCall } from '../../../src/testing/scripted-dispatcher.js';
import { define, type InteractionConfig } from '../../../strategies/interaction/definition.js';
import { decodeModelRequest, encodeModelReply, type ChatMessage, type ModelReply, type ToolCall, type ToolSpec } from '../../../strategies/interaction/model-wire.js';
import { decodeToolRequest, toolErrorPayload, toolResultPayload } from '../../../strategies/interaction/tool-wire.js';
import { defineToolSet } from '../../../strategies/interaction/toolset.js';
import { Descriptor } from '../../../src/kernel/descriptor.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Schema } from '../../../src/kernel/schema.js';
import { Transition } from '../../../src/kernel/transition.js';
import { machineDefinition } from '../../../strategies/internal/machine.js';

export const call = (id: string, name: string, args: unknown = {}): ToolCall => ({ id, name, arguments: JSON.stringify(args) });

export function reply(finishReason: string, content: string | null, toolCalls: readonly ToolCall[] = []): ModelReply {
  return { message: { content, toolCalls }, finishReason, usage: { promptTokens: 10, completionTokens: 5 }, model: 'scripted' };
}

export const toolsReply = (...calls: ToolCall[]): ModelReply => reply('tool_calls', null, calls);
export const stopReply = (content: string): ModelReply => reply('stop', content);

/** A model that answers each call with the next reply (or scripted call) in order. */
export function scriptedModel(replies: readonly (ModelReply | ScriptedCall)[]): ScriptedDispatcher {
  return new ScriptedDispatcher({
    replayPolicy: 'same_identity',
    calls: replies.map((entry) => ('finishReason' in entry ? { settlement: { status: 'succeeded', payload: encodeModelReply(entry) } } : entry)),
  });
}

/** The messages of every model request, in order. */
export function modelRequests(model: ScriptedDispatcher): ChatMessage[][] {
  return model.requests().map((request) => {
    const decoded = decodeModelRequest(request.effect.payload);
    if (!decoded.ok) throw new Error(decoded.problem);
    return [...decoded.value.messages];
  });
}

/** A latch a test opens to release a held tool call. */
export function latch(): { readonly promise: Promise<void>; readonly open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

type ToolAnswer = { readonly content: string } | { readonly error: { readonly code: string; readonly message: string } } | { readonly unknown: true };

/**
 * The ToolSet's dispatcher: `lookup` answers `result of <q>`, `broken` fails definitely. A test may
 * hold a call (by its `q`) on a latch and see the order calls began and ended.
 */
export class ToolDispatcher implements Dispatcher {
  readonly began: string[] = [];
  readonly ended: string[] = [];
  readonly holds = new Map<string, Promise<void>>();
  readonly overrides = new Map<string, ToolAnswer>();
  #started = new Map<string, () => void>();

  constructor(private readonly policy: ReplayPolicy = 'never') {}

  /** Resolves once a call with `q` began. */
  began$(q: string): Promise<void> {
    if (this.began.includes(q)) return Promise.resolve();
    return new Promise((resolve) => this.#started.set(q, resolve));
  }

  async dispatch(request: EffectRequest): Promise<Settlement> {
    const decoded = decodeToolRequest(request.effect.payload);
    if (!decoded.ok) return Settlement.of('failed', toolErrorPayload('tool.request_invalid', decoded.problem));
    const q = String((decoded.arguments as { q?: unknown }).q ?? decoded.tool);
    this.began.push(q);
    this.#started.get(q)?.();
    await this.holds.get(q);
    this.ended.push(q);
    const answer = this.overrides.get(q) ?? (decoded.tool === 'broken' ? { error: { code: 'tool.broken', message: `broken on ${q}` } } : { content: `result of ${q}` });
    if ('unknown' in answer) throw new Error('the tool host lost the call');
    if ('error' in answer) return Settlement.of('failed', toolErrorPayload(answer.error.code, answer.error.message));
    return Settlement.of('succeeded', toolResultPayload(answer.content));
  }

  replayPolicy(): ReplayPolicy {
    return this.policy;
  }
}

const argsSchema = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'], additionalProperties: false } as const;

export const testTools = defineToolSet({
  name: 'test.tools',
  description: 'Tools for the interaction tests.',
  tools: [
    { kind: 'dispatch', name: 'lookup', description: 'Looks a query up.', parameters: argsSchema },
    { kind: 'dispatch', name: 'broken', description: 'Always fails.', parameters: argsSchema },
    {
      kind: 'ask',
      name: 'ask',
      description: 'Asks a person.',
      parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'], additionalProperties: false },
      answerSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false },
      content: (answer) => (answer as { answer: string }).answer,
    },
  ],
});

/**
 * A delegate's Definition: turns `{topic}` into `{summary, words}` in one Step. `untyped` makes it
 * complete with an output its own schema refuses (`words` as text), which the Engine must not accept.
 */
export function summarizer(output: 'typed' | 'untyped' = 'typed'): Definition {
  return machineDefinition<{ readonly topic: string }>({
    descriptor: Descriptor.create({
      name: `test.summarizer.${output}`,
      description: 'Summarises a topic.',
      inputSchema: Schema.of({ type: 'object', properties: { topic: { type: 'string', minLength: 1 } }, required: ['topic'], additionalProperties: false }),
      outputSchema: Schema.of({ type: 'object', properties: { summary: { type: 'string' }, words: { type: 'integer' } }, required: ['summary', 'words'], additionalProperties: false }),
    }),
    stateKind: 'test.summarizer.state',
    initial: (input) => ({ topic: input.decode<{ topic: string }>().topic }),
    check: (value) => value as { readonly topic: string },
    step: (state) => ({
      state,
      transition: Transition.complete(0, Payload.encode({ summary: `all about ${state.topic}`, words: output === 'typed' ? 3 : 'three' })),
    }),
  });
}

export function deployment(definition: Deployment['definition'], tag: string, dispatcher?: Dispatcher): Deployment {
  return Deployment.create({ definition, dispatcher, implementationDigest: Digest.of(`test:${tag}`), configurationDigest: Digest.of(`test:${tag}`) });
}

export const toolBudget = (): Budget => Budget.of({ steps: Quota.of(8), effects: Quota.of(4), signals: Quota.of(8) });

export interface Setup {
  readonly engine: Engine;
  readonly recorder: ObservationRecorder;
  readonly model: ScriptedDispatcher;
  readonly tools: ToolDispatcher;
  readonly agent: Deployment;
}

/** An interaction over the test ToolSet (plus `extraSpecs` the ToolSet does not have), on a memory Engine. */
export function setup(
  replies: readonly (ModelReply | ScriptedCall)[],
  options: Partial<Omit<InteractionConfig, 'tools'>> & {
    readonly extraSpecs?: readonly ToolSpec[];
    readonly tools?: ToolDispatcher;
    /** Wraps the agent's Definition (a test that watches its snapshots and restores). */
    readonly wrap?: (definition: Definition) => Definition;
  } = {},
): Setup {
  const tools = options.tools ?? new ToolDispatcher();
  const toolSet = deployment(testTools.definition, 'test.tools', tools);
  const { extraSpecs, tools: _tools, wrap, ...config } = options;
  const model = scriptedModel(replies);
  const definition = define({
    name: 'test.agent',
    description: 'A test ReAct agent.',
    system: 'You are a test agent.',
    maxTurns: 8,
    maxToolConcurrency: 2,
    maxContextBytes: 64 * 1024,
    ...config,
    tools: { deployment: toolSet, specs: [...testTools.specs, ...(extraSpecs ?? [])], budget: toolBudget() },
  });
  const recorder = new ObservationRecorder();
  const engine = new Engine({ committer: new MemoryTreeCommitter(), eventListeners: [recorder], deltaListeners: [recorder] });
  return { engine, recorder, model, tools, agent: deployment(wrap === undefined ? definition : wrap(definition), 'test.agent', model) };
}
