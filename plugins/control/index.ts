/** `POST /v1/processes/{id}/pause|resume|cancel|kill`: control intents, answered 202 once admitted. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ControlAction } from '../../src/server/host.js';
import { problemResponses } from '../problem-details.js';
import { NoQuery, ProcessParams, ref } from '../shared.js';
import { ControlAccepted, ControlRequest, controlActions } from './schemas.js';

export { controlComponents } from './schemas.js';

/** Operations whose body may be absent (documented `required: false`). */
export const bodyOptionalOperations: ReadonlySet<string> = new Set(controlActions.map((action) => `${action}Process`));

const summaries: Record<ControlAction, string> = {
  pause: 'Pause a process (at its next safe boundary)',
  resume: 'Resume a paused process',
  cancel: 'Request cancellation (the process may finish its current step)',
  kill: 'Kill a process (terminal at once, pending effects aborted)',
};

const control: FastifyPluginAsyncTypebox = async (app) => {
  for (const action of controlActions) {
    app.post(
      `/v1/processes/:id/${action}`,
      {
        schema: {
          operationId: `${action}Process`,
          tags: ['control'],
          summary: summaries[action],
          params: ProcessParams,
          querystring: NoQuery,
          body: ref(ControlRequest),
          response: {
            202: { description: 'The intent entered the runtime.', ...ref(ControlAccepted) },
            ...problemResponses(
              'process_not_found',
              'invalid_process_control',
              'process_finished',
              'tree_not_active',
              'payload_too_large',
              'unsupported_media_type',
            ),
          },
        },
        // A body-less POST (`curl -X POST …/pause`) means `{}`.
        preValidation: async (request) => {
          if (request.body === undefined) (request as { body: unknown }).body = {};
        },
      },
      async (request, reply) => {
        const processId = request.params.id;
        await app.host.control(processId, action, request.body.reason);
        return reply.code(202).send({ processId, action });
      },
    );
  }
};

export default control;
