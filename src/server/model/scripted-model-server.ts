import type { ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { type ModelScript, type ScriptedReply, selectReply } from './model-script.js';

/**
 * A small OpenAI-compatible model server that replays a {@link ModelScript} over real HTTP: tests and
 * the no-network demo talk to it exactly as to OpenAI, vLLM, Ollama or llama.cpp.
 *
 * `POST /v1/chat/completions` answers in OpenAI's Chat Completions format — streamed as Server-Sent
 * Events (`chat.completion.chunk` objects, `stream_options.include_usage` honoured, `data: [DONE]` last)
 * or as one `chat.completion` object. The reply is chosen from the request alone (model-script.ts), so
 * the server is stateless: restarted, it answers the same request the same way. It records every
 * request it received (`requests`), Authorization header included, so tests can count model calls and
 * see the credential the client sent; it never logs them.
 */
export interface RecordedModelRequest {
  readonly authorization: string | undefined;
  readonly body: unknown;
  readonly stream: boolean;
}

export interface ScriptedModelServerOptions {
  readonly script: ModelScript;
  /** Default 0: any free port. */
  readonly port?: number;
  /** Default 127.0.0.1 (loopback only). */
  readonly host?: string;
}

/** Arguments are streamed in pieces of this many characters, so clients must assemble them. */
const argumentPieceLength = 16;

function errorBody(message: string, type: string, code: string): { error: Record<string, unknown> } {
  return { error: { message, type, code, param: null } };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Content in word-sized pieces (whitespace kept), whose concatenation is the content. */
export function contentPieces(content: string): string[] {
  return content.match(/\S+\s*|\s+/g) ?? [];
}

function usageOf(reply: ScriptedReply, messages: readonly unknown[]): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const prompt =
    reply.usage?.promptTokens ?? messages.reduce<number>((sum, message) => sum + (isRecord(message) && typeof message.content === 'string' ? contentPieces(message.content).length : 0), 0);
  const completion = reply.usage?.completionTokens ?? contentPieces(reply.content ?? '').length + (reply.toolCalls?.length ?? 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** The streamed form of a reply: the `chat.completion.chunk` objects in order (usage last when asked). */
function chunksOf(reply: ScriptedReply, header: { id: string; model: string }, usage: ReturnType<typeof usageOf> | undefined): object[] {
  const chunk = (delta: object, finishReason: string | null = null): object => ({
    id: header.id,
    object: 'chat.completion.chunk',
    created: 0,
    model: header.model,
    choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
  });
  // OpenAI's first chunk names the role with empty content.
  const chunks: object[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of contentPieces(reply.content ?? '')) chunks.push(chunk({ content: piece }));
  for (const [index, call] of (reply.toolCalls ?? []).entries()) {
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (let at = 0; at < call.arguments.length; at += argumentPieceLength) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: call.arguments.slice(at, at + argumentPieceLength) } }] }));
    }
  }
  chunks.push(chunk({}, reply.finishReason));
  if (usage !== undefined) chunks.push({ id: header.id, object: 'chat.completion.chunk', created: 0, model: header.model, choices: [], usage });
  return chunks;
}

function completionOf(reply: ScriptedReply, header: { id: string; model: string }, usage: ReturnType<typeof usageOf>): object {
  const calls = (reply.toolCalls ?? []).map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  return {
    id: header.id,
    object: 'chat.completion',
    created: 0,
    model: header.model,
    choices: [{ index: 0, message: { role: 'assistant', content: reply.content ?? null, ...(calls.length > 0 ? { tool_calls: calls } : {}) }, finish_reason: reply.finishReason, logprobs: null }],
    usage,
  };
}

/** Resolves after `ms`, or at once (false) when the client went away first. */
function pause(ms: number, gone: AbortSignal): Promise<boolean> {
  if (ms === 0 || gone.aborted) return Promise.resolve(!gone.aborted);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      gone.removeEventListener('abort', onGone);
      resolve(true);
    }, ms);
    const onGone = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    gone.addEventListener('abort', onGone, { once: true });
  });
}

/** Aborts when the response's connection closes before the response finished. */
function clientGone(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) controller.abort();
  });
  return controller.signal;
}

