/**
 * `POST /v1/processes/{id}/pause|resume|cancel|kill`: control intents, answered 202 only once the
 * intent is in the authoritative head (it survives any crash); storage down is 503.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ControlAction } from '../../src/server/host.js';
import { problemResponses } from '../problem-details.js';
import { agencyOf, controlScopeOf } from '../request-agency.js';
import { NoQuery, ProcessParams, TreeParams, ref, wire } from '../shared.js';
import { BulkControlRequest, BulkControlResult, ControlAccepted, ControlRequest, TreeControlAccepted, controlActions } from './schemas.js';

export { controlComponents } from './schemas.js';

/** Operations whose body may be absent (documented `required: false`). */
export const bodyOptionalOperations: ReadonlySet<string> = new Set(controlActions.flatMap((action) => [`${action}Process`, `${action}Tree`]));

const treeSummaries: Record<ControlAction, string> = {
  pause: 'Pause every process of a tree',
  resume: 'Resume every paused process of a tree',
  cancel: 'Cancel a whole tree',
  kill: 'Kill a whole tree',
};

const treeAccepted =
  'One commit recorded the intent on every live process of the tree (children still in admission included) before any was signalled: ' +
  'the root as the host\'s intent, descendants as their parent\'s (`parent_cancellation`). 202: it is in the authoritative head and survives any crash; ' +
  'each process then pauses or ends at its own boundary. While a pause, cancel or kill is landing, a child start in the tree settles failed with ' +
  '`engine.child.interrupt_pending` (signals still queue).';

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
        await app.host.control(processId, action, request.body.reason, { agency: agencyOf(request) });
        return reply.code(202).send({ processId, action });
      },
    );
  }

  for (const action of controlActions) {
    app.post(
      `/v1/trees/:rootId/${action}`,
      {
        schema: {
          operationId: `${action}Tree`,
          tags: ['control'],
          summary: treeSummaries[action],
          params: TreeParams,
          querystring: NoQuery,
          body: ref(ControlRequest),
          response: {
            200: { description: 'No process of the tree had anything to change (`affected: 0`); nothing was committed.', ...ref(TreeControlAccepted) },
            202: { description: treeAccepted, ...ref(TreeControlAccepted) },
            ...problemResponses(
              'tree_not_found',
              'tree_not_active',
              'tree_owned_elsewhere',
              'payload_too_large',
              'unsupported_media_type',
              'committer_unavailable',
              'runtime_stopped',
            ),
          },
        },
        preValidation: async (request) => {
          if (request.body === undefined) (request as { body: unknown }).body = {};
        },
      },
      async (request, reply) => {
        const outcome = await app.host.controlTree(request.params.rootId, action, request.body.reason, { agency: agencyOf(request), scope: controlScopeOf(request) });
        return reply.code(outcome.affected === 0 ? 200 : 202).send(outcome);
      },
    );
  }

  // `::` is Fastify's escape for a literal colon (a single one would start a path parameter).
  app.post(
    '/v1/processes::bulk',
    {
      schema: {
        operationId: 'bulkControlProcesses',
        tags: ['control'],
        summary: 'Pause, resume, cancel or kill every tree whose root matches a filter',
        description:
          'Applies the action tree by tree to the root processes the filter matches, as `POST /v1/trees/{rootId}/{action}` would (one commit per tree). ' +
          'One call covers at most 100 roots of the process list (newest first); `truncated` and `nextCursor` say where the next call continues. ' +
          '`dryRun: true` reads the same roots and changes nothing. With several nodes, the call covers every node: a tree another live node owns ' +
          'is controlled by that node (forwarded to it, one hop, as `POST /v1/trees/{rootId}/{action}` is), a tree no live node owns is restored ' +
          'where the call landed; each tree that could not be controlled is listed in `failed` with its problem code.',
        querystring: NoQuery,
        body: ref(BulkControlRequest),
        response: {
          200: { description: 'What matched, and what was done to it.', ...ref(BulkControlResult) },
          ...problemResponses('invalid_request', 'payload_too_large', 'unsupported_media_type'),
        },
      },
    },
    async (request) =>
      wire(
        await app.host.bulkControl(
          {
            ...request.body,
            action: request.body.action as ControlAction,
            // Only the caller's tenant's trees (authentication on).
            ...(request.principal === undefined ? {} : { tenant: request.principal.tenant }),
          },
          {
            agency: agencyOf(request),
            // A tree another live node owns is controlled there (one hop, as the tree routes are forwarded).
            forward: app.forwardTreeControl(request, agencyOf(request)),
          },
        ),
      ),
  );
};

export default control;
