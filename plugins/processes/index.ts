/**
 * Processes: `POST /v1/processes` (idempotent with `Idempotency-Key`), `GET /v1/processes`,
 * `GET /v1/processes/{id}`, its direct children `GET /v1/processes/{id}/children`, and the result
 * long poll `GET /v1/processes/{id}/result?waitMs=`.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses, withPointerBase } from '../problem-details.js';
import { NoQuery, ProcessParams, processPath, ref, wire } from '../shared.js';
import {
  ListProcessesQuery,
  Process,
  ProcessChildren,
  ProcessPage,
  Result,
  ResultPending,
  ResultQuery,
  StartHeaders,
  StartProcessRequest,
} from './schemas.js';

export { processComponents } from './schemas.js';

const processes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/v1/processes',
    {
      schema: {
        operationId: 'startProcess',
        tags: ['processes'],
        summary: 'Start a root process',
        querystring: NoQuery,
        description:
          'Validates the input against the deployment input schema and commits the start checkpoint before answering. ' +
          'With `Idempotency-Key`, a repeated request with the same body returns the same process (200), from any server ' +
          'of a deployment sharing one Redis: a key starts at most one process. While another start with the key is still ' +
          'unfinished, the request waits a few seconds for it, then answers 409 `idempotency_key_in_progress` (retry to get ' +
          'that process).',
        headers: StartHeaders,
        body: ref(StartProcessRequest),
        response: {
          200: { description: 'An earlier start with the same Idempotency-Key and body: that process.', ...ref(Process) },
          201: {
            description: 'Started; `Location` names the process.',
            headers: { location: { type: 'string', description: 'The path of the new process.' } },
            content: { 'application/json': { schema: ref(Process) } },
          },
          ...problemResponses(
            'deployment_not_found',
            'authority_exceeded',
            'idempotency_key_conflict',
            'idempotency_key_in_progress',
            'schema_validation_failed',
            'payload_too_large',
            'unsupported_media_type',
          ),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const outcome = await withPointerBase('/body/input', () =>
        app.host.startProcess(
          {
            deployment: body.deployment,
            input: body.input as never,
            ...(body.budget === undefined ? {} : { budget: body.budget }),
            ...(body.treeLimits === undefined ? {} : { treeLimits: body.treeLimits }),
            ...(body.capabilities === undefined ? {} : { capabilities: body.capabilities }),
            // The tree belongs to the caller's tenant (authentication on).
            ...(request.principal === undefined ? {} : { tenant: request.principal.tenant }),
          },
          request.headers['idempotency-key'],
        ),
      );
      const view = wire(outcome.process);
      if (!outcome.created) return reply.code(200).send(view);
      return reply.code(201).header('location', processPath(view.processId)).send(view);
    },
  );

  app.get(
    '/v1/processes',
    {
      schema: {
        operationId: 'listProcesses',
        tags: ['processes'],
        summary: 'List root processes, newest first',
        querystring: ListProcessesQuery,
        response: { 200: { description: 'One page of root processes.', ...ref(ProcessPage) }, ...problemResponses() },
      },
    },
    async (request) => {
      const { status, deployment, limit, cursor, startedAfter, startedBefore, hasUnknown, hasOpenGate } = request.query;
      const page = await app.host.listProcesses({
        ...(hasUnknown === undefined ? {} : { hasUnknown: hasUnknown === 'true' }),
        ...(hasOpenGate === undefined ? {} : { hasOpenGate: hasOpenGate === 'true' }),
        ...(startedAfter === undefined ? {} : { startedAfter: Date.parse(startedAfter) }),
        ...(startedBefore === undefined ? {} : { startedBefore: Date.parse(startedBefore) }),
        ...(status === undefined ? {} : { status }),
        ...(deployment === undefined ? {} : { deployment }),
        ...(limit === undefined ? {} : { limit }),
        ...(cursor === undefined ? {} : { cursor }),
        ...(request.principal === undefined ? {} : { tenant: request.principal.tenant }),
      });
      return wire(page);
    },
  );

  app.get(
    '/v1/processes/:id',
    {
      schema: {
        operationId: 'getProcess',
        tags: ['processes'],
        summary: 'Inspect one process',
        params: ProcessParams,
        querystring: NoQuery,
        response: { 200: { description: 'The process.', ...ref(Process) }, ...problemResponses('process_not_found') },
      },
    },
    async (request) => wire(await app.host.inspectProcess(request.params.id)),
  );

  app.get(
    '/v1/processes/:id/children',
    {
      schema: {
        operationId: 'getProcessChildren',
        tags: ['processes'],
        summary: "A process's direct children",
        description: 'Each child is a process of the same tree: control, signal and inspect it by its own id.',
        params: ProcessParams,
        querystring: NoQuery,
        response: { 200: { description: 'The direct children.', ...ref(ProcessChildren) }, ...problemResponses('process_not_found') },
      },
    },
    async (request) => wire(await app.host.children(request.params.id)),
  );

  app.get(
    '/v1/processes/:id/result',
    {
      schema: {
        operationId: 'getProcessResult',
        tags: ['processes'],
        summary: 'Await the terminal result (long poll)',
        description: 'Waits up to `waitMs` (0..60000, default 0) for the terminal result; 202 with the current status when it is not terminal yet.',
        params: ProcessParams,
        querystring: ResultQuery,
        response: {
          200: { description: 'The terminal result.', ...ref(Result) },
          202: { description: 'Not terminal when the wait ended.', ...ref(ResultPending) },
          ...problemResponses('process_not_found'),
        },
      },
    },
    async (request, reply) => {
      const processId = request.params.id;
      const gone = new AbortController();
      const onClose = (): void => {
        if (!reply.raw.writableEnded) gone.abort();
      };
      reply.raw.once('close', onClose);
      try {
        const poll = await app.host.awaitResult(processId, request.query.waitMs ?? 0, gone.signal);
        if (poll.done) return reply.code(200).send(wire(poll.result));
        const next =
          poll.work === 'inactive'
            ? {
                code: 'tree_not_active',
                detail: `no runtime in this server owns tree ${poll.rootId}, so the process will not move: restore it (POST /v1/trees/${poll.rootId}/restore), then wait again`,
              }
            : null;
        return reply.code(202).send({ processId, rootId: poll.rootId, status: poll.status, work: poll.work, next });
      } finally {
        reply.raw.off('close', onClose);
      }
    },
  );
};

export default processes;