async function stream(reply: FastifyReply, chunks: readonly object[], fault: ScriptedReply, gone: AbortSignal): Promise<void> {
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const [index, chunk] of chunks.entries()) {
    if (fault.cutAfterChunks !== undefined && index >= fault.cutAfterChunks) {
      // The connection drops mid-stream: no finish, no [DONE].
      raw.destroy();
      return;
    }
    if (fault.endAfterChunks !== undefined && index >= fault.endAfterChunks) {
      // The response ends as if complete, but without a finish reason or [DONE].
      raw.end();
      return;
    }
    if (index > 0 && !(await pause(fault.chunkDelayMs ?? 0, gone))) return;
    // Each chunk is flushed before the next step, so a cut drops the connection after what was sent.
    await new Promise<void>((resolve) => raw.write(`data: ${JSON.stringify(chunk)}\n\n`, () => resolve()));
  }
  raw.end('data: [DONE]\n\n');
}

/** Builds the app (not listening): `app.inject` works on it, `ScriptedModelServer.start` listens. */
export function scriptedModelApp(script: ModelScript, record: (request: RecordedModelRequest) => void): FastifyInstance {
  // forceCloseConnections: close() also ends hanging and streaming requests.
  const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024, forceCloseConnections: true });
  app.get('/v1/models', async () => ({ object: 'list', data: [{ id: 'scripted', object: 'model', created: 0, owned_by: 'scope' }] }));
  app.post('/v1/chat/completions', async (request, reply) => {
    const body = request.body;
    const streaming = isRecord(body) && body.stream === true;
    record({ authorization: request.headers.authorization, body, stream: streaming });
    if (!isRecord(body) || !Array.isArray(body.messages) || typeof body.model !== 'string') {
      return reply.code(400).send(errorBody('expected a JSON object with model (string) and messages (array)', 'invalid_request_error', 'invalid_request'));
    }
    const selection = selectReply(script, { messages: body.messages as Array<Record<string, unknown>> });
    if (!selection.ok) return reply.code(400).send(errorBody(selection.problem, 'invalid_request_error', 'scripted_no_reply'));
    const scripted = selection.reply;
    const gone = clientGone(reply.raw);
    if (!(await pause(scripted.delayMs ?? 0, gone))) return reply.hijack();
    if (scripted.hang === true) {
      // Never answer: the connection stays open until the client gives up or the server closes.
      reply.hijack();
      return;
    }
    if (scripted.status !== undefined) {
      const type = scripted.status >= 500 ? 'server_error' : 'invalid_request_error';
      return reply.code(scripted.status).send(errorBody(`scripted fault: status ${scripted.status}`, type, 'scripted_fault'));
    }
    const header = { id: `chatcmpl-scripted-${selection.conversation.name}-${selection.turn}`, model: body.model };
    const includeUsage = isRecord(body.stream_options) && body.stream_options.include_usage === true;
    const usage = usageOf(scripted, body.messages as unknown[]);
    if (streaming) return stream(reply, chunksOf(scripted, header, includeUsage ? usage : undefined), scripted, gone);
    if (scripted.cutAfterChunks !== undefined || scripted.endAfterChunks !== undefined) {
      reply.hijack();
      reply.raw.destroy();
      return;
    }
    return reply.send(completionOf(scripted, header, usage));
  });
  return app;
}

export class ScriptedModelServer {
  readonly #app: FastifyInstance;
  readonly #requests: RecordedModelRequest[];
  /** The base URL a client is given, e.g. `http://127.0.0.1:3100/v1`. */
  readonly baseUrl: string;

  private constructor(app: FastifyInstance, requests: RecordedModelRequest[], baseUrl: string) {
    this.#app = app;
    this.#requests = requests;
    this.baseUrl = baseUrl;
  }

  static async start(options: ScriptedModelServerOptions): Promise<ScriptedModelServer> {
    const requests: RecordedModelRequest[] = [];
    const app = scriptedModelApp(options.script, (request) => requests.push(request));
    const address = await app.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
    return new ScriptedModelServer(app, requests, `${address}/v1`);
  }

  /** Every chat completion request received so far, in arrival order. */
  get requests(): readonly RecordedModelRequest[] {
    return [...this.#requests];
  }

  /** Stops listening and drops open connections (hanging and streaming requests included). */
  close(): Promise<void> {
    return this.#app.close();
  }
}
