import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import type { Definition } from '../../src/kernel/definition.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { ChildSpec, ChildWaitCondition, ChildWaitSpec, Effect } from '../../src/kernel/effect.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { Failure, type FailureKind, normalizeDiagnostic } from '../../src/kernel/failure.js';
import { ChildKey, ProcessId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import type { Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { machineDefinition, objectOf } from '../internal/machine.js';
import { reduceContext } from './context.js';
import { contextPayload, encodeWithContext, extended, restoredContext } from './context-encoding.js';
import { decodeModelReply, modelChatEffect, type ChatMessage, type ModelReply, type ToolSpec } from './model-wire.js';
import { answeredChildren, isWaitAnswer, protocol, startResult, waitOpening, type AnsweredChild } from './protocol.js';
import { type Artifact, type Batch, type BatchCall, batchCalls, checkState, type InteractionState, interactionStateKind, phaseOf, runningCalls, type StateLimits } from './state.js';
import { maxPendingSteers, steerOf, steerSignalSchema } from './steer.js';

/**
 * The interaction strategy (kernel-contract §6.4): a ReAct loop. The Definition owns the working
 * context (chat messages) and a bounded model/tool state machine; a model dispatcher owns model I/O
 * (the `model.chat` Effect, model-wire.ts); tools are children of a separate ToolSet deployment.
 *
 * The loop: call the model. On finish reason `tool_calls` (and only then) each call becomes a child
 * Process of the tool's ToolSet (its own budget), started within `maxToolConcurrency` and refilled
 * whenever one drains; once every call has a result, the results join the context in the ORIGINAL
 * call order and the model is called again. `stop` without calls completes (the content, checked
 * against the output schema and the completion validator; a refusal is model-visible feedback,
 * bounded). `length` gets model-visible feedback and one more bounded attempt; calls under any
 * other finish reason fail the Process.
 *
 * Delegates ({@link DelegateBinding}) are called like tools but are Deployments of their own: the
 * arguments are the child's input (typed by its Definition's input schema, which the model is
 * offered as the call's parameters), and a completed child's output is a typed artifact (the Engine
 * checked it against that Definition's output schema). The model is shown the artifact as JSON; the
 * interaction keeps every artifact in its state (the context reducer never drops them) and hands
 * them to the completion validator. A delegate call shares the batch and its wait with the tool
 * calls, but not their window: a batch starts all its delegate calls at once and awaits them with the
 * rest, and its results return to the model once every call drained.
 *
 * Tool results: a child's output `{content}`; a failed child (an ordinary tool error) is
 * `{"error":{"code","message"}}`; a refused start is `{"error":{"code"}}`, its code only; an
 * unknown tool name `{"error":{"code":"interaction.tool.unknown",…}}`. A child whose outcome is not
 * definite — its subtree drained with Unknown effects (which stay for explicit settlement), or it
 * ended canceled/killed/timed out — is never turned into a result: the Process fails.
 *
 * Steering ({@link steerSignalSchema}) is applied at the next model call. The context reducer
 * keeps the context within `maxContextBytes` (context.ts).
 *
 * Failure codes (all `interaction.…`): `turns.exhausted`, `context_too_large`, `model.failed`,
 * `model.reply_invalid`, `model.finish_reason_invalid`, `model.truncated`, `completion.rejected`,
 * `validator.failed`, `tool.outcome_unknown`, `tool.not_completed`, `tool.output_invalid`,
 * `steer.too_many`, and the Step error `protocol.invalid`. A delegate call whose arguments are not
 * JSON gets the model-visible error `interaction.delegate.arguments_invalid` and starts nothing.
 */

/** One ToolSet deployment the interaction's tools bind to. */
export interface ToolBinding {
  readonly deployment: Deployment;
  /** The tools of that deployment the model may call (`defineToolSet(...).specs`). */
  readonly specs: readonly ToolSpec[];
  /** Granted to every tool call child (permanently, out of the interaction's budget). */
  readonly budget: Budget;
  readonly capabilities?: CapabilitySet;
}

/**
 * A Deployment the model may hand a sub-task to: offered as a function called `name`, whose
 * parameters are the input schema of the deployment's Definition; each call runs as a child Process
 * of it (its own budget) and its output is a typed artifact.
 */
export interface DelegateBinding {
  /** The function name the model calls (letters, digits, `_` and `-`; unique among tools and delegates). */
  readonly name: string;
  readonly description: string;
  readonly deployment: Deployment;
  /** Granted to every call's child (permanently, out of the interaction's budget). */
  readonly budget: Budget;
  readonly capabilities?: CapabilitySet;
}

type Json = unknown;

/** What a model may call a function (the OpenAI Chat Completions rule). */
const functionName = /^[A-Za-z0-9_-]{1,64}$/;

export interface InteractionConfig {
  readonly name: string;
  readonly description: string;
  /** Default `{"task": string}`. */
  readonly inputSchema?: Readonly<Record<string, unknown>> | boolean;
  /** The first user message from the input (default: its `task`, else its JSON). Pure. */
  readonly task?: (input: Json) => string;
  /** Default `{"type":"string"}`: the final text. Any other schema: the final text parsed as JSON. */
  readonly outputSchema?: Readonly<Record<string, unknown>> | boolean;
  /** The system prompt ('' for none). */
  readonly system: string;
  readonly tools: ToolBinding | readonly ToolBinding[];
  /** Deployments the model may delegate sub-tasks to (default none). */
  readonly delegates?: readonly DelegateBinding[];
  /** The most model calls a Process makes (1..1000). */
  readonly maxTurns: number;
  /** The most tool children running at once (1..64). */
  readonly maxToolConcurrency: number;
  /** The most bytes of messages (as JSON) a model call sends (1 KiB..32 MiB). */
  readonly maxContextBytes: number;
  /** `length` retries in one run (default 1). */
  readonly maxTruncations?: number;
  /** Completions refused before the Process fails (default 2). */
  readonly maxRejections?: number;
  /** Pure: a reason to refuse the final output (shown to the model), or undefined to accept it. */
  readonly completionValidator?: (output: Json, messages: readonly ChatMessage[], artifacts: readonly Artifact[]) => string | undefined;
}

function configError(message: string): never {
  throw new KernelError(ErrorCode.invalidDeployment, `invalid interaction: ${message}`);
}

function count(what: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) configError(`${what} must be an integer in ${min}..${max}`);
  return value;
}

type Next = { readonly state: InteractionState; readonly transition: Transition };

const failed = (state: InteractionState, consumed: number, kind: FailureKind, code: string, message: string): Next => ({
  state,
  transition: Transition.fail(consumed, Failure.create(kind, code, normalizeDiagnostic(message))),
});

const errorResult = (error: { code: string; message?: string }): string => JSON.stringify({ error });

export function define(config: InteractionConfig): Definition {
  if (typeof config !== 'object' || config === null) configError('expected a configuration');
  if (typeof config.system !== 'string') configError('system must be a string');
  const bindings = Array.isArray(config.tools) ? (config.tools as readonly ToolBinding[]) : [config.tools as ToolBinding];
  if (bindings.length === 0) configError('tools needs at least one ToolSet binding');
  const byName = new Map<string, ToolBinding>();
  for (const binding of bindings) {
    if (!(binding?.deployment instanceof Deployment) || !(binding.budget instanceof Budget) || !Array.isArray(binding.specs)) configError('a tool binding is {deployment, specs, budget}');
    if (binding.capabilities !== undefined && !(binding.capabilities instanceof CapabilitySet)) configError('a binding capabilities must be a CapabilitySet');
    for (const spec of binding.specs) {
      if (byName.has(spec.name)) configError(`two bindings offer a tool ${spec.name}`);
      byName.set(spec.name, binding);
    }
  }
  const delegates = new Map<string, DelegateBinding>();
  const delegateSpecs: ToolSpec[] = [];
  if (config.delegates !== undefined && !Array.isArray(config.delegates)) configError('delegates must be an array');
  for (const delegate of config.delegates ?? []) {
    if (!(delegate?.deployment instanceof Deployment) || !(delegate.budget instanceof Budget)) configError('a delegate is {name, description, deployment, budget}');
    if (typeof delegate.name !== 'string' || !functionName.test(delegate.name)) configError(`a delegate name must match ${functionName.source}, got ${JSON.stringify(delegate.name)}`);
    if (typeof delegate.description !== 'string') configError(`delegate ${delegate.name}: description must be a string`);
    if (delegate.capabilities !== undefined && !(delegate.capabilities instanceof CapabilitySet)) configError(`delegate ${delegate.name}: capabilities must be a CapabilitySet`);
    if (byName.has(delegate.name) || delegates.has(delegate.name)) configError(`two bindings offer a tool or delegate ${delegate.name}`);
    const parameters = JSON.parse(delegate.deployment.definition.descriptor().inputSchema.json()) as unknown;
    if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) configError(`delegate ${delegate.name}: its Definition's input schema must be an object schema`);
    delegates.set(delegate.name, delegate);
    delegateSpecs.push({ name: delegate.name, description: delegate.description, parameters: parameters as Record<string, unknown> });
  }
  const specs = [...bindings.flatMap((binding) => binding.specs), ...delegateSpecs];
  const limits: StateLimits = {
    system: config.system,
    delegates: new Set(delegates.keys()),
    maxTurns: count('maxTurns', config.maxTurns, 1, 1000),
    maxToolConcurrency: count('maxToolConcurrency', config.maxToolConcurrency, 1, 64),
    maxContextBytes: count('maxContextBytes', config.maxContextBytes, 1024, 32 * 1024 * 1024),
    maxTruncations: count('maxTruncations', config.maxTruncations ?? 1, 0, 16),
    maxRejections: count('maxRejections', config.maxRejections ?? 2, 0, 16),
  };
  const textOutput = config.outputSchema === undefined;
  const outputSchema = Schema.of(config.outputSchema ?? { type: 'string' });
  const descriptor = Descriptor.create({
    name: config.name,
    description: config.description,
    inputSchema: Schema.of(
      config.inputSchema ?? { type: 'object', properties: { task: { type: 'string', minLength: 1 } }, required: ['task'], additionalProperties: false },
    ),
    outputSchema,
    signalSchema: steerSignalSchema,
  });
  const bound = [...bindings.map((binding) => binding.deployment), ...[...delegates.values()].map((delegate) => delegate.deployment)];
  const children = [...new Map(bound.map((deployment) => [deployment.ref.toString(), deployment])).values()];
  // What every model call sends besides the context, encoded once.
  const toolsPayload = Payload.encode(specs);
  const systemPayload = config.system === '' ? undefined : Payload.encode([{ role: 'system', content: config.system }]);

  /** The model boundary: pending steers join the context, the reducer bounds it, the model is called. */
  const callModel = (state: InteractionState, consumed: number): Next => {
    if (state.turns >= limits.maxTurns) return failed(state, consumed, 'execution', 'interaction.turns.exhausted', `the interaction may call the model at most ${limits.maxTurns} times`);
    const steered = extended(state.messages, state.steers.map((content): ChatMessage => ({ role: 'user', content })));
    const reduced = reduceContext(config.system, steered, limits.maxContextBytes);
    if (!reduced.ok) {
      return failed(state, consumed, 'execution', 'interaction.context_too_large', `the context is ${reduced.bytes} bytes with every tool result dropped, more than maxContextBytes ${limits.maxContextBytes}`);
    }
    const { batch: _batch, ...rest } = state;
    const context = contextPayload(reduced.messages);
    const sent = systemPayload === undefined ? context : Payload.concatArrays([systemPayload, context]);
    return {
      state: { ...rest, messages: reduced.messages, steers: [], model: true, turns: state.turns + 1 },
      transition: Transition.continue(consumed, [modelChatEffect({ messages: sent, tools: toolsPayload })]),
    };
  };

  /** The feedback the model sees before another attempt; the attempt counter is the caller's. */
  const retry = (state: InteractionState, consumed: number, content: string | null, feedback: string): Next => {
    const added: ChatMessage[] = content !== null && content !== '' ? [{ role: 'assistant', content }] : [];
    added.push({ role: 'user', content: feedback });
    return callModel({ ...state, messages: extended(state.messages, added) }, consumed);
  };

  const complete = (state: InteractionState, after: InteractionState, content: string, consumed: number): Next => {
    const reject = (reason: string): Next => {
      if (after.rejections >= limits.maxRejections) return failed(state, consumed, 'execution', 'interaction.completion.rejected', `the final answer was refused ${after.rejections + 1} times, last: ${reason}`);
      return retry({ ...after, rejections: after.rejections + 1 }, consumed, content, `Your final answer was not accepted: ${reason} Answer again.`);
    };
    let output: Json = content;
    if (!textOutput) {
      try {
        output = JSON.parse(content) as Json;
      } catch {
        return reject('it must be JSON that satisfies the output schema.');
      }
    }
    const payload = Payload.encode(output);
    if (!outputSchema.accepts(payload)) return reject('it does not satisfy the output schema.');
    if (config.completionValidator !== undefined) {
      let reason: string | undefined;
      try {
        reason = config.completionValidator(payload.decode<Json>(), after.messages, after.artifacts ?? []);
      } catch (error) {
        return failed(state, consumed, 'execution', 'interaction.validator.failed', `the completion validator failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (typeof reason === 'string') return reject(reason);
    }
    return { state, transition: Transition.complete(consumed, payload) };
  };

  const onReply = (state: InteractionState, settlement: Signal, consumed: number): Next => {
    const { model: _model, ...after } = state;
    if (settlement.status !== 'succeeded') {
      const error = objectOf(settlement.payload)?.error as { code?: unknown; message?: unknown; status?: unknown } | undefined;
      const status = typeof error?.status === 'number' ? ` (status ${error.status})` : '';
      return failed(state, consumed, 'external', 'interaction.model.failed', `the model call failed${status}: ${String(error?.code ?? 'error')}: ${String(error?.message ?? 'no diagnostic')}`);
    }
    const decoded = decodeModelReply(settlement.payload);
    if (!decoded.ok) return failed(state, consumed, 'contract', 'interaction.model.reply_invalid', `the model reply is invalid: ${decoded.problem}`);
    const reply: ModelReply = decoded.value;
    const calls = reply.message.toolCalls;
    if (reply.finishReason === 'length') {
      if (after.truncations >= limits.maxTruncations) return failed(state, consumed, 'execution', 'interaction.model.truncated', `the model reply was cut off at its token limit ${after.truncations + 1} times`);
      const lost = calls.length > 0 ? ` and its ${calls.length} tool call(s) were not run` : '';
      return retry({ ...after, truncations: after.truncations + 1 }, consumed, reply.message.content, `Your previous reply was cut off at the output token limit (finish reason "length")${lost}. Reply again, more briefly.`);
    }
    if (calls.length > 0) {
      if (reply.finishReason !== 'tool_calls') return failed(state, consumed, 'contract', 'interaction.model.finish_reason_invalid', `the model called tools with finish reason ${reply.finishReason}; only tool_calls runs tools`);
      if (new Set(calls.map((call) => call.id)).size !== calls.length) return failed(state, consumed, 'contract', 'interaction.model.reply_invalid', 'the model reply calls two tools with one id');
      const assistant: ChatMessage = { role: 'assistant', content: reply.message.content, toolCalls: calls };
      return advanceBatch({ ...after, messages: extended(after.messages, [assistant]), batch: { calls: calls.map(() => ({})) } }, consumed);
    }
    if (reply.finishReason !== 'stop') return failed(state, consumed, 'contract', 'interaction.model.finish_reason_invalid', `the model stopped with finish reason ${reply.finishReason}`);
    return complete(state, after, reply.message.content ?? '', consumed);
  };

  /** A child of `binding`'s deployment under `key`, with the binding's budget and capabilities. */
  const childStart = (key: string, binding: ToolBinding | DelegateBinding, input: Payload): Effect =>
    Effect.startChild(
      ChildSpec.create({
        key: ChildKey.parse(key),
        deploymentRef: binding.deployment.ref,
        input,
        budget: binding.budget,
        capabilities: binding.capabilities ?? CapabilitySet.empty,
      }),
    );

  const startEffect = (state: InteractionState, index: number, binding: ToolBinding, name: string, args: string): Effect =>
    childStart(`tool.${state.turns}.${index}`, binding, Payload.encode({ tool: name, arguments: args }));

  /** A delegate call's child, or (arguments that are not I-JSON) the model-visible error instead. */
  const delegateStart = (state: InteractionState, index: number, delegate: DelegateBinding, args: string): Effect | { readonly result: string } => {
    let input: Payload;
    try {
      // Parsed as a payload, not through JS values: number literals reach the child exactly as the model wrote them.
      input = Payload.parse(args);
    } catch {
      return { result: errorResult({ code: 'interaction.delegate.arguments_invalid', message: `the arguments of ${delegate.name} are not valid JSON` }) };
    }
    return childStart(`delegate.${state.turns}.${index}`, delegate, input);
  };

  /**
   * Starts every delegate call of a new batch at once, fills the tools' concurrency window in call
   * order, else waits for running children, else returns the results to the model.
   */
  const advanceBatch = (state: InteractionState, consumed: number): Next => {
    const batch = state.batch as Batch;
    const toolCalls = batchCalls(state.messages) ?? protocol('a batch without tool calls');
    const entries: BatchCall[] = [...batch.calls];
    let free = limits.maxToolConcurrency - runningCalls(batch, toolCalls, limits.delegates);
    let windowFull = false;
    const starts: Effect[] = [];
    for (const [index, call] of toolCalls.entries()) {
      if (Object.keys(entries[index] as BatchCall).length > 0) continue;
      const delegate = delegates.get(call.name);
      if (delegate !== undefined) {
        const start = delegateStart(state, index, delegate, call.arguments);
        entries[index] = start instanceof Effect ? { starting: true } : start;
        if (start instanceof Effect) starts.push(start);
        continue;
      }
      if (windowFull) continue;
      const binding = byName.get(call.name);
      if (binding === undefined) {
        entries[index] = { result: errorResult({ code: 'interaction.tool.unknown', message: `there is no tool called ${call.name}` }) };
        continue;
      }
      if (free === 0) {
        windowFull = true;
        continue;
      }
      starts.push(startEffect(state, index, binding, call.name, call.arguments));
      entries[index] = { starting: true };
      free -= 1;
    }
    if (starts.length > 0) return { state: { ...state, batch: { calls: entries } }, transition: Transition.continue(consumed, starts) };
    const running = entries.flatMap((entry) => (entry.child !== undefined && entry.result === undefined ? [ProcessId.parse(entry.child)] : []));
    if (running.length > 0) {
      const waits = state.waits + 1;
      const wait = Effect.waitChildren(ChildWaitSpec.create({ key: WaitKey.parse(`interaction.tools.${waits}`), children: running, boundary: 'subtree_drained', condition: ChildWaitCondition.any() }));
      return { state: { ...state, waits, batch: { calls: entries, opening: true } }, transition: Transition.continue(consumed, [wait]) };
    }
    const results = toolCalls.map((call, index): ChatMessage => ({ role: 'tool', toolCallId: call.id, content: (entries[index] as BatchCall).result as string }));
    return callModel({ ...state, messages: extended(state.messages, results) }, consumed);
  };

  /**
   * What a drained child means: a result (a completed delegate's also an artifact, its output as
   * JSON), or (not definite) the Process's failure.
   */
  const resultOf = (child: AnsweredChild, call: string, delegate: boolean): { readonly result: string; readonly artifact?: Json } | { readonly failure: [FailureKind, string, string] } => {
    if (child.unresolved > 0) {
      return { failure: ['external', 'interaction.tool.outcome_unknown', `tool call ${call}: child ${child.processId} drained with ${child.unresolved} unresolved effect(s); its result is not known, so the model is not shown one`] };
    }
    if (child.status === 'completed' && delegate) {
      const output = Payload.encode(child.output ?? null);
      return { result: output.json(), artifact: output.decode<Json>() };
    }
    if (child.status === 'completed') {
      const content = objectOf(Payload.encode(child.output ?? null))?.content;
      if (typeof content !== 'string') return { failure: ['contract', 'interaction.tool.output_invalid', `tool call ${call}: child ${child.processId} completed without a content string`] };
      return { result: content };
    }
    if (child.status === 'failed' && child.failure !== undefined) return { result: errorResult({ code: child.failure.code, message: child.failure.message }) };
    return { failure: ['external', 'interaction.tool.not_completed', `tool call ${call}: child ${child.processId} ended ${child.status} without a tool result`] };
  };

  const onAnswer = (state: InteractionState, answer: Signal, consumed: number): Next => {
    const batch = state.batch as Batch;
    const toolCalls = batchCalls(state.messages) ?? protocol('a batch without tool calls');
    const entries: BatchCall[] = [...batch.calls];
    const artifacts: Artifact[] = [...(state.artifacts ?? [])];
    for (const child of answeredChildren(answer)) {
      const index = entries.findIndex((entry) => entry.child === child.processId && entry.result === undefined);
      if (index < 0) protocol(`the answer reports ${child.processId}, which the batch did not await`);
      const toolCall = toolCalls[index] as { id: string; name: string };
      const outcome = resultOf(child, toolCall.id, delegates.has(toolCall.name));
      if ('failure' in outcome) return failed(state, consumed, ...outcome.failure);
      entries[index] = { child: child.processId, result: outcome.result };
      if ('artifact' in outcome) artifacts.push({ delegate: toolCall.name, turn: state.turns, call: toolCall.id, output: outcome.artifact });
    }
    const withArtifacts = artifacts.length === 0 ? state : { ...state, artifacts };
    return advanceBatch({ ...withArtifacts, batch: { calls: entries } }, consumed);
  };

  /** Steers anywhere in the window join the state; the rest are the framework signals the phase expects. */
  const split = (state: InteractionState, signals: readonly Signal[]): { readonly state: InteractionState; readonly framework: Signal[] } | { readonly overflow: true } => {
    const steers = [...state.steers];
    const framework: Signal[] = [];
    for (const signal of signals) {
      const steer = steerOf(signal);
      if (steer === undefined) framework.push(signal);
      else steers.push(steer);
    }
    if (steers.length > maxPendingSteers) return { overflow: true };
    return { state: steers.length === state.steers.length ? state : { ...state, steers }, framework };
  };

  const definition = machineDefinition<InteractionState>({
    descriptor,
    stateKind: interactionStateKind,
    childDeployments: children,
    initial(input) {
      const value = input.decode<Json>();
      const fromTask = objectOf(input)?.task;
      const task = config.task !== undefined ? config.task(value) : typeof fromTask === 'string' ? fromTask : input.json();
      if (typeof task !== 'string' || task.trim() === '') configError('the task of an input must be non-empty text');
      return { messages: [{ role: 'user', content: task }], turns: 0, truncations: 0, rejections: 0, steers: [], waits: 0 };
    },
    check: (value) => checkState(value, limits),
    checkDecoded(value, payload) {
      const state = checkState(value, limits);
      restoredContext(payload, state.messages);
      return state;
    },
    encode: encodeWithContext,
    step(incoming, signals): Next {
      // A failing Step keeps the state it began with: whatever it built on the way is not a state.
      const next = advance(incoming, signals);
      return next.transition.kind === 'fail' ? { state: incoming, transition: next.transition } : next;
    },
  });
  return definition;

  function advance(incoming: InteractionState, signals: readonly Signal[]): Next {
    const consumed = signals.length;
    const window = split(incoming, signals);
    if ('overflow' in window) return failed(incoming, consumed, 'execution', 'interaction.steer.too_many', `more than ${maxPendingSteers} steer messages are waiting for the next model call`);
    const { state, framework } = window;
    const [first, second, ...more] = framework;
    switch (phaseOf(state)) {
      case 'ready':
        if (first !== undefined) protocol(`the interaction received ${first.id.toString()} before it called the model`);
        return callModel(state, consumed);
      case 'model':
        if (first?.status === undefined || second !== undefined) protocol('the window after a model call holds exactly its settlement');
        return onReply(state, first, consumed);
      case 'starting': {
        const batch = state.batch as Batch;
        const pending = batch.calls.flatMap((call, index) => (call.starting === true ? [index] : []));
        if (framework.length !== pending.length) protocol(`expected ${pending.length} start results, got ${framework.length} framework signals`);
        const entries: BatchCall[] = [...batch.calls];
        pending.forEach((index, position) => {
          const started = startResult(framework[position]);
          entries[index] = 'processId' in started ? { child: started.processId } : { result: errorResult({ code: started.code }) };
        });
        return advanceBatch({ ...state, batch: { calls: entries } }, consumed);
      }
      case 'opening': {
        const waitId = waitOpening(first);
        const opened: InteractionState = { ...state, batch: { calls: (state.batch as Batch).calls, waitId: waitId.toString() } };
        if (more.length > 0 || (second !== undefined && !isWaitAnswer(second, waitId))) protocol('the window after a child wait holds its opening and at most its answer');
        return second === undefined ? { state: opened, transition: Transition.wait(consumed, waitId) } : onAnswer(opened, second, consumed);
      }
      case 'waiting': {
        const waitId = WaitId.parse((state.batch as Batch).waitId);
        if (second !== undefined || (first !== undefined && !isWaitAnswer(first, waitId))) protocol(`the window of a waiting batch holds at most the answer to ${waitId.toString()}`);
        return first === undefined ? { state, transition: Transition.wait(consumed, waitId) } : onAnswer(state, first, consumed);
      }
    }
  }
}
