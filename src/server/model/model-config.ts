import { defaultModelTimeoutMs, isEnvName, maxModelTimeoutMs, normalizeBaseUrl } from './model-settings.js';

/**
 * The server's model endpoint (`SCOPE_MODEL_*`), what the example agents call:
 *
 * | variable                  | default          | meaning                                                        |
 * |---------------------------|------------------|----------------------------------------------------------------|
 * | `SCOPE_MODEL_BASE_URL`    | (absent: scripted) | an OpenAI-compatible base URL (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`); absent = `scope serve` runs the scripted model server in-process |
 * | `SCOPE_MODEL`             | `scripted` (required with a base URL) | the model name the endpoint knows                 |
 * | `SCOPE_MODEL_API_KEY_ENV` | `OPENAI_API_KEY` | the NAME of the variable holding the API key (read at each call, never logged) |
 * | `SCOPE_MODEL_TIMEOUT_MS`  | 60000            | one model call, request to the stream's end; past it the call is Unknown |
 */
export interface ModelConfig {
  /** Absent: the scripted model server, in-process (no network). */
  readonly baseUrl: string | undefined;
  readonly model: string;
  readonly apiKeyEnv: string;
  readonly timeoutMs: number;
}

export const defaultApiKeyEnv = 'OPENAI_API_KEY';
export const scriptedModelName = 'scripted';

/** Reads `SCOPE_MODEL_*` (problems are added to `problems`, as config.ts does for every variable). */
export function readModelConfig(
  read: (name: string) => string | undefined,
  integer: (name: string, fallback: number, min: number, max: number) => number,
  problems: string[],
): ModelConfig {
  const urlText = read('SCOPE_MODEL_BASE_URL');
  const baseUrl = urlText === undefined ? undefined : normalizeBaseUrl(urlText);
  if (urlText !== undefined && baseUrl === undefined) problems.push(`SCOPE_MODEL_BASE_URL=${JSON.stringify(urlText.replace(/\/\/[^@/]*@/, '//***@'))}: expected an http:// or https:// URL`);
  const model = read('SCOPE_MODEL');
  if (urlText !== undefined && model === undefined) problems.push('SCOPE_MODEL_BASE_URL needs SCOPE_MODEL (the model name the endpoint knows, e.g. gpt-4o-mini or llama3.1)');
  const apiKeyEnv = read('SCOPE_MODEL_API_KEY_ENV') ?? defaultApiKeyEnv;
  if (!isEnvName(apiKeyEnv)) problems.push(`SCOPE_MODEL_API_KEY_ENV=${JSON.stringify(apiKeyEnv)}: expected the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key`);
  const timeoutMs = integer('SCOPE_MODEL_TIMEOUT_MS', defaultModelTimeoutMs, 1, maxModelTimeoutMs);
  return Object.freeze({ baseUrl, model: model ?? scriptedModelName, apiKeyEnv, timeoutMs });
}
