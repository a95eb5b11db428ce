import { ClassifiedError } from '../../src/kernel/classified-error.js';
import type { Definition } from '../../src/kernel/definition.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { Effect } from '../../src/kernel/effect.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { Failure, normalizeDiagnostic } from '../../src/kernel/failure.js';
import { WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import type { Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { invalidState, isWaitOpening, machineDefinition, objectOf, stateRecord, statePhase } from '../internal/machine.js';
import type { ToolSpec } from './model-wire.js';
import { toolCallEffect, toolOutputSchema, type ToolInput } from './tool-wire.js';

/**
 * A ToolSet: the Deployment an interaction's tools bind to. Each Process of it runs ONE tool call
 * (input {@link ToolInput}, output `{"content"}`), so every call has its own budget, its own
 * identity in the tree, and its own Effect:
 *
 * - a `dispatch` tool runs as one dispatcher Effect (`tool.call`, see tool-wire.ts) served by the
 *   deployment's dispatcher, whose replay policy decides what a crash may repeat;
 * - an `ask` tool asks a person: it opens a wait under `toolset.ask.<tool>` whose answer schema the
 *   descriptor declares, so it is listed in `/v1/waits` with that schema and answered by this
 *   child's process id and the wait id (the ordinary signals path).
 *
 * Malformed arguments, an unknown tool and a failed settlement end the child `failed`: ordinary tool
 * errors, which the interaction shows the model. An Unknown dispatch stays Unknown (the kernel's
 * explicit settlement), never a result.
 *
 * Phases (stored): `ready` → `calling` (dispatch) or `opening` → `waiting` (ask).
 */
export interface DispatchToolConfig {
  readonly kind: 'dispatch';
  readonly name: string;
  readonly description: string;
  /** The JSON Schema of the arguments (an object schema). */
  readonly parameters: Readonly<Record<string, unknown>>;
}

export interface AskToolConfig {
  readonly kind: 'ask';
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
  /** What the person's answer must satisfy (declared on the wait, enforced at admission). */
  readonly answerSchema: Readonly<Record<string, unknown>>;
  /** The wait's prompt from the arguments (default: their `question` member, else their JSON). Pure. */
  readonly prompt?: (args: unknown) => string;
  /** The tool result from the answer (default: the answer's JSON). Pure. */
  readonly content?: (answer: unknown) => string;
}

export type ToolConfig = DispatchToolConfig | AskToolConfig;

export interface ToolSetConfig {
  /** The Definition name (a qualified name). */
  readonly name: string;
  readonly description: string;
  readonly tools: readonly ToolConfig[];
}

export interface ToolSet {
  readonly definition: Definition;
  /** What the model may call, in declaration order (give them to `interaction.define`). */
  readonly specs: readonly ToolSpec[];
}

/** OpenAI's tool-name rule, so every name a ToolSet declares can be offered to a model. */
const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

export const toolSetProtocolInvalid = new ClassifiedError('contract', 'toolset.protocol.invalid', 'the window breaks the ToolSet protocol');

function configError(message: string): never {
  throw new KernelError(ErrorCode.invalidDescriptor, `invalid tool set: ${message}`);
}

function protocol(problem: string): never {
  throw toolSetProtocolInvalid.wrap(problem);
}

export function askWaitKey(tool: string): string {
  return `toolset.ask.${tool}`;
}

type Phase = 'ready' | 'calling' | 'opening' | 'waiting';
const phases: readonly Phase[] = ['ready', 'calling', 'opening', 'waiting'];

interface ToolSetState {
  readonly phase: Phase;
  readonly tool: string;
  readonly arguments: string;
  readonly waitId?: string;
}

function defaultPrompt(args: unknown): string {
  const question = objectOf(Payload.encode(args))?.question;
  return typeof question === 'string' && question.trim() !== '' ? question.trim() : Payload.encode(args).json();
}

export function defineToolSet(config: ToolSetConfig): ToolSet {
  if (typeof config !== 'object' || config === null || !Array.isArray(config.tools) || config.tools.length === 0) configError('expected {name, description, tools: [at least one]}');
  const tools = new Map<string, { readonly config: ToolConfig; readonly parameters: Schema; readonly answer?: Schema }>();
  for (const tool of config.tools) {
    if (tool?.kind !== 'dispatch' && tool?.kind !== 'ask') configError('a tool is {kind: "dispatch" | "ask", …}');
    if (typeof tool.name !== 'string' || !toolNamePattern.test(tool.name)) configError(`tool name ${JSON.stringify(tool.name)} must match ${toolNamePattern}`);
    if (tools.has(tool.name)) configError(`two tools are called ${tool.name}`);
    if (typeof tool.description !== 'string') configError(`tool ${tool.name} needs a description`);
    const parameters = Schema.of(tool.parameters);
    if (tool.parameters?.type !== 'object') configError(`the parameters of tool ${tool.name} must be an object schema`);
    tools.set(tool.name, { config: tool, parameters, ...(tool.kind === 'ask' ? { answer: Schema.of(tool.answerSchema) } : {}) });
  }
  const names = [...tools.keys()];
  const descriptor = Descriptor.create({
    name: config.name,
    description: config.description,
    inputSchema: Schema.of({ type: 'object', properties: { tool: { enum: names }, arguments: { type: 'string' } }, required: ['tool', 'arguments'], additionalProperties: false }),
    outputSchema: Schema.of(toolOutputSchema),
    waits: [...tools.values()].flatMap((entry) =>
      entry.config.kind === 'ask' ? [{ key: WaitKey.parse(askWaitKey(entry.config.name)), description: `The answer to ${entry.config.name}: ${entry.config.description}`.slice(0, 4000).trim(), answerSchema: entry.answer as Schema }] : [],
    ),
  });
  const kind = `${config.name}.state`;
  const fail = (state: ToolSetState, consumed: number, code: string, message: string) => ({
    state,
    transition: Transition.fail(consumed, Failure.create('execution', code, normalizeDiagnostic(message))),
  });

  const answered = (state: ToolSetState, signals: readonly Signal[], from: number) => {
    const waitId = WaitId.parse(state.waitId);
    const answer = signals[from];
    if (answer === undefined) return { state, transition: Transition.wait(from, waitId) };
    if (answer.engineOwned || !waitId.equals(answer.waitId)) protocol(`expected the answer to ${waitId.toString()}, got ${answer.id.toString()}`);
    const tool = tools.get(state.tool)?.config as AskToolConfig;
    const value = answer.payload.decode<unknown>();
    let content: string;
    try {
      content = tool.content === undefined ? answer.payload.json() : tool.content(value);
    } catch (error) {
      return fail(state, from + 1, 'toolset.content.failed', `the content of ${state.tool}'s answer could not be made: ${error instanceof Error ? error.message : String(error)}`);
    }
    return { state, transition: Transition.complete(from + 1, Payload.encode({ content })) };
  };

  const definition = machineDefinition<ToolSetState>({
    descriptor,
    stateKind: kind,
    initial(input) {
      const { tool, arguments: args } = input.decode<ToolInput>();
      return { phase: 'ready', tool, arguments: args };
    },
    check(value) {
      const record = stateRecord(kind, value, ['phase', 'tool', 'arguments'], ['waitId']);
      const phase = statePhase(kind, record, phases);
      const tool = typeof record.tool === 'string' ? tools.get(record.tool) : undefined;
      if (tool === undefined) throw invalidState(kind, 'tool is not a tool of this set');
      if (typeof record.arguments !== 'string') throw invalidState(kind, 'arguments must be a string');
      if ((phase === 'opening' || phase === 'waiting') && tool.config.kind !== 'ask') throw invalidState(kind, `${record.tool} asks no one`);
      if (phase === 'calling' && tool.config.kind !== 'dispatch') throw invalidState(kind, `${record.tool} is not dispatched`);
      if ((phase === 'waiting') !== (record.waitId !== undefined)) throw invalidState(kind, 'waitId is present exactly while waiting');
      if (record.waitId !== undefined) {
        try {
          WaitId.parse(record.waitId as string);
        } catch {
          throw invalidState(kind, 'waitId is not a wait id');
        }
      }
      return record as unknown as ToolSetState;
    },
    step(state, signals) {
      const tool = tools.get(state.tool);
      if (tool === undefined) protocol(`no tool ${state.tool}`);
      switch (state.phase) {
        case 'ready': {
          let args: unknown;
          try {
            args = JSON.parse(state.arguments) as unknown;
          } catch {
            return fail(state, 0, 'toolset.arguments.invalid', `the arguments of ${state.tool} are not JSON`);
          }
          const encoded = Payload.encode(args);
          if (!tool.parameters.accepts(encoded)) return fail(state, 0, 'toolset.arguments.invalid', `the arguments of ${state.tool} do not satisfy its parameter schema`);
          if (tool.config.kind === 'dispatch') return { state: { ...state, phase: 'calling' }, transition: Transition.continue(0, [toolCallEffect(state.tool, args)]) };
          let prompt: string;
          try {
            prompt = (tool.config.prompt ?? defaultPrompt)(args).slice(0, 4000).trim() || state.tool;
          } catch (error) {
            return fail(state, 0, 'toolset.prompt.failed', `the prompt of ${state.tool} could not be made: ${error instanceof Error ? error.message : String(error)}`);
          }
          return { state: { ...state, phase: 'opening' }, transition: Transition.continue(0, [Effect.wait(WaitKey.parse(askWaitKey(state.tool)), { prompt })]) };
        }
        case 'calling': {
          const settlement = signals[0];
          if (settlement?.status === undefined) protocol('the window after the tool call does not start with its settlement');
          const body = objectOf(settlement.payload);
          if (settlement.status === 'succeeded') {
            if (typeof body?.content !== 'string') return fail(state, 1, 'toolset.result.invalid', `${state.tool} settled without a content string`);
            return { state, transition: Transition.complete(1, Payload.encode({ content: body.content })) };
          }
          const error = typeof body?.error === 'object' && body.error !== null ? (body.error as Record<string, unknown>) : {};
          const code = typeof error.code === 'string' ? error.code : 'error';
          const message = typeof error.message === 'string' ? error.message : 'the tool failed';
          return fail(state, 1, 'toolset.tool.failed', `${state.tool}: ${code}: ${message}`);
        }
        case 'opening': {
          const opening = signals[0];
          if (opening === undefined || !isWaitOpening(opening)) protocol('the window after the ask does not start with its wait opening');
          return answered({ ...state, phase: 'waiting', waitId: (opening.waitId as WaitId).toString() }, signals, 1);
        }
        case 'waiting':
          return answered(state, signals, 0);
      }
    },
  });
  const specs = [...tools.values()].map((entry) => Object.freeze({ name: entry.config.name, description: entry.config.description, parameters: entry.config.parameters }));
  return Object.freeze({ definition, specs: Object.freeze(specs) });
}
