import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ProblemError } from '../../../plugins/problem-details.js';
import type { PressureConfig } from '../../server/config.js';
import { operationScopes } from '../auth/scopes.js';

/** Seconds a shed client is told to wait. */
const retryAfterSeconds = 5;

/**
 * Load shedding (`@fastify/under-pressure`): past the event-loop delay, heap or RSS bound, a request is
 * answered 503 `overloaded` with Retry-After at once, before it adds to the load, instead of every
 * request slowing down until the process falls over. Probes still answer, so an orchestrator sees a
 * node that is alive but shedding. A bound of 0 is off; nothing is installed when all are.
 */
export async function installLoadShedding(app: FastifyInstance, pressure: PressureConfig, options: { sampleIntervalMs?: number } = {}): Promise<void> {
  if (pressure.maxEventLoopDelayMs === 0 && pressure.maxHeapBytes === 0 && pressure.maxRssBytes === 0) return;
  await app.register(underPressure, {
    maxEventLoopDelay: pressure.maxEventLoopDelayMs,
    maxHeapUsedBytes: pressure.maxHeapBytes,
    maxRssBytes: pressure.maxRssBytes,
    ...(options.sampleIntervalMs === undefined ? {} : { sampleInterval: options.sampleIntervalMs }),
    pressureHandler: async (request: FastifyRequest, reply: FastifyReply, type: string, value: number | undefined) => {
      // A sample taken when the delay histogram recorded nothing yet (the sampling timer ran first after a
      // long block) reads as an infinite delay: that is no measurement, so nothing is shed for it.
      if (type === 'eventLoopDelay' && value === Number.POSITIVE_INFINITY) return;
      const operationId = (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId;
      if (operationId !== undefined && operationScopes[operationId] === 'public') return;
      reply.header('retry-after', String(retryAfterSeconds));
      throw new ProblemError('overloaded', `the server is shedding load (${type.replace(/([A-Z])/g, ' $1').toLowerCase().trim()} past its bound); retry after ${retryAfterSeconds} s`);
    },
  });
}
