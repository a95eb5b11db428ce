import { ProcessId, WaitId } from '../../src/kernel/identity.js';
import { invalidState, stateInteger, stateRecord } from '../internal/machine.js';
import { contextFits } from './context.js';
import { chatMessages, type ChatMessage, type ToolCall } from './model-wire.js';
import { maxSteerBytes, maxPendingSteers } from './steer.js';

/**
 * The interaction's recoverable state: the working context and where the model/tool loop stands.
 *
 * `{"messages","turns","truncations","rejections","steers","waits","model"?,"batch"?,"artifacts"?}`
 *
 * - `messages`: the working context in model-wire form, without the system prompt (the
 *   Definition's); the first is the task (a user message). Tool results appear only once the
 *   whole batch is done, in the original call order.
 * - `turns`: model calls declared so far (≤ maxTurns); `truncations`: `length` retries used;
 *   `rejections`: completions refused so far (invalid output or the completion validator).
 * - `steers`: steer messages received and not yet applied (they join at the next model call).
 * - `waits`: child waits opened so far (each has a fresh WaitKey).
 * - `model`: true while a model call is in flight.
 * - `batch`: the tool calls of the last assistant message, one entry per call in call order:
 *   `{"starting"?}` while its start is declared, `{"child"}` once started, `{"result"}` for a call
 *   that ended without a child (unknown tool, refused start), `{"child","result"}` once its child
 *   drained; plus the batch's child wait: `opening` (declared) or `waitId` (opened).
 * - `artifacts` (absent while there is none): every completed delegate call's output, in the order
 *   they drained, with the delegate's name, the model turn and the call id that asked for it.
 *
 * The phase is derived ({@link phaseOf}), never stored.
 */
export const interactionStateKind = 'interaction.state';

export interface BatchCall {
  readonly starting?: true;
  readonly child?: string;
  readonly result?: string;
}

export interface Batch {
  readonly calls: readonly BatchCall[];
  readonly opening?: true;
  readonly waitId?: string;
}

/** A completed delegate call's typed output (its Definition's output schema held at completion). */
export interface Artifact {
  readonly delegate: string;
  /** The model turn whose reply made the call. */
  readonly turn: number;
  readonly call: string;
  readonly output: unknown;
}

export interface InteractionState {
  readonly messages: readonly ChatMessage[];
  readonly turns: number;
  readonly truncations: number;
  readonly rejections: number;
  readonly steers: readonly string[];
  readonly waits: number;
  readonly model?: true;
  readonly batch?: Batch;
  readonly artifacts?: readonly Artifact[];
}

export type Phase = 'ready' | 'model' | 'starting' | 'opening' | 'waiting';

export function phaseOf(state: InteractionState): Phase {
  if (state.model === true) return 'model';
  const batch = state.batch;
  if (batch === undefined) return 'ready';
  if (batch.calls.some((call) => call.starting === true)) return 'starting';
  return batch.waitId === undefined ? 'opening' : 'waiting';
}

/** Tool calls (not delegate calls: those run outside the window) whose child runs (started, not drained). */
export function runningCalls(batch: Batch, calls: readonly ToolCall[], delegates: ReadonlySet<string>): number {
  return batch.calls.filter((call, index) => call.child !== undefined && call.result === undefined && !delegates.has((calls[index] as ToolCall).name)).length;
}

/** The bounds a state is checked against (the Definition's configuration). */
export interface StateLimits {
  readonly system: string;
  /** The delegates' names: an artifact names one of them. */
  readonly delegates: ReadonlySet<string>;
  readonly maxTurns: number;
  readonly maxToolConcurrency: number;
  readonly maxContextBytes: number;
  readonly maxTruncations: number;
  readonly maxRejections: number;
}

const kind = interactionStateKind;

/** The assistant message whose calls a batch runs (the last one), if the context ends with one. */
export function batchCalls(messages: readonly ChatMessage[]): readonly ToolCall[] | undefined {
  const last = messages[messages.length - 1];
  return last?.role === 'assistant' && last.toolCalls !== undefined ? last.toolCalls : undefined;
}

