import { Digest, encodeCanonical, parseReplayPolicy, type ReplayPolicy } from '../../kernel/index.js';

/**
 * How a model dispatcher reaches its OpenAI-compatible Chat Completions endpoint. The model settings
 * belong to the Deployment's configuration (see {@link modelConfigurationDigest}); the API key never
 * does: only the NAME of the environment variable holding it is configured, and the value is read at
 * call time.
 */
export interface ModelDispatcherOptions {
  /** The endpoint's base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`. */
  readonly baseUrl: string;
  /** The model name the endpoint knows (`gpt-4o-mini`, `llama3.1`, …). */
  readonly model: string;
  /**
   * The environment variable holding the API key (sent as `Authorization: Bearer …`), read at each
   * call; unset at call time is a definite failure. `null`: the endpoint takes no key (the in-process
   * scripted server) and no Authorization header is sent.
   */
  readonly apiKeyEnv: string | null;
  readonly temperature?: number;
  /** Sent as `max_tokens`. */
  readonly maxTokens?: number;
  /** The whole call, request to the stream's end (default 60000). Past it the outcome is Unknown. */
  readonly timeoutMs?: number;
  /** Default `same_identity`: a chat call changes nothing outside, so asking again is the same operation. */
  readonly replayPolicy?: ReplayPolicy;
  /** Ask for usage in the stream (`stream_options.include_usage`; default true). Turn off for endpoints that reject it. */
  readonly streamUsage?: boolean;
  /**
   * What the configuration digest records instead of `baseUrl`, for an endpoint whose URL changes
   * between runs but whose behaviour does not (the in-process scripted server on a free port).
   */
  readonly endpointIdentity?: string;
  /** Where the key variable is read (default `process.env`; tests pass their own). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export interface ModelSettings {
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKeyEnv: string | null;
  readonly temperature: number | undefined;
  readonly maxTokens: number | undefined;
  readonly timeoutMs: number;
  readonly replayPolicy: ReplayPolicy;
  readonly streamUsage: boolean;
  readonly endpointIdentity: string;
}

/** A model dispatcher configuration that cannot be used (thrown when the deployment is built). */
export class ModelSettingsError extends Error {
  readonly code = 'invalid_model_settings';
}

export const defaultModelTimeoutMs = 60_000;
export const maxModelTimeoutMs = 3_600_000;
const envNamePattern = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** True for a name an environment variable can have (what `SCOPE_MODEL_API_KEY_ENV` accepts). */
export function isEnvName(name: string): boolean {
  return envNamePattern.test(name);
}

/** An http(s) URL without a trailing slash; undefined when it is not one. */
export function normalizeBaseUrl(text: string): string | undefined {
  try {
    const url = new URL(text);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    return url.toString().replace(/\/+$/, '');
  } catch {
    return undefined;
  }
}

/** Validates the options and returns frozen settings; every rejection is a {@link ModelSettingsError}. */
export function parseModelSettings(options: ModelDispatcherOptions): ModelSettings {
  const fail = (message: string): never => {
    throw new ModelSettingsError(`invalid model dispatcher settings: ${message}`);
  };
  if (typeof options !== 'object' || options === null) fail('expected an object');
  const baseUrl = typeof options.baseUrl === 'string' ? normalizeBaseUrl(options.baseUrl) : undefined;
  if (baseUrl === undefined) fail('baseUrl must be an http:// or https:// URL');
  if (typeof options.model !== 'string' || options.model.trim() === '') fail('model must be a non-empty string');
  if (options.apiKeyEnv !== null && (typeof options.apiKeyEnv !== 'string' || !isEnvName(options.apiKeyEnv))) {
    fail('apiKeyEnv must name an environment variable ([A-Za-z_][A-Za-z0-9_]*) or be null');
  }
  const { temperature, maxTokens } = options;
  if (temperature !== undefined && (typeof temperature !== 'number' || !Number.isFinite(temperature) || temperature < 0 || temperature > 2)) fail('temperature must be a number in 0..2');
  if (maxTokens !== undefined && (!Number.isSafeInteger(maxTokens) || maxTokens < 1)) fail('maxTokens must be a positive integer');
  const timeoutMs = options.timeoutMs ?? defaultModelTimeoutMs;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > maxModelTimeoutMs) fail(`timeoutMs must be an integer in 1..${maxModelTimeoutMs}`);
  let replayPolicy: ReplayPolicy = 'same_identity';
  try {
    replayPolicy = parseReplayPolicy(options.replayPolicy ?? 'same_identity');
  } catch {
    fail('replayPolicy must be "never" or "same_identity"');
  }
  if (options.streamUsage !== undefined && typeof options.streamUsage !== 'boolean') fail('streamUsage must be a boolean');
  if (options.endpointIdentity !== undefined && (typeof options.endpointIdentity !== 'string' || options.endpointIdentity === '')) fail('endpointIdentity must be a non-empty string');
  return Object.freeze({
    baseUrl: baseUrl as string,
    model: options.model,
    apiKeyEnv: options.apiKeyEnv,
    temperature,
    maxTokens,
    timeoutMs,
    replayPolicy,
    streamUsage: options.streamUsage ?? true,
    endpointIdentity: options.endpointIdentity ?? (baseUrl as string),
  });
}

/**
 * The digest of the settings that decide what a model call does: endpoint (its identity), model,
 * temperature, token limit, usage request, replay policy and the key variable's NAME. Never the key
 * (rotating a key changes no behaviour), and not the timeout (how long to wait is operations, and a
 * restored tree must still bind its deployment after the timeout was tuned). Put it in (or make it)
 * the Deployment's `configurationDigest`.
 */
export function modelConfigurationDigest(settings: ModelSettings): Digest {
  return Digest.of(
    encodeCanonical({
      kind: 'scope.model-dispatcher.v1',
      endpoint: settings.endpointIdentity,
      model: settings.model,
      temperature: settings.temperature ?? null,
      max_tokens: settings.maxTokens ?? null,
      stream_usage: settings.streamUsage,
      replay_policy: settings.replayPolicy,
      api_key_env: settings.apiKeyEnv,
    }),
  );
}
