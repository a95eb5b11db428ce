import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import { createLogger } from './logger.js';
import { ConfigError, loadConfig, redactUrl, redisTargetOf, type ServerConfig } from '../server/config.js';
import { EngineHost } from '../server/engine-host.js';
import { closeRedis, connectRedis } from '../store/redis/connection.js';
import { keysCommand, keysUsage } from './auth/keys-command.js';
import { modelServerCommand } from './model-server-command.js';
import { loadDeploymentsModule } from './deployments-module.js';
import type { DeploymentEntry } from '../server/catalog.js';
import { ProcessDispatchers } from './process-dispatchers.js';
import { loadClusterSecret, NodeTokens } from './auth/node-tokens.js';
import { startWorker, type RunningWorker } from './worker.js';
import type { Deployment } from '../kernel/index.js';
import { startServerModel } from '../server/model/server-model.js';
import { sharedAbortController } from '../store/shared-abort.js';

/**
 * `scope serve [--no-demos]`: reads the configuration from the environment (config.ts), builds the
 * Host and the app, listens, and shuts down on SIGTERM/SIGINT in ordered phases within
 * `SCOPE_SHUTDOWN_MS` (src/server/shutdown.ts; more signals join that one teardown).
 */

const usage = `usage: scope serve [--no-demos] | scope worker
       scope keys create --scopes <scope,...> [--tenant <t>] [--id <name>]
       scope model-server [--port <n>] [--host <address>] [--script <file.json>]

  serve        start the HTTP/SSE server (configuration from the environment, see README)
  worker       execute Effects from the BullMQ queues (SCOPE_REDIS_URL or SCOPE_REDIS_CLUSTER; see docs/transport.md)
  keys create  make an API key (printed once) and its entry for SCOPE_API_KEYS_FILE
  model-server run the scripted OpenAI-compatible model server (see docs/models.md)
  --no-demos   do not register the demo deployments (same as SCOPE_DEMOS=off)
  --help       print this help`;

/** Extra time past the shutdown deadline before the process exits anyway. */
const exitGraceMs = 2_000;

export interface RunningServer {
  readonly config: ServerConfig;
  readonly host: EngineHost;
  readonly url: string;
  /** Graceful shutdown (what SIGTERM does), without exiting the process. */
  stop(): Promise<void>;
}

/** Parses argv; returns the options or a usage error message. */
export function parseArguments(argv: readonly string[]): { command: 'serve' | 'worker' | 'help'; demos: boolean | undefined } | { error: string } {
  let command: 'serve' | 'worker' | 'help' | undefined;
  let demos: boolean | undefined;
  for (const argument of argv) {
    if (argument === 'serve' && command === undefined) command = 'serve';
    else if (argument === 'worker' && command === undefined) command = 'worker';
    else if (argument === '--no-demos') demos = false;
    else if (argument === '--help' || argument === '-h') command = 'help';
    else return { error: `unknown argument ${JSON.stringify(argument)}` };
  }
  if (command === undefined) return { error: 'missing command' };
  return { command, demos };
}

/** Builds and starts the server; resolves once it listens. */
export async function serve(options: { config: ServerConfig; logger: Logger }): Promise<RunningServer> {
  const { config, logger } = options;
  // The example agents' model endpoint: the configured one, or the scripted server in-process.
  const model = await startServerModel(config.model);
  const processes = new ProcessDispatchers({ supervisor: config.processSupervisor });
  const shutdown = sharedAbortController();
  const stopProcesses = async (deadlineMs: number): Promise<void> => {
    shutdown.abort();
    await processes.close(deadlineMs);
    await model.close();
  };
  let deployments: DeploymentEntry[] = [];
  try {
    if (config.deploymentsModule !== undefined) deployments = await loadDeploymentsModule(config.deploymentsModule, { shutdown: shutdown.signal, processes, model: model.options });
  } catch (error) {
    await stopProcesses(0);
    throw error;
  }
  // The guards' shared counters (rate limits, streams per key) hold across nodes on one Redis.
  const guardsRedis =
    config.mode === 'redis' && (config.rateLimit !== undefined || config.auth.mode === 'on')
      ? connectRedis(redisTargetOf(config), { name: 'scope-guards', onError: (error) => logger.warn({ err: error }, 'guards: Redis connection error') })
      : undefined;
  // With authentication on, nodes of one Redis accept each other's tokens for the work they forward on their own behalf.
  let nodeTokens: NodeTokens | undefined;
  if (guardsRedis !== undefined && config.auth.mode === 'on') {
    try {
      nodeTokens = new NodeTokens(await loadClusterSecret(guardsRedis, config.keyPrefix));
    } catch (error) {
      await closeRedis(guardsRedis, 0);
      await stopProcesses(0);
      throw error;
    }
  }
  const host: EngineHost = new EngineHost({
    config,
    deployments,
    model: model.options,
    logger: logger.child({ component: 'host' }),
    joinsCluster: config.mode === 'redis',
    // With the BullMQ transport the workers run the commands; this process never does.
    ...(config.transport === 'bullmq' ? {} : { readinessChecks: () => processes.checks() }),
    ...(nodeTokens === undefined ? {} : { nodeCredential: (tenant: string): string => (nodeTokens as NodeTokens).mint(host.nodeId, tenant) }),
  });
  processes.registerMetrics(host.telemetry.registry);
  // The app does not close the Host: stop() runs the Host's shutdown phases with the app's parts in them.
  const app = await buildApp({ host, config: { ...config, closeHost: false }, logger, ...(guardsRedis === undefined ? {} : { redis: guardsRedis }), ...(nodeTokens === undefined ? {} : { nodeTokens }) });
  if (guardsRedis !== undefined) app.addHook('onClose', async () => closeRedis(guardsRedis, 1_000));
  let url: string;
  try {
    url = await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await host.close(0).catch(() => undefined);
    if (guardsRedis !== undefined) await closeRedis(guardsRedis, 0);
    await stopProcesses(0);
    throw error;
  }
  try {
    // Redis mode: join the nodes on this Redis (lease, routing by owner record, takeovers).
    await host.startNode(url);
  } catch (error) {
    await app.close().catch(() => undefined);
    if (guardsRedis !== undefined) await closeRedis(guardsRedis, 0);
    await stopProcesses(0);
    throw error;
  }
  logger.info(
    { url, mode: config.mode, node: host.nodeId, redis: config.redisCluster?.map(redactUrl).join(',') ?? (config.redisUrl === undefined ? undefined : redactUrl(config.redisUrl)), demos: config.demos, auth: config.auth.mode, model: config.model.baseUrl === undefined ? `${config.model.model} (scripted, in-process)` : `${config.model.model} at ${redactUrl(config.model.baseUrl)}` },
    `scope listening on ${url} (${config.mode} mode)`,
  );
  if (config.auth.mode === 'off') {
    logger.warn({ host: config.host }, 'authentication is off: anyone who can reach this address can do everything (set SCOPE_AUTH=keys to require API keys)');
  }
  let stopping: Promise<void> | undefined;
  return {
    config,
    host,
    url,
    stop() {
      // The ordered phases (src/server/shutdown.ts): the supervisor's processes close once the Host
      // aborted its dispatches; the HTTP listener closes after the streams ended and the lease went,
      // just before the Redis connections.
      stopping ??= host.close(config.shutdownMs, {
        abortDispatches: (_signal, boundMs) => stopProcesses(boundMs),
        closeConnections: () => app.close(),
      });
      return stopping;
    },
  };
}

