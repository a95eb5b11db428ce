/**
 * A script for the scripted model server (scripted-model-server.ts): recorded conversations as data,
 * so tests and the no-network demo get a real OpenAI-compatible endpoint whose answers are fixed.
 *
 * ```json
 * {"comment": "…", "conversations": [{"name": "research", "match": "[research]", "replies": [
 *   {"toolCalls": [{"id": "call_1", "name": "search", "arguments": "{\"q\":\"x\"}"}], "finishReason": "tool_calls"},
 *   {"content": "Here is what I found.", "finishReason": "stop", "delayMs": 50}
 * ]}]}
 * ```
 *
 * Selection is a pure function of the request, so the server keeps no state between requests and a
 * restarted server answers the same request the same way: the first conversation whose `match` text
 * occurs in the request's system message or first user message, then its reply numbered by how many
 * assistant messages the request already holds (the first call gets reply 0).
 *
 * Fault injection per reply: `delayMs` before answering, `chunkDelayMs` between streamed chunks,
 * `status` (answer that HTTP status with an OpenAI-style error body instead), `hang` (never answer),
 * `cutAfterChunks` (stream that many chunks, then drop the connection), `endAfterChunks` (stream that
 * many chunks, then end the response cleanly without a finish reason or `[DONE]`).
 */
export interface ScriptedToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

export interface ScriptedReply {
  readonly content?: string;
  readonly toolCalls?: readonly ScriptedToolCall[];
  readonly finishReason: string;
  readonly usage?: { readonly promptTokens: number; readonly completionTokens: number };
  readonly delayMs?: number;
  readonly chunkDelayMs?: number;
  readonly status?: number;
  readonly hang?: boolean;
  readonly cutAfterChunks?: number;
  readonly endAfterChunks?: number;
}

export interface ScriptedConversation {
  readonly name: string;
  readonly match: string;
  readonly replies: readonly ScriptedReply[];
}

export interface ModelScript {
  readonly conversations: readonly ScriptedConversation[];
}

/** A script that does not parse (the message names the member). */
export class ModelScriptError extends Error {
  readonly code = 'invalid_model_script';
}

const maxDelayMs = 600_000;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function only(record: Record<string, unknown>, allowed: readonly string[], at: string): void {
  const extra = Object.keys(record).find((key) => !allowed.includes(key));
  if (extra !== undefined) throw new ModelScriptError(`${at} has an unknown member ${JSON.stringify(extra)}`);
}

function text(value: unknown, at: string, nonEmpty = true): string {
  if (typeof value !== 'string' || (nonEmpty && value === '')) throw new ModelScriptError(`${at} must be a ${nonEmpty ? 'non-empty ' : ''}string`);
  return value;
}

function count(value: unknown, at: string, max: number): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > max) throw new ModelScriptError(`${at} must be an integer in 0..${max}`);
  return value as number;
}

