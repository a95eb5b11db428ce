import type { Logger } from 'pino';
import { redisTargetOf, type ServerConfig } from '../server/config.js';
import { phaseBounds, runPhases, workerPhaseShares, type ShutdownPhase, type WorkerPhaseName } from '../server/shutdown.js';
import { demoDeployments } from '../server/demos.js';
import { closeRedis, connectRedis, duplicateRedis, type RedisClient } from '../store/redis/connection.js';
import { EffectWorker } from '../transport/bullmq/effect-worker.js';
import { checkNoEviction } from '../transport/bullmq/eviction-check.js';
import { loadDeploymentsModule } from './deployments-module.js';
import { deploymentOf } from '../server/catalog.js';
import { ProcessDispatchers } from './process-dispatchers.js';
import { type ServerModel, startServerModel } from '../server/model/server-model.js';
import { sharedAbortController } from '../store/shared-abort.js';

/**
 * `scope worker`: executes the Effects of the deployments it holds — the demos (unless SCOPE_DEMOS=off)
 * and the SCOPE_DEPLOYMENTS module, the same catalog `scope serve` registers, so a job's exact
 * DeploymentRef finds exactly its behaviour here.
 */
export interface RunningWorker {
  readonly workerId: string;
  /** Graceful stop in named phases within `totalMs`: no new jobs, running attempts finish or are aborted, connections close. */
  stop(totalMs: number): Promise<void>;
}

export async function startWorker(options: { config: ServerConfig; logger: Logger }): Promise<RunningWorker> {
  const { config, logger } = options;
  const onError = (error: Error): void => logger.warn({ err: error }, 'redis connection error');
  const redis: RedisClient = connectRedis(redisTargetOf(config), { name: 'scope-worker', onError });
  const bullConnection: RedisClient = duplicateRedis(redis, { maxRetriesPerRequest: null });
  bullConnection.on('error', onError);
  const closeAll = async (): Promise<void> => {
    await Promise.all([closeRedis(redis, 500), closeRedis(bullConnection, 500)]);
  };
  try {
    // An evicted lock or claim key means a duplicate run: refuse to work on such a Redis.
    await checkNoEviction(redis);
  } catch (error) {
    await closeAll();
    throw error;
  }
  const shutdown = sharedAbortController();
  const processes = new ProcessDispatchers({ supervisor: config.processSupervisor });
  // The same model endpoint `scope serve` gives its agents (a scripted one runs here too: it is stateless).
  let model: ServerModel | undefined;
  let deployments;
  try {
    model = await startServerModel(config.model);
    deployments = [
      ...(config.demos ? demoDeployments({ shutdown: shutdown.signal, model: model.options }) : []),
      ...(config.deploymentsModule === undefined
        ? []
        : (await loadDeploymentsModule(config.deploymentsModule, { shutdown: shutdown.signal, processes, model: model.options })).map(deploymentOf)),
    ];
  } catch (error) {
    await model?.close();
    await closeAll();
    throw error;
  }
  const serverModel = model;
  const worker = new EffectWorker({
    redis,
    bullConnection,
    keyPrefix: config.keyPrefix,
    deployments,
    concurrency: config.workerConcurrency,
    heartbeatMs: config.workerHeartbeatMs,
    // Each heartbeat says, per ref, whether this worker's commands for it can run (the API's /readyz).
    processesOf: (deployment) => processes.statusOf(deployment.dispatcher),
    timing: config.transportTiming,
    onError: (error, context) => logger.warn({ err: error, context }, 'worker error'),
    onLease: (attempt) => logger.warn({ ...attempt }, 'attempt lease lost; its dispatch is aborted and its settlement will be refused'),
    onRefused: (attempt, reason) => logger.info({ ...attempt, reason }, 'claim refused; nothing executed'),
    onSettled: (attempt, delivered) =>
      delivered ? logger.debug({ ...attempt }, 'settlement delivered') : logger.warn({ ...attempt }, 'settlement refused: the owner had declared the attempt Unknown'),
  });
  await worker.start();
  logger.info({ workerId: worker.workerId, pid: process.pid }, 'scope worker ready');
  let stopping: Promise<void> | undefined;
  return {
    workerId: worker.workerId,
    stop(totalMs: number) {
      // The worker's shutdown phases (src/server/shutdown.ts), each within its share of `totalMs`.
      const bounds = phaseBounds(workerPhaseShares, totalMs);
      const phases: ShutdownPhase<WorkerPhaseName>[] = [
        { name: 'stop_taking_jobs', run: async () => void worker.stopTaking() },
        { name: 'finish_attempts', run: () => worker.stopTaking(), left: () => ({ running: worker.running }) },
        {
          name: 'abort_attempts',
          run: async () => {
            worker.abortRunning();
            shutdown.abort();
            // The aborted attempts settle (Unknown when cut short) before the connections close.
            await Promise.all([worker.stopTaking(), processes.close(bounds.abort_attempts)]);
          },
          left: () => ({ running: worker.running }),
        },
        {
          name: 'close_connections',
          run: async () => {
            await worker.leave();
            await serverModel.close();
            await closeAll();
          },
        },
      ];
      stopping ??= runPhases(phases, bounds, logger).then(() => undefined);
      return stopping;
    },
  };
}