/** The CLI entry: never throws; sets `process.exitCode` (2 for usage or configuration errors). */
export async function main(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (argv[0] === 'model-server') {
    process.exitCode = await modelServerCommand(argv.slice(1), (text) => process.stdout.write(text));
    return;
  }
  if (argv[0] === 'keys') {
    const outcome = keysCommand(argv.slice(1), (text) => process.stdout.write(text));
    if (outcome.error !== undefined) process.stderr.write(`scope: ${outcome.error}\n${keysUsage}\n`);
    process.exitCode = outcome.exitCode;
    return;
  }
  const parsed = parseArguments(argv);
  if ('error' in parsed) {
    process.stderr.write(`scope: ${parsed.error}\n${usage}\n`);
    process.exitCode = 2;
    return;
  }
  if (parsed.command === 'help') {
    process.stdout.write(`${usage}\n`);
    return;
  }
  let config: ServerConfig;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`scope: ${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    throw error;
  }
  if (parsed.demos === false) config = { ...config, demos: false };
  const logger = createLogger(config.logLevel);
  if (parsed.command === 'worker') {
    await runWorker(config, logger);
    return;
  }
  let server: RunningServer;
  try {
    server = await serve({ config, logger });
  } catch (error) {
    logger.fatal({ err: error }, 'scope could not start');
    process.exitCode = 1;
    return;
  }

  exitOnSignals(logger, config.shutdownMs, 'shutting down', () => server.stop());
}

/** `scope worker` until SIGTERM/SIGINT: stop taking jobs, abort running attempts after `SCOPE_SHUTDOWN_MS`, exit. */
async function runWorker(config: ServerConfig, logger: Logger): Promise<void> {
  if (config.mode !== 'redis') {
    process.stderr.write('scope: scope worker needs SCOPE_REDIS_URL or SCOPE_REDIS_CLUSTER\n');
    process.exitCode = 2;
    return;
  }
  let worker: RunningWorker;
  try {
    worker = await startWorker({ config, logger });
  } catch (error) {
    logger.fatal({ err: error }, 'scope worker could not start');
    process.exitCode = 1;
    return;
  }
  exitOnSignals(logger, config.shutdownMs, 'worker shutting down', () => worker.stop(config.shutdownMs));
}

/**
 * SIGTERM/SIGINT: run `stop` and exit 0 when it is done (1 if it fails); the deadline plus a grace
 * passing exits 1 at once. Later signals join the one teardown (each phase runs once). Shared by
 * `serve` and `worker`.
 */
function exitOnSignals(logger: Logger, deadlineMs: number, what: string, stop: () => Promise<void>): void {
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      logger.info({ signal }, 'shutdown already under way: this signal joins it');
      return;
    }
    logger.info({ signal, deadlineMs }, what);
    const hardStop = setTimeout(() => {
      logger.error('shutdown deadline passed: exiting');
      process.exit(1);
    }, deadlineMs + exitGraceMs);
    hardStop.unref();
    stop().then(
      () => {
        logger.info('shut down');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

// Run when executed directly (`tsx src/server/cli.ts serve`), not when imported by the launcher or tests.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  void main();
}
