import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { ModelReply, ModelUsage, ToolCall } from '../../../strategies/interaction/model-wire.js';

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

export type Assembled = { readonly ok: true; readonly reply: ModelReply } | { readonly ok: false; readonly cut: boolean; readonly problem: string };

/**
 * Builds one {@link ModelReply} from a Chat Completions stream: content pieces in order, tool calls
 * put together from their chunks by `index` (the id and name arrive once, the arguments in pieces),
 * the finish reason, and usage when the endpoint sends it. Only choice 0 is read.
 *
 * A stream is complete once its finish reason arrived; one that ended before is cut (the model may
 * have said more than we heard), never a short success.
 */
export class ReplyAssembly {
  readonly #content: string[] = [];
  readonly #calls: PartialCall[] = [];
  #finishReason: string | undefined;
  #usage: ModelUsage | null = null;
  #model: string | undefined;

  /** Takes one chunk; returns its content piece (for a delta), if it had a non-empty one. */
  add(chunk: ChatCompletionChunk): string | undefined {
    if (typeof chunk.model === 'string' && chunk.model !== '') this.#model ??= chunk.model;
    if (chunk.usage !== undefined && chunk.usage !== null) {
      this.#usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens };
    }
    const choice = (chunk.choices ?? []).find((candidate) => candidate.index === 0);
    if (choice === undefined) return undefined;
    // Typed as OpenAI's five reasons; other endpoints send their own (`eos`, …), kept as said.
    const finishReason: unknown = choice.finish_reason;
    if (typeof finishReason === 'string' && finishReason !== '') this.#finishReason = finishReason;
    for (const part of choice.delta?.tool_calls ?? []) {
      const call = (this.#calls[part.index] ??= { id: '', name: '', arguments: '' });
      if (typeof part.id === 'string' && part.id !== '' && call.id === '') call.id = part.id;
      if (typeof part.function?.name === 'string' && part.function.name !== '' && call.name === '') call.name = part.function.name;
      if (typeof part.function?.arguments === 'string') call.arguments += part.function.arguments;
    }
    const piece = choice.delta?.content;
    if (typeof piece !== 'string' || piece === '') return undefined;
    this.#content.push(piece);
    return piece;
  }

  /** The reply, or why there is none (`cut`: no finish reason arrived). */
  finish(configuredModel: string): Assembled {
    if (this.#finishReason === undefined) return { ok: false, cut: true, problem: 'the model stream ended before its finish reason' };
    const calls: ToolCall[] = [];
    for (const [index, call] of this.#calls.entries()) {
      if (call === undefined || call.id === '' || call.name === '') return { ok: false, cut: false, problem: `tool call ${index} came without an id or a name` };
      calls.push({ id: call.id, name: call.name, arguments: call.arguments });
    }
    const content = this.#content.length > 0 ? this.#content.join('') : calls.length > 0 ? null : '';
    const counted = (value: number): boolean => Number.isSafeInteger(value) && value >= 0;
    const usage = this.#usage !== null && counted(this.#usage.promptTokens) && counted(this.#usage.completionTokens) ? this.#usage : null;
    return { ok: true, reply: { message: { content, toolCalls: calls }, finishReason: this.#finishReason, usage, model: this.#model ?? configuredModel } };
  }
}