function checkMessages(value: unknown): ChatMessage[] {
  const decoded = chatMessages(value);
  if (!decoded.ok) throw invalidState(kind, decoded.problem);
  const messages = decoded.value;
  if (messages[0]?.role !== 'user') throw invalidState(kind, 'the first message is the task (a user message)');
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index] as ChatMessage;
    if (message.role === 'system') throw invalidState(kind, `messages[${index}] is a system message (the system prompt is the Definition's)`);
    if (message.role === 'tool') throw invalidState(kind, `messages[${index}] is a tool result without the call before it`);
    const calls = message.toolCalls;
    if (calls === undefined) continue;
    if (calls.length === 0) throw invalidState(kind, `messages[${index}] has an empty toolCalls`);
    if (new Set(calls.map((call) => call.id)).size !== calls.length) throw invalidState(kind, `messages[${index}] calls two tools with one id`);
    if (index === messages.length - 1) break;
    // A finished batch: exactly its results, in call order.
    calls.forEach((call, position) => {
      const result = messages[index + 1 + position];
      if (result?.role !== 'tool' || result.toolCallId !== call.id) throw invalidState(kind, `messages[${index + 1 + position}] is not the result of call ${call.id}`);
    });
    index += calls.length;
  }
  return messages;
}

function checkBatch(value: unknown, calls: readonly ToolCall[], limits: StateLimits): Batch {
  const record = stateRecord(kind, value, ['calls'], ['opening', 'waitId']);
  if (!Array.isArray(record.calls) || record.calls.length !== calls.length) throw invalidState(kind, `the batch holds one entry per call of the last assistant message (${calls.length})`);
  const children = new Set<string>();
  let untouchedSeen = false;
  const entries = record.calls.map((entry: unknown, index) => {
    const delegate = limits.delegates.has((calls[index] as ToolCall).name);
    const call = stateRecord(kind, entry, [], ['starting', 'child', 'result']);
    if (call.starting !== undefined && (call.starting !== true || call.child !== undefined || call.result !== undefined)) throw invalidState(kind, `batch call ${index}: a starting call has no child and no result yet`);
    if (call.child !== undefined) {
      if (typeof call.child !== 'string') throw invalidState(kind, `batch call ${index}: child must be a process id`);
      try {
        ProcessId.parse(call.child);
      } catch {
        throw invalidState(kind, `batch call ${index}: child is not a process id`);
      }
      if (children.has(call.child)) throw invalidState(kind, `batch call ${index}: child ${call.child} runs two calls`);
      children.add(call.child);
    }
    if (call.result !== undefined && typeof call.result !== 'string') throw invalidState(kind, `batch call ${index}: result must be a string`);
    const touched = Object.keys(call).length > 0;
    // A batch starts its delegate calls at once; the other calls begin in call order, as the window allows.
    if (delegate && !touched) throw invalidState(kind, `batch call ${index} is a delegate call the batch has not started`);
    if (!delegate && touched && untouchedSeen) throw invalidState(kind, `batch call ${index} began before an earlier call: calls begin in call order`);
    if (!delegate && !touched) untouchedSeen = true;
    return call as BatchCall;
  });
  const batch = record as unknown as Batch;
  const windowed = entries.filter((_call, index) => !limits.delegates.has((calls[index] as ToolCall).name));
  const starting = entries.filter((call) => call.starting === true).length;
  const windowedStarting = windowed.filter((call) => call.starting === true).length;
  const running = runningCalls({ calls: entries }, calls, limits.delegates);
  if (windowedStarting + running > limits.maxToolConcurrency) throw invalidState(kind, `${windowedStarting + running} tool calls run at once, more than maxToolConcurrency ${limits.maxToolConcurrency}`);
  if (record.opening !== undefined && record.opening !== true) throw invalidState(kind, 'opening must be true when present');
  if (record.waitId !== undefined) {
    try {
      WaitId.parse(record.waitId as string);
    } catch {
      throw invalidState(kind, 'batch.waitId is not a wait id');
    }
  }
  if (record.opening === true && record.waitId !== undefined) throw invalidState(kind, 'a batch wait is either opening or open');
  if (starting > 0 && (record.opening === true || record.waitId !== undefined)) throw invalidState(kind, 'a batch waits for its children only after their starts settled');
  if (starting === 0 && record.opening === undefined && record.waitId === undefined) throw invalidState(kind, 'a batch is starting children or waiting for them');
  if (starting === 0 && entries.every((call) => call.child === undefined || call.result !== undefined)) throw invalidState(kind, 'a batch waits for running children only');
  return batch;
}

