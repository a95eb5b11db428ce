import { Effect } from '../../src/kernel/effect.js';
import { Payload } from '../../src/kernel/payload.js';

/**
 * The one Effect the interaction strategy asks a model dispatcher to run: a chat completion.
 *
 * Request payload (the Effect's): `{"operation":"model.chat","messages":[…],"tools":[…]}`.
 * - messages: the whole working context in order, each `{"role","content"}` plus, for an assistant
 *   message that called tools, `"toolCalls":[{"id","name","arguments"}]`, and for a tool result
 *   `"toolCallId"`. `content` is a string, or null for an assistant message that only called tools.
 * - tools: what the model may call, `{"name","description","parameters"}` (parameters a JSON Schema).
 * Model settings (endpoint, model name, temperature, token limit) are the deployment's configuration,
 * never part of the payload, and the API key is neither.
 *
 * Succeeded settlement payload: `{"message":{"content","toolCalls"},"finishReason","usage","model"}`,
 * `usage` `{"promptTokens","completionTokens"}` or null. A failed settlement carries
 * `{"error":{"code","message","status"}}` (`status` the HTTP status the endpoint answered, or null when
 * nothing was sent). Anything the endpoint may have seen without a definite answer is Unknown.
 *
 * Names are camelCase like every Scope wire form; the dispatcher maps them to and from the endpoint's
 * own (snake_case) protocol.
 *
 * Determinism: the payloads are pure functions of the arguments.
 */
export const modelChatOperation = 'model.chat';

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ToolCall {
  readonly id: string;
  readonly name: string;
  /** The model's arguments as it wrote them (JSON text, possibly malformed). */
  readonly arguments: string;
}

export interface ChatMessage {
  readonly role: ChatRole;
  readonly content: string | null;
  readonly toolCalls?: readonly ToolCall[];
  readonly toolCallId?: string;
}

export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

export interface ModelRequest {
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolSpec[];
}

export interface ModelUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** What the model answered (a succeeded settlement's payload). */
export interface ModelReply {
  readonly message: { readonly content: string | null; readonly toolCalls: readonly ToolCall[] };
  /** `stop`, `length`, `tool_calls`, `content_filter`, … as the endpoint said it. */
  readonly finishReason: string;
  readonly usage: ModelUsage | null;
  readonly model: string;
}

/** A request whose parts are already canonical payloads (the interaction's context and tool specs): spliced, not re-encoded. */
export interface EncodedModelRequest {
  readonly messages: Payload;
  readonly tools: Payload;
}

export function modelChatEffect(request: ModelRequest | EncodedModelRequest): Effect {
  return Effect.dispatcher(Payload.encode({ operation: modelChatOperation, messages: request.messages, tools: request.tools }));
}

export type Decoded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };

const roles: readonly string[] = ['system', 'user', 'assistant', 'tool'];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function onlyMembers(record: Record<string, unknown>, allowed: readonly string[]): string | undefined {
  return Object.keys(record).find((key) => !allowed.includes(key));
}

function toolCall(value: unknown, at: string): ToolCall | string {
  if (!isRecord(value)) return `${at} is not an object`;
  const extra = onlyMembers(value, ['id', 'name', 'arguments']);
  if (extra !== undefined) return `${at} has an unknown member ${extra}`;
  if (typeof value.id !== 'string' || value.id === '') return `${at}.id must be a non-empty string`;
  if (typeof value.name !== 'string' || value.name === '') return `${at}.name must be a non-empty string`;
  if (typeof value.arguments !== 'string') return `${at}.arguments must be a string`;
  return { id: value.id, name: value.name, arguments: value.arguments };
}

function toolCalls(value: unknown, at: string): ToolCall[] | string {
  if (!Array.isArray(value)) return `${at} must be an array`;
  const calls: ToolCall[] = [];
  for (const [index, item] of value.entries()) {
    const call = toolCall(item, `${at}[${index}]`);
    if (typeof call === 'string') return call;
    calls.push(call);
  }
  return calls;
}

function chatMessage(value: unknown, at: string): ChatMessage | string {
  if (!isRecord(value)) return `${at} is not an object`;
  const extra = onlyMembers(value, ['role', 'content', 'toolCalls', 'toolCallId']);
  if (extra !== undefined) return `${at} has an unknown member ${extra}`;
  if (typeof value.role !== 'string' || !roles.includes(value.role)) return `${at}.role must be one of ${roles.join(', ')}`;
  const role = value.role as ChatRole;
  if (value.content !== null && typeof value.content !== 'string') return `${at}.content must be a string or null`;
  if (value.content === null && !(role === 'assistant' && value.toolCalls !== undefined)) return `${at}.content may be null only for an assistant message that calls tools`;
  const message: { role: ChatRole; content: string | null; toolCalls?: ToolCall[]; toolCallId?: string } = { role, content: value.content };
  if (value.toolCalls !== undefined) {
    if (role !== 'assistant') return `${at}.toolCalls belongs to assistant messages only`;
    const calls = toolCalls(value.toolCalls, `${at}.toolCalls`);
    if (typeof calls === 'string') return calls;
    message.toolCalls = calls;
  }
  if (value.toolCallId !== undefined) {
    if (role !== 'tool') return `${at}.toolCallId belongs to tool messages only`;
    if (typeof value.toolCallId !== 'string' || value.toolCallId === '') return `${at}.toolCallId must be a non-empty string`;
    message.toolCallId = value.toolCallId;
  } else if (role === 'tool') {
    return `${at} is a tool message without toolCallId`;
  }
  return message;
}

