/** `POST /v1/processes/{id}/signals`: deliver an ordered, atomic batch; `GET`: page the receipts. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses, withPointerBase } from '../problem-details.js';
import { ReceiptPage, ReceiptQuery } from '../processes/schemas.js';
import { NoQuery, ProcessParams, ref, wire } from '../shared.js';
import { SignalBatch, SignalOutcome } from './schemas.js';
import { agencyOf } from '../request-agency.js';

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
      // A refused payload points at its own entry: /body/signals/<index>/payload/…
      withPointerBase(
        (index) => `/body/signals/${index}/payload`,
        () =>
          app.host.deliverSignals(
            request.params.id,
            request.body.signals.map((signal) => ({
              id: signal.id,
              ...(signal.waitId === undefined ? {} : { waitId: signal.waitId }),
              payload: signal.payload as never,
            })),
            { agency: agencyOf(request) },
          ),
      ),
  );

  app.get(
    '/v1/processes/:id/signals',
    {
      schema: {
        operationId: 'listSignals',
        tags: ['signals'],
        summary: "A page of the process's signal receipts",
        description:
          'Every signal the mailbox holds, in arrival order (engine-minted settlements and wait openings included): ' +
          'its id, addressed wait, payload digest, whether a Step consumed it, and the payload until then.',
        params: ProcessParams,
        querystring: ReceiptQuery,
        response: { 200: { description: 'A page of receipts.', ...ref(ReceiptPage) }, ...problemResponses('process_not_found') },
      },
    },
    async (request) => {
      const { after, limit } = request.query;
      return wire(await app.host.signals(request.params.id, { ...(after === undefined ? {} : { after }), ...(limit === undefined ? {} : { limit }) }));
    },
  );
};

export default signals;