function reply(value: unknown, at: string): ScriptedReply {
  if (!isRecord(value)) throw new ModelScriptError(`${at} must be an object`);
  only(value, ['content', 'toolCalls', 'finishReason', 'usage', 'delayMs', 'chunkDelayMs', 'status', 'hang', 'cutAfterChunks', 'endAfterChunks', 'comment'], at);
  const result: { -readonly [K in keyof ScriptedReply]: ScriptedReply[K] } = { finishReason: text(value.finishReason, `${at}.finishReason`) };
  if (value.content !== undefined) result.content = text(value.content, `${at}.content`, false);
  if (value.toolCalls !== undefined) {
    if (!Array.isArray(value.toolCalls)) throw new ModelScriptError(`${at}.toolCalls must be an array`);
    result.toolCalls = value.toolCalls.map((call, index) => {
      const where = `${at}.toolCalls[${index}]`;
      if (!isRecord(call)) throw new ModelScriptError(`${where} must be an object`);
      only(call, ['id', 'name', 'arguments'], where);
      return { id: text(call.id, `${where}.id`), name: text(call.name, `${where}.name`), arguments: text(call.arguments, `${where}.arguments`, false) };
    });
  }
  if (value.usage !== undefined) {
    if (!isRecord(value.usage)) throw new ModelScriptError(`${at}.usage must be an object`);
    only(value.usage, ['promptTokens', 'completionTokens'], `${at}.usage`);
    result.usage = { promptTokens: count(value.usage.promptTokens, `${at}.usage.promptTokens`, 1e9), completionTokens: count(value.usage.completionTokens, `${at}.usage.completionTokens`, 1e9) };
  }
  if (value.delayMs !== undefined) result.delayMs = count(value.delayMs, `${at}.delayMs`, maxDelayMs);
  if (value.chunkDelayMs !== undefined) result.chunkDelayMs = count(value.chunkDelayMs, `${at}.chunkDelayMs`, maxDelayMs);
  if (value.status !== undefined) {
    const status = count(value.status, `${at}.status`, 599);
    if (status < 400) throw new ModelScriptError(`${at}.status must be an error status (400..599)`);
    result.status = status;
  }
  if (value.hang !== undefined) {
    if (typeof value.hang !== 'boolean') throw new ModelScriptError(`${at}.hang must be a boolean`);
    result.hang = value.hang;
  }
  if (value.cutAfterChunks !== undefined) result.cutAfterChunks = count(value.cutAfterChunks, `${at}.cutAfterChunks`, 1e6);
  if (value.endAfterChunks !== undefined) result.endAfterChunks = count(value.endAfterChunks, `${at}.endAfterChunks`, 1e6);
  return result;
}

/** Validates a script (parsed JSON); throws {@link ModelScriptError}. Nothing is defaulted or repaired. */
export function parseModelScript(value: unknown): ModelScript {
  if (!isRecord(value)) throw new ModelScriptError('a model script is an object {conversations: [...]}');
  only(value, ['conversations', 'comment'], 'the script');
  if (!Array.isArray(value.conversations)) throw new ModelScriptError('conversations must be an array');
  const names = new Set<string>();
  const conversations = value.conversations.map((item: unknown, index: number): ScriptedConversation => {
    const at = `conversations[${index}]`;
    if (!isRecord(item)) throw new ModelScriptError(`${at} must be an object`);
    only(item, ['name', 'match', 'replies', 'comment'], at);
    const name = text(item.name, `${at}.name`);
    if (names.has(name)) throw new ModelScriptError(`${at}.name ${JSON.stringify(name)} is used twice`);
    names.add(name);
    if (!Array.isArray(item.replies) || item.replies.length === 0) throw new ModelScriptError(`${at}.replies must be a non-empty array`);
    return { name, match: text(item.match, `${at}.match`), replies: item.replies.map((entry: unknown, turn: number) => reply(entry, `${at}.replies[${turn}]`)) };
  });
  return { conversations };
}

/** The parts of a Chat Completions request that selection reads. */
export interface ScriptedRequest {
  readonly messages: ReadonlyArray<{ readonly role?: unknown; readonly content?: unknown }>;
}

export type Selection =
  | { readonly ok: true; readonly conversation: ScriptedConversation; readonly turn: number; readonly reply: ScriptedReply }
  | { readonly ok: false; readonly problem: string };

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  // The content-parts form: [{type: "text", text}, ...].
  if (Array.isArray(content)) return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
  return '';
}

/** The reply the script gives `request`: a pure function of the request (see the module comment). */
export function selectReply(script: ModelScript, request: ScriptedRequest): Selection {
  const system = request.messages.find((message) => message.role === 'system');
  const firstUser = request.messages.find((message) => message.role === 'user');
  const haystacks = [contentText(system?.content), contentText(firstUser?.content)];
  const conversation = script.conversations.find((candidate) => haystacks.some((haystack) => haystack.includes(candidate.match)));
  if (conversation === undefined) return { ok: false, problem: 'no scripted conversation matches the system message or the first user message' };
  const turn = request.messages.filter((message) => message.role === 'assistant').length;
  const selected = conversation.replies[turn];
  if (selected === undefined) return { ok: false, problem: `conversation ${conversation.name} has ${conversation.replies.length} replies; this request is turn ${turn}` };
  return { ok: true, conversation, turn, reply: selected };
}