function checkArtifacts(value: unknown, turns: number, limits: StateLimits): void {
  if (!Array.isArray(value) || value.length === 0) throw invalidState(kind, 'artifacts, when present, is a non-empty array');
  value.forEach((entry: unknown, index) => {
    const artifact = stateRecord(kind, entry, ['delegate', 'turn', 'call', 'output'], []);
    if (typeof artifact.delegate !== 'string' || !limits.delegates.has(artifact.delegate)) throw invalidState(kind, `artifacts[${index}] names no delegate of this interaction`);
    const turn = stateInteger(kind, artifact, 'turn', 1);
    if (turn > turns) throw invalidState(kind, `artifacts[${index}] comes from turn ${turn}, after the last turn ${turns}`);
    if (index > 0 && turn < ((value[index - 1] as { turn: number }).turn)) throw invalidState(kind, `artifacts[${index}] is out of turn order`);
    if (typeof artifact.call !== 'string' || artifact.call === '') throw invalidState(kind, `artifacts[${index}].call must be a call id`);
  });
}

function checkSteers(value: unknown): string[] {
  if (!Array.isArray(value) || value.length > maxPendingSteers) throw invalidState(kind, `steers must be an array of at most ${maxPendingSteers}`);
  return value.map((steer: unknown, index) => {
    if (typeof steer !== 'string' || steer.trim() === '' || new TextEncoder().encode(steer).length > maxSteerBytes) throw invalidState(kind, `steers[${index}] is not a steer message`);
    return steer;
  });
}

/**
 * Decodes and validates a state: its shape, the context's structure (task first, results only
 * after their calls, in order), the counters against their bounds, the batch against the last
 * assistant message and the concurrency bound, and a model call's context against
 * maxContextBytes. Anything else is `invalid_execution_state`: refused, never repaired.
 */
export function checkState(value: unknown, limits: StateLimits): InteractionState {
  const record = stateRecord(kind, value, ['messages', 'turns', 'truncations', 'rejections', 'steers', 'waits'], ['model', 'batch', 'artifacts']);
  const messages = checkMessages(record.messages);
  const turns = stateInteger(kind, record, 'turns', 0);
  if (turns > limits.maxTurns) throw invalidState(kind, `turns ${turns} is beyond maxTurns ${limits.maxTurns}`);
  if (stateInteger(kind, record, 'truncations', 0) > limits.maxTruncations) throw invalidState(kind, `truncations is beyond its bound ${limits.maxTruncations}`);
  if (stateInteger(kind, record, 'rejections', 0) > limits.maxRejections) throw invalidState(kind, `rejections is beyond its bound ${limits.maxRejections}`);
  stateInteger(kind, record, 'waits', 0);
  checkSteers(record.steers);
  if (record.artifacts !== undefined) checkArtifacts(record.artifacts, turns, limits);
  if (record.model !== undefined && record.model !== true) throw invalidState(kind, 'model must be true when present');
  const calls = batchCalls(messages);
  if (record.model === true) {
    if (record.batch !== undefined) throw invalidState(kind, 'a model call and a tool batch cannot run at once');
    if (calls !== undefined) throw invalidState(kind, 'a model call is in flight while tool calls have no results');
    if (turns === 0) throw invalidState(kind, 'a model call is in flight but no turn was counted');
    if (!contextFits(limits.system, messages, limits.maxContextBytes)) throw invalidState(kind, `the context sent exceeds maxContextBytes ${limits.maxContextBytes}`);
  } else if (calls !== undefined) {
    if (record.batch === undefined) throw invalidState(kind, 'the last assistant message called tools but no batch runs them');
    checkBatch(record.batch, calls, limits);
  } else if (record.batch !== undefined) {
    throw invalidState(kind, 'a batch runs without an assistant message that called tools');
  } else if (turns > 0 || messages.length !== 1) {
    throw invalidState(kind, 'between model calls the loop is always calling the model or running tools');
  }
  return record as unknown as InteractionState;
}
