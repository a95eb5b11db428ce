/** `GET /healthz`, `GET /readyz` (503 when not ready) and `GET /metrics` (Prometheus text). */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { serverProblemResponses } from '../problem-details.js';
import { ref, wire } from '../shared.js';
import { Health, Readiness } from './schemas.js';

export { healthComponents } from './schemas.js';

const health: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'getHealth',
        tags: ['health'],
        summary: 'Liveness',
        response: { 200: { description: 'Alive.', ...ref(Health) }, ...serverProblemResponses() },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'getReadiness',
        tags: ['health'],
        summary: 'Readiness',
        response: {
          200: { description: 'Ready.', ...ref(Readiness) },
          503: { description: 'Not ready; `checks` says why.', ...ref(Readiness) },
          ...serverProblemResponses(),
        },
      },
    },
    async (_request, reply) => {
      const readiness = wire(await app.host.readiness());
      return reply.code(readiness.ready ? 200 : 503).send(readiness);
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'getMetrics',
        tags: ['health'],
        summary: 'Prometheus metrics',
        response: {
          200: { description: 'The Prometheus text exposition.', content: { 'text/plain': { schema: Type.String() } } },
          ...serverProblemResponses(),
        },
      },
    },
    async (_request, reply) => {
      const metrics = await app.host.metrics();
      return reply.type(metrics.contentType).send(metrics.body);
    },
  );
};

export default health;
