/**
 * `POST /v1/processes/{id}/pause|resume|cancel|kill`: control intents, answered 202 only once the
 * intent is in the authoritative head (it survives any crash); storage down is 503.
 */
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

/** What a 202 promises: the intent is in the authoritative head, so it survives any crash. */
const durable =
  'otherwise a checkpoint recording it as pending control, which every later checkpoint keeps and a restore applies before any step or dispatch. ' +
  'It survives any crash; storage that cannot take the commit is 503 `committer_unavailable` (nothing acknowledged).';
const accepted: Record<ControlAction, string> = {
  pause: `The pause is in the authoritative head: the paused checkpoint when the process can pause at once, ${durable}`,
  resume: 'The resumed state is in the authoritative head.',
  cancel: `The cancellation is in the authoritative head: the terminal checkpoint when the process can end at once, ${durable}`,
  kill: `The kill is in the authoritative head: the terminal checkpoint when the process can end at once, ${durable}`,
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
            202: { description: accepted[action], ...ref(ControlAccepted) },
            ...problemResponses(
              'process_not_found',
              'invalid_process_control',
              'process_finished',
              'tree_not_active',
              'payload_too_large',
              'unsupported_media_type',
              'committer_unavailable',
              'runtime_stopped',
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
