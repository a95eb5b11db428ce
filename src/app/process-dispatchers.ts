import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { Counter, Gauge, type Registry } from 'prom-client';
import {
  type Definition,
  type DeltaEmitter,
  Deployment,
  Digest,
  type Dispatcher,
  type Effect,
  type EffectRequest,
  encodeCanonical,
  type ReplayPolicy,
  type Settlement,
} from '../kernel/index.js';
import { baseEnv, checkEnvEntry } from '../supervisor/base-env.js';
import { Supervisor, type SupervisorOptions } from '../supervisor/supervisor.js';
import type { JsonLinesWorker } from '../transport/json-lines-worker.js';
import { ProcessDispatchErrorCode } from '../transport/process-dispatch-error.js';
import { ProcessDispatcher } from '../transport/process-dispatcher.js';
import { processKeyProblem } from '../transport/process-readiness.js';
import { parseProcessDispatcherConfig, processDispatcherConfigJson, type ProcessDispatcherConfig } from '../transport/process-dispatcher-config.js';

/** What a deployments module passes to {@link ProcessDispatchers.deployment}. */
export interface ProcessDeploymentOptions {
  readonly definition: Definition;
  /** Names this exact Definition code (bump it when the code changes). */
  readonly implementationDigest: Digest;
  /** The command that performs the Effects: its configuration is folded into the configurationDigest. */
  readonly process: ProcessDispatcherConfig;
  /**
   * Variables the command needs but the DeploymentRef must not carry (API keys): their names are
   * part of the configuration digest, their values are not, so rotating a secret keeps every tree's
   * ref (the running command is replaced, since its fingerprint changes).
   */
  readonly secrets?: Readonly<Record<string, string>>;
}

/** The readiness and history of one supervisor key (one command configuration). */
export interface ProcessKeyStatus {
  readonly key: string;
  readonly command: string;
  /** Whether the command is an executable file (a path, or found on the base PATH). */
  readonly resolvable: boolean;
  /** The last start's outcome, once one was tried: `started`, or the failure code. */
  readonly lastStart?: string;
  /** Generations of this key still known to the supervisor (starting, live, retiring). */
  readonly generations: readonly { readonly serial: number; readonly state: string; readonly leases: number; readonly current: boolean }[];
}

/** Where lease failures land: these codes mean the command did not start, so nothing was sent. */
const startFailureCodes: ReadonlySet<string> = new Set([ProcessDispatchErrorCode.startFailed, ProcessDispatchErrorCode.invalidHandshake]);

/**
 * The supervised process dispatchers of one `scope serve` or `scope worker` process: one
 * {@link Supervisor} for every long-lived JSON-lines command its deployments name, the Deployments
 * that bind them (their configuration digest is the command's configuration), readiness per
 * supervisor key, metrics, and the close that stops the commands at shutdown.
 *
 * A deployments module receives it as `context.processes`:
 * `processes.deployment({ definition, implementationDigest, process: { command, args, env, replayPolicy, requestTimeoutMs } })`.
 */
export class ProcessDispatchers {
  readonly #supervisorOptions: SupervisorOptions;
  readonly #cwd: string;
  #supervisor: Supervisor<JsonLinesWorker> | undefined;
  readonly #keys = new Map<string, { command: string; resolvable: boolean; lastStart?: string }>();
  /** The key each dispatcher made here runs (what a worker publishes per DeploymentRef). */
  readonly #keyOf = new WeakMap<Dispatcher, string>();
  readonly #spawns = new Counter({ name: 'scope_process_spawns_total', help: 'Process dispatcher commands spawned, by supervisor key.', labelNames: ['key'], registers: [] });
  readonly #startFailures = new Counter({ name: 'scope_process_start_failures_total', help: 'Dispatches that met a command start failure (nothing was sent), by supervisor key and code.', labelNames: ['key', 'code'], registers: [] });
  readonly #dispatches = new Counter({ name: 'scope_process_dispatches_total', help: 'Process dispatcher dispatches, by supervisor key and settlement status.', labelNames: ['key', 'status'], registers: [] });
  readonly #generations: Gauge;
  readonly #leases: Gauge;

