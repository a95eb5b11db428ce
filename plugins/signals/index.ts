/** `POST /v1/processes/{id}/signals`: deliver an ordered, atomic batch. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses } from '../problem-details.js';
import { NoQuery, ProcessParams, ref } from '../shared.js';
import { SignalBatch, SignalOutcome } from './schemas.js';

export { signalComponents } from './schemas.js';

const signals: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/v1/processes/:id/signals',
    {
      schema: {
        operationId: 'deliverSignals',
        tags: ['signals'],
        summary: 'Deliver a batch of signals',
        description:
          'All-or-nothing: if any entry is rejected, none is admitted. To a terminal process: 409 `process_finished`, ' +
          'except a batch whose every id was already accepted with identical content (200, accepted false).',
        params: ProcessParams,
        querystring: NoQuery,
        body: ref(SignalBatch),
        response: {
          200: { description: 'The batch was admitted (or had been, entirely).', ...ref(SignalOutcome) },
          ...problemResponses(
            'process_not_found',
            'signal_conflict',
            'process_finished',
            'tree_not_active',
            'resource_limit_exceeded',
            'signal_rejected',
            'schema_validation_failed',
            'payload_too_large',
            'unsupported_media_type',
          ),
        },
      },
    },
    async (request) =>
      app.host.deliverSignals(
        request.params.id,
        request.body.signals.map((signal) => ({
          id: signal.id,
          ...(signal.waitId === undefined ? {} : { waitId: signal.waitId }),
          payload: signal.payload as never,
        })),
      ),
  );
};

export default signals;
