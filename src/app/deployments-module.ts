import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Deployment } from '../kernel/index.js';
import type { DeploymentEntry } from '../server/catalog.js';
import type { ProcessDispatchers } from './process-dispatchers.js';
import type { ModelDispatcherOptions } from '../server/model/model-settings.js';

/**
 * Your own deployments: `SCOPE_DEPLOYMENTS` names a module that both `scope serve` and `scope worker`
 * load, so every process holds one catalog and a tree restored anywhere binds exactly the behaviour it
 * ran with. The module's default export is the list of Deployments, or a function returning it (given
 * a shutdown signal for dispatchers that wait): TypeScript or JavaScript (the CLI runs through tsx).
 * An entry may also be a version `{ deployment, current?, restoreDecider?, policies? }`: several versions
 * of one name may be listed (docs/deployment-versions.md); a worker only takes their Deployments. Gate
 * policies come with their Deployment from `withGatePolicies` (src/server/gates/gate-policies.ts).
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
  | readonly DeploymentEntry[]
  | ((context: DeploymentsContext) => readonly DeploymentEntry[] | Promise<readonly DeploymentEntry[]>);

function isEntry(value: unknown): value is DeploymentEntry {
  if (value instanceof Deployment) return true;
  if (typeof value !== 'object' || value === null) return false;
  const entry = value as Record<string, unknown>;
  const known = Object.keys(entry).every((key) => key === 'deployment' || key === 'current' || key === 'restoreDecider' || key === 'policies');
  return (
    known &&
    entry.deployment instanceof Deployment &&
    (entry.current === undefined || typeof entry.current === 'boolean') &&
    (entry.restoreDecider === undefined || typeof entry.restoreDecider === 'function') &&
    (entry.policies === undefined || Array.isArray(entry.policies))
  );
}

export async function loadDeploymentsModule(path: string, context: DeploymentsContext): Promise<DeploymentEntry[]> {
  const url = pathToFileURL(resolve(path)).href;
  let module: { default?: unknown };
  try {
    module = (await import(url)) as { default?: unknown };
  } catch (error) {
    // Plain Node (the compiled server, `npm run start:dist`) has no TypeScript loader.
    const hint = (error as { code?: unknown } | null)?.code === 'ERR_UNKNOWN_FILE_EXTENSION' ? ' (the compiled server loads JavaScript only: compile the module, or run `npm start`, which loads TypeScript)' : '';
    throw new Error(`SCOPE_DEPLOYMENTS=${path}: the module could not be loaded: ${error instanceof Error ? error.message : String(error)}${hint}`, { cause: error });
  }
  const exported = module.default;
  const value = typeof exported === 'function' ? await (exported as (context: DeploymentsContext) => unknown)(context) : exported;
  if (!Array.isArray(value) || value.length === 0 || !value.every(isEntry)) {
    throw new Error(
      `SCOPE_DEPLOYMENTS=${path}: the default export must be a non-empty list of Deployments (or versions { deployment, current?, restoreDecider?, policies? }), or a function returning one`,
    );
  }
  return [...value];
}
