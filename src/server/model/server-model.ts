import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Digest, encodeCanonical, type Dispatcher, type ReplayPolicy } from '../../kernel/index.js';
import type { ModelConfig } from './model-config.js';
import { ModelDispatcher } from './model-dispatcher.js';
import { failedCall, modelErrorCodes } from './model-outcome.js';
import { type ModelScript, parseModelScript } from './model-script.js';
import type { ModelDispatcherOptions } from './model-settings.js';
import { ScriptedModelServer } from './scripted-model-server.js';

/**
 * The model endpoint one server process gives its example agents. With `SCOPE_MODEL_BASE_URL` set it is
 * that endpoint; without it, `scope serve` (and `scope worker`) run the scripted model server
 * in-process on a free loopback port with the default research script, so the demo runs with no
 * network and no key. The scripted server is stateless and every process runs the same script, so a
 * server and a worker (or two nodes) answer a model call alike; the configuration digest names the
 * script, not the port, so every process binds the same DeploymentRef.
 */
export interface ServerModel {
  /** What a model deployment binds: `modelDispatcher(model.options)` (or {@link modelDispatcherFor}). */
  readonly options: ModelDispatcherOptions;
  /** Stops the in-process scripted server, if this process runs one. */
  close(): Promise<void>;
}

/** The script `scope serve` replays when no endpoint is configured (the research agent's conversation). */
export const defaultModelScriptPath = fileURLToPath(new URL('../examples/research-script.json', import.meta.url));

/** Reads and validates a script file (JSON); throws with the path named. */
export async function loadModelScript(path: string): Promise<ModelScript> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new Error(`model script ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  try {
    return parseModelScript(value);
  } catch (error) {
    throw new Error(`model script ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** Resolves the configured endpoint, starting the scripted server in-process when none is configured. */
export async function startServerModel(config: ModelConfig, options: { readonly scriptPath?: string } = {}): Promise<ServerModel> {
  if (config.baseUrl !== undefined) {
    return { options: Object.freeze({ baseUrl: config.baseUrl, model: config.model, apiKeyEnv: config.apiKeyEnv, timeoutMs: config.timeoutMs }), close: async () => undefined };
  }
  const script = await loadModelScript(options.scriptPath ?? defaultModelScriptPath);
  const server = await ScriptedModelServer.start({ script });
  return {
    options: Object.freeze({
      baseUrl: server.baseUrl,
      model: config.model,
      // The scripted server takes no key: the demo needs none.
      apiKeyEnv: null,
      timeoutMs: config.timeoutMs,
      endpointIdentity: `scripted model server, script ${Digest.of(encodeCanonical(script)).toString()}`,
    }),
    close: () => server.close(),
  };
}

/**
 * The model dispatcher an example deployment binds for this server's endpoint. Without one (a Host
 * built by a test that configured no model), a dispatcher that settles every call as a definite
 * `model.not_configured` failure (nothing is sent anywhere), with its own configuration digest.
 */
export function modelDispatcherFor(options: ModelDispatcherOptions | undefined): Dispatcher & { readonly configurationDigest: Digest } {
  if (options !== undefined) return new ModelDispatcher(options);
  return Object.freeze({
    configurationDigest: Digest.of('scope.model-dispatcher.not-configured.v1'),
    async dispatch() {
      return failedCall({ code: modelErrorCodes.notConfigured, message: 'this server has no model endpoint configured (SCOPE_MODEL_BASE_URL); nothing was sent', status: null });
    },
    replayPolicy(): ReplayPolicy {
      return 'same_identity';
    },
  });
}
