import type * as OpenAIModule from 'openai';
import type { ChatCompletionCreateParamsStreaming, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { decodeModelRequest, encodeModelReply, type ModelRequest } from '../../../strategies/interaction/model-wire.js';
import { type DeltaEmitter, type Digest, type Dispatcher, type Effect, type EffectRequest, Payload, type ReplayPolicy, Settlement } from '../../kernel/index.js';
import { failedCall, modelErrorCodes, settlementForError, unknownCall } from './model-outcome.js';
import { type ModelDispatcherOptions, type ModelSettings, modelConfigurationDigest, parseModelSettings } from './model-settings.js';
import { ReplyAssembly } from './reply-assembly.js';

/**
 * The model dispatcher: runs the interaction strategy's `model.chat` Effects (model-wire.ts) against
 * any OpenAI-compatible Chat Completions endpoint with the official `openai` client, streaming.
 *
 * - Each content piece the endpoint streams becomes a delta `{"content"}` on the Effect's emitter, in
 *   order; the succeeded settlement is `encodeModelReply(…)`, its content their concatenation.
 * - The client's own retries are off (`maxRetries: 0`): a hidden retry could bill twice, and replay is
 *   the kernel's decision under the Effect's identity, never the transport's.
 * - The API key is read from the configured environment variable at each call and goes only into the
 *   Authorization header: no settlement, delta, error message or log line carries it.
 * - Definite versus Unknown outcomes: see model-outcome.ts. An Unknown is returned as an `unknown`
 *   Settlement whose payload says why (as the process dispatcher does), so a person resolving it sees
 *   the cause.
 */
export class ModelDispatcher implements Dispatcher {
  readonly #settings: ModelSettings;
  readonly #digest: Digest;
  readonly #env: Readonly<Record<string, string | undefined>>;
  /**
   * Clients by the key they send ('' for none): building one costs 60–350 µs and a hundred objects,
   * and its settings never change, so each call reuses the one for the key it just read (a rotated
   * key gets its own; a few are kept).
   */
  readonly #clients = new Map<string, OpenAIClient>();

  constructor(options: ModelDispatcherOptions) {
    this.#settings = parseModelSettings(options);
    this.#digest = modelConfigurationDigest(this.#settings);
    this.#env = options.env ?? process.env;
    Object.freeze(this);
  }

  get settings(): ModelSettings {
    return this.#settings;
  }

  /** The digest of the model settings, for (or inside) `Deployment.create({ configurationDigest })`. */
  get configurationDigest(): Digest {
    return this.#digest;
  }

  replayPolicy(_effect: Effect): ReplayPolicy {
    return this.#settings.replayPolicy;
  }

  async dispatch(request: EffectRequest, emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
    const decoded = decodeModelRequest(request.effect.payload);
    if (!decoded.ok) return failedCall({ code: modelErrorCodes.invalidRequest, message: `not a model request: ${decoded.problem}`, status: null });
    const settings = this.#settings;
    let key: string | undefined;
    if (settings.apiKeyEnv !== null) {
      key = this.#env[settings.apiKeyEnv];
      if (key === undefined || key === '') {
        return failedCall({ code: modelErrorCodes.apiKeyMissing, message: `the environment variable ${settings.apiKeyEnv} (the model API key) is not set; nothing was sent`, status: null });
      }
    }
    const openai = await loadOpenAI();
    if (signal.aborted) return failedCall({ code: modelErrorCodes.canceled, message: 'the model call was canceled before it was sent', status: null });
    const secret = key;
    const redact = (text: string): string => (secret === undefined ? text : text.split(secret).join('***'));

    const client = this.#client(openai, secret);
    // One deadline for the whole call: the client's own timeout stops at the response headers, and a
    // stream that stalls after them must end too.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), settings.timeoutMs);
    try {
      const stream = await client.chat.completions.create(chatParams(decoded.value, settings), { signal: AbortSignal.any([signal, deadline.signal]) });
      const assembly = new ReplyAssembly();
      for await (const chunk of stream) {
        const piece = assembly.add(chunk);
        if (piece !== undefined && emit !== undefined) emit(Payload.encode({ content: piece }));
      }
      const assembled = assembly.finish(settings.model);
      // The client ends an aborted stream quietly, as if it were over: say why it stopped short.
      if (!assembled.ok && (deadline.signal.aborted || signal.aborted)) {
        return settlementForError(undefined, { timedOut: deadline.signal.aborted, canceled: signal.aborted, redact }, openai);
      }
      if (!assembled.ok) {
        return unknownCall({ code: assembled.cut ? modelErrorCodes.streamCut : modelErrorCodes.invalidReply, message: `${assembled.problem}; the endpoint may have answered`, status: null });
      }
      return Settlement.of('succeeded', encodeModelReply(assembled.reply));
    } catch (error) {
      return settlementForError(error, { timedOut: deadline.signal.aborted, canceled: signal.aborted, redact }, openai);
    } finally {
      clearTimeout(timer);
    }
  }

  #client(openai: typeof OpenAIModule, secret: string | undefined): OpenAIClient {
    const known = this.#clients.get(secret ?? '');
    if (known !== undefined) return known;
    const client = new openai.OpenAI({
      baseURL: this.#settings.baseUrl,
      // The client insists on a key; with none configured, the header is removed below.
      apiKey: secret ?? 'none',
      // Explicit nulls: the client would otherwise read OPENAI_ADMIN_KEY, OPENAI_ORG_ID, … on its own.
      adminAPIKey: null,
      organization: null,
      project: null,
      webhookSecret: null,
      maxRetries: 0,
      timeout: this.#settings.timeoutMs,
      logLevel: 'off',
      ...(secret === undefined ? { defaultHeaders: { Authorization: null } } : {}),
    });
    if (this.#clients.size >= maxClients) this.#clients.clear();
    this.#clients.set(secret ?? '', client);
    return client;
  }
}

type OpenAIClient = InstanceType<typeof OpenAIModule.OpenAI>;

/** Clients kept per dispatcher: the current key and the few before it, while a rotation settles. */
const maxClients = 4;

let openaiModule: Promise<typeof OpenAIModule> | undefined;

/** The `openai` client, loaded on the first model call: `scope serve` and `scope worker` start without it. */
function loadOpenAI(): Promise<typeof OpenAIModule> {
  openaiModule ??= import('openai');
  return openaiModule;
}

/** A model dispatcher for a deployment: `Deployment.create({ dispatcher, configurationDigest: dispatcher.configurationDigest, … })`. */
export function modelDispatcher(options: ModelDispatcherOptions): ModelDispatcher {
  return new ModelDispatcher(options);
}

/** The Chat Completions request: Scope's camelCase wire form mapped to the endpoint's snake_case one. */
export function chatParams(request: ModelRequest, settings: ModelSettings): ChatCompletionCreateParamsStreaming {
  const messages: ChatCompletionMessageParam[] = request.messages.map((message): ChatCompletionMessageParam => {
    switch (message.role) {
      case 'system':
        return { role: 'system', content: message.content ?? '' };
      case 'user':
        return { role: 'user', content: message.content ?? '' };
      case 'tool':
        return { role: 'tool', content: message.content ?? '', tool_call_id: message.toolCallId ?? '' };
      case 'assistant': {
        const calls = message.toolCalls ?? [];
        return {
          role: 'assistant',
          content: message.content,
          ...(calls.length > 0 ? { tool_calls: calls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.name, arguments: call.arguments } })) } : {}),
        };
      }
    }
  });
  const tools: ChatCompletionTool[] = request.tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: { ...tool.parameters } } }));
  return {
    model: settings.model,
    messages,
    stream: true,
    // Some endpoints refuse an empty tools list: leave it out when there are none.
    ...(tools.length > 0 ? { tools } : {}),
    ...(settings.streamUsage ? { stream_options: { include_usage: true } } : {}),
    ...(settings.temperature === undefined ? {} : { temperature: settings.temperature }),
    ...(settings.maxTokens === undefined ? {} : { max_tokens: settings.maxTokens }),
  };
}