function toolSpec(value: unknown, at: string): ToolSpec | string {
  if (!isRecord(value)) return `${at} is not an object`;
  const extra = onlyMembers(value, ['name', 'description', 'parameters']);
  if (extra !== undefined) return `${at} has an unknown member ${extra}`;
  if (typeof value.name !== 'string' || value.name === '') return `${at}.name must be a non-empty string`;
  if (typeof value.description !== 'string') return `${at}.description must be a string`;
  if (!isRecord(value.parameters)) return `${at}.parameters must be a JSON Schema object`;
  return { name: value.name, description: value.description, parameters: value.parameters };
}

/**
 * Strictly checks already-decoded JSON as a context (`messages`): a state restore validates its
 * messages in place rather than re-encoding them into a request payload to decode again.
 */
export function chatMessages(value: unknown): Decoded<ChatMessage[]> {
  if (!Array.isArray(value) || value.length === 0) return { ok: false, problem: 'messages must be a non-empty array' };
  const messages: ChatMessage[] = [];
  for (const [index, item] of value.entries()) {
    const message = chatMessage(item, `messages[${index}]`);
    if (typeof message === 'string') return { ok: false, problem: message };
    messages.push(message);
  }
  return { ok: true, value: messages };
}

/** Strictly decodes a model Effect payload (for model dispatchers). */
export function decodeModelRequest(payload: Payload): Decoded<ModelRequest> {
  const value = payload.decode<unknown>();
  if (!isRecord(value)) return { ok: false, problem: 'a model request is a JSON object' };
  if (value.operation !== modelChatOperation) return { ok: false, problem: `not a model request (operation ${modelChatOperation})` };
  const extra = onlyMembers(value, ['operation', 'messages', 'tools']);
  if (extra !== undefined) return { ok: false, problem: `a model request has an unknown member ${extra}` };
  const messages = chatMessages(value.messages);
  if (!messages.ok) return messages;
  if (!Array.isArray(value.tools)) return { ok: false, problem: 'tools must be an array' };
  const tools: ToolSpec[] = [];
  for (const [index, item] of value.tools.entries()) {
    const tool = toolSpec(item, `tools[${index}]`);
    if (typeof tool === 'string') return { ok: false, problem: tool };
    tools.push(tool);
  }
  return { ok: true, value: { messages: messages.value, tools } };
}

function usage(value: unknown): ModelUsage | null | string {
  if (value === null) return null;
  if (!isRecord(value)) return 'usage must be an object or null';
  const { promptTokens, completionTokens } = value;
  if (!Number.isSafeInteger(promptTokens) || (promptTokens as number) < 0) return 'usage.promptTokens must be a non-negative integer';
  if (!Number.isSafeInteger(completionTokens) || (completionTokens as number) < 0) return 'usage.completionTokens must be a non-negative integer';
  return { promptTokens: promptTokens as number, completionTokens: completionTokens as number };
}

/** Strictly decodes a succeeded model settlement's payload (for the strategy). */
export function decodeModelReply(payload: Payload): Decoded<ModelReply> {
  const value = payload.decode<unknown>();
  if (!isRecord(value)) return { ok: false, problem: 'a model reply is a JSON object' };
  const extra = onlyMembers(value, ['message', 'finishReason', 'usage', 'model']);
  if (extra !== undefined) return { ok: false, problem: `a model reply has an unknown member ${extra}` };
  if (!isRecord(value.message)) return { ok: false, problem: 'message must be an object' };
  const messageExtra = onlyMembers(value.message, ['content', 'toolCalls']);
  if (messageExtra !== undefined) return { ok: false, problem: `message has an unknown member ${messageExtra}` };
  const content = value.message.content;
  if (content !== null && typeof content !== 'string') return { ok: false, problem: 'message.content must be a string or null' };
  const calls = toolCalls(value.message.toolCalls, 'message.toolCalls');
  if (typeof calls === 'string') return { ok: false, problem: calls };
  if (typeof value.finishReason !== 'string' || value.finishReason === '') return { ok: false, problem: 'finishReason must be a non-empty string' };
  const used = usage(value.usage);
  if (typeof used === 'string') return { ok: false, problem: used };
  if (typeof value.model !== 'string') return { ok: false, problem: 'model must be a string' };
  return { ok: true, value: { message: { content, toolCalls: calls }, finishReason: value.finishReason, usage: used, model: value.model } };
}

/** The payload of a succeeded model settlement (for dispatchers; pair with decodeModelReply). */
export function encodeModelReply(reply: ModelReply): Payload {
  return Payload.encode({
    message: { content: reply.message.content, toolCalls: reply.message.toolCalls.map((call) => ({ id: call.id, name: call.name, arguments: call.arguments })) },
    finishReason: reply.finishReason,
    usage: reply.usage === null ? null : { promptTokens: reply.usage.promptTokens, completionTokens: reply.usage.completionTokens },
    model: reply.model,
  });
}