  constructor(options: { readonly supervisor?: SupervisorOptions; readonly cwd?: string } = {}) {
    this.#supervisorOptions = options.supervisor ?? {};
    this.#cwd = options.cwd ?? process.cwd();
    const inspect = (): ReturnType<Supervisor<JsonLinesWorker>['inspect']> => this.#supervisor?.inspect() ?? [];
    this.#generations = new Gauge({
      name: 'scope_process_generations',
      help: 'Process dispatcher command generations the supervisor holds, by key and state.',
      labelNames: ['key', 'state'],
      registers: [],
      collect() {
        this.reset();
        for (const generation of inspect()) this.inc({ key: generation.key, state: generation.state });
      },
    });
    this.#leases = new Gauge({
      name: 'scope_process_leases',
      help: 'Dispatches holding a lease on a process dispatcher command, by key.',
      labelNames: ['key'],
      registers: [],
      collect() {
        this.reset();
        for (const generation of inspect()) this.inc({ key: generation.key }, generation.leases);
      },
    });
  }

  /** A Deployment whose Effects are performed by a supervised command. */
  deployment(options: ProcessDeploymentOptions): Deployment {
    const config = parseProcessDispatcherConfig(options.process);
    const secrets = options.secrets ?? {};
    for (const [name, value] of Object.entries(secrets)) {
      checkEnvEntry(name, value);
      if (Object.hasOwn(config.env, name)) throw new TypeError(`process deployment: ${name} is both in env and in secrets`);
    }
    const dispatcher = this.dispatcher({ ...config, env: { ...config.env, ...secrets } });
    return Deployment.create({
      definition: options.definition,
      dispatcher,
      implementationDigest: options.implementationDigest,
      configurationDigest: ProcessDispatchers.configurationDigest(config, Object.keys(secrets)),
    });
  }

  /**
   * The configuration digest of a command configuration: its canonical JSON plus the sorted names
   * (never the values) of its secret variables. A change of any of them is a new DeploymentRef.
   */
  static configurationDigest(config: ProcessDispatcherConfig, secretNames: readonly string[] = []): Digest {
    const canonical = processDispatcherConfigJson(parseProcessDispatcherConfig(config));
    return Digest.of(encodeCanonical({ process_dispatcher: JSON.parse(canonical) as unknown, secret_names: [...secretNames].sort() }));
  }

  /** A Dispatcher for one command configuration, counted in this registry's metrics and readiness. */
  dispatcher(config: ProcessDispatcherConfig): Dispatcher {
    const inner = new ProcessDispatcher(config, { supervisor: this.#supervisorOf(), cwd: this.#cwd, onSpawn: () => this.#started(inner.key) });
    if (!this.#keys.has(inner.key)) this.#keys.set(inner.key, { command: inner.config.command, resolvable: isResolvable(inner.config.command, this.#cwd) });
    const dispatcher: Dispatcher = Object.freeze({
      replayPolicy: (effect: Effect): ReplayPolicy => inner.replayPolicy(effect),
      dispatch: async (request: EffectRequest, emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> => {
        const settlement = await inner.dispatch(request, emit, signal);
        const code = settlement.status === 'succeeded' ? undefined : codeOf(settlement);
        if (code !== undefined && startFailureCodes.has(code)) this.#startFailed(inner.key, code);
        this.#dispatches.inc({ key: inner.key, status: settlement.status });
        return settlement;
      },
    });
    this.#keyOf.set(dispatcher, inner.key);
    return dispatcher;
  }

  /**
   * The status of the key a dispatcher made by this registry runs (one entry; none for any other
   * dispatcher). `scope worker` publishes it per DeploymentRef with its registry heartbeat.
   */
  statusOf(dispatcher: Dispatcher | undefined): ProcessKeyStatus[] {
    const key = dispatcher === undefined ? undefined : this.#keyOf.get(dispatcher);
    return key === undefined ? [] : this.status([key]);
  }

  /** Every configured key (or those named): whether its command resolves, its last start, its generations. */
  status(only?: readonly string[]): ProcessKeyStatus[] {
    const generations = this.#supervisor?.inspect() ?? [];
    const keys = only === undefined ? [...this.#keys] : only.flatMap((key) => (this.#keys.has(key) ? [[key, this.#keys.get(key)!] as const] : []));
    return keys.map(([key, entry]) => ({
      key,
      command: entry.command,
      resolvable: entry.resolvable,
      ...(entry.lastStart === undefined ? {} : { lastStart: entry.lastStart }),
      generations: generations
        .filter((generation) => generation.key === key)
        .map(({ serial, state, leases, current }) => ({ serial, state, leases, current })),
    }));
  }

  /**
   * Readiness checks, one per key (`process:<key>`): not ready while its command does not resolve
   * or its last start failed (the next dispatch tries again, and a success clears it).
   */
  checks(): Record<string, string> {
    const checks: Record<string, string> = {};
    for (const status of this.status()) checks[`process:${status.key}`] = processKeyProblem(status) ?? 'ok';
    return checks;
  }

  /** Registers the metrics on a Host's registry (call once). */
  registerMetrics(registry: Registry): void {
    for (const metric of [this.#spawns, this.#startFailures, this.#dispatches, this.#generations, this.#leases]) registry.registerMetric(metric);
  }

  /** Stops every command (asks them to exit; kills them at the deadline). */
  async close(deadlineMs: number): Promise<void> {
    const supervisor = this.#supervisor;
    if (supervisor === undefined) return;
    await supervisor.close({ signal: AbortSignal.timeout(Math.max(1, deadlineMs)) }).catch(() => undefined);
  }

  #supervisorOf(): Supervisor<JsonLinesWorker> {
    this.#supervisor ??= new Supervisor<JsonLinesWorker>(this.#supervisorOptions);
    return this.#supervisor;
  }

  #started(key: string): void {
    const entry = this.#keys.get(key);
    if (entry !== undefined) entry.lastStart = 'started';
    this.#spawns.inc({ key });
  }

  #startFailed(key: string, code: string): void {
    const entry = this.#keys.get(key);
    if (entry !== undefined) entry.lastStart = code;
    this.#startFailures.inc({ key, code });
  }
}

/** The `code` of a `failed`/`unknown` settlement payload `{code, message}`, if it has one. */
function codeOf(settlement: Settlement): string | undefined {
  try {
    const value = settlement.payload.decode<{ code?: unknown }>();
    return typeof value?.code === 'string' ? value.code : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `command` names an executable file: a path (relative to `cwd`), or a name on the base PATH. */
function isResolvable(command: string, cwd: string): boolean {
  const executable = (path: string): boolean => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (command.includes('/')) return executable(isAbsolute(command) ? command : resolve(cwd, command));
  return (baseEnv().PATH ?? '').split(delimiter).some((directory) => directory !== '' && executable(join(directory, command)));
}
