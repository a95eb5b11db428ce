import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Deployment } from '../kernel/index.js';
import type { ProcessDispatchers } from './process-dispatchers.js';
import type { ModelDispatcherOptions } from '../server/model/model-settings.js';

/**
 * Your own deployments: `SCOPE_DEPLOYMENTS` names a module that both `scope serve` and `scope worker`
 * load, so every process holds one catalog and a tree restored anywhere binds exactly the behaviour it
 * ran with. The module's default export is the list of Deployments, or a function returning it (given
 * a shutdown signal for dispatchers that wait): TypeScript or JavaScript (the CLI runs through tsx).
 */
export interface DeploymentsContext {
  /** Aborted when the process shuts down (long dispatches may end early). */
  readonly shutdown: AbortSignal;
  /**
   * Deployments whose Effects a long-lived command performs (JSON lines on stdin/stdout, supervised
   * by this process): `processes.deployment({ definition, implementationDigest, process })`.
   */
  readonly processes: ProcessDispatchers;
  /**
   * The server's model endpoint (`SCOPE_MODEL_*`, or the in-process scripted server): bind it with
   * `modelDispatcher(model)` from src/server/model/model-dispatcher.ts.
   */
  readonly model?: ModelDispatcherOptions;
}

export type DeploymentsModule =
  | readonly Deployment[]
  | ((context: DeploymentsContext) => readonly Deployment[] | Promise<readonly Deployment[]>);

export async function loadDeploymentsModule(path: string, context: DeploymentsContext): Promise<Deployment[]> {
  const url = pathToFileURL(resolve(path)).href;
  let module: { default?: unknown };
  try {
    module = (await import(url)) as { default?: unknown };
  } catch (error) {
    throw new Error(`SCOPE_DEPLOYMENTS=${path}: the module could not be loaded: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const exported = module.default;
  const value = typeof exported === 'function' ? await (exported as (context: DeploymentsContext) => unknown)(context) : exported;
  if (!Array.isArray(value) || value.length === 0 || !value.every((item) => item instanceof Deployment)) {
    throw new Error(`SCOPE_DEPLOYMENTS=${path}: the default export must be a non-empty list of Deployments, or a function returning one`);
  }
  return [...value];
}
