/** `GET /v1/gates`, `GET /v1/gates/{gateId}`, `POST /v1/gates/{gateId}/answer`. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses, withPointerBase } from '../problem-details.js';
import { NoQuery, ref, wire } from '../shared.js';
import { Gate, GateAnswerOutcome, GateAnswerRequest, GateList, GateParams, GateQuery } from './schemas.js';

export { gateComponents } from './schemas.js';

const gates: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/gates',
    {
      schema: {
        operationId: 'listGates',
        tags: ['gates'],
        summary: 'Gates',
        description:
          'Open gates across nodes (read from the open-wait index, so a gate is listed only once its wait’s commit was acknowledged), ' +
          'oldest first, in pages like `/v1/waits`. With `rootId`, `state=answered|closed` lists a tree’s other gates from its head.',
        querystring: GateQuery,
        response: { 200: { description: 'A page of gates.', ...ref(GateList) }, ...problemResponses('invalid_request') },
      },
    },
    async (request) => {
      const { state, kind, deployment, rootId, cursor, limit } = request.query;
      const page = await app.host.gatePage({
        ...(state === undefined ? {} : { state: state as 'open' | 'answered' | 'closed' }),
        ...(kind === undefined ? {} : { kind: kind as 'approval' | 'form' | 'open_url' }),
        ...(deployment === undefined ? {} : { deployment }),
        ...(rootId === undefined ? {} : { rootId }),
        ...(cursor === undefined ? {} : { cursor }),
        ...(limit === undefined ? {} : { limit }),
        ...(request.principal === undefined ? {} : { tenant: request.principal.tenant }),
      });
      return { items: wire([...page.items]), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/v1/gates/:gateId',
    {
      schema: {
        operationId: 'getGate',
        tags: ['gates'],
        summary: 'One gate',
        description: 'Its state is read off the head of its tree: `answered` exactly when the head holds the answer.',
        params: GateParams,
        querystring: NoQuery,
        response: { 200: { description: 'The gate.', ...ref(Gate) }, ...problemResponses('gate_not_found') },
      },
    },
    async (request) => wire(await app.host.gate(request.params.gateId)),
  );

  app.post(
    '/v1/gates/:gateId/answer',
    {
      schema: {
        operationId: 'answerGate',
        tags: ['gates'],
        summary: 'Answer a gate (exactly once)',
        description:
          'Validated against the gate’s answer schema before anything is recorded (422 with pointers; the gate stays open). ' +
          'The answer is admitted as a signal addressed to the wait, and the gate’s answer record rides in the same commit: ' +
          'the gate is answered exactly when the head holds the answer, on every node. A second answer is 409 ' +
          '`gate_already_answered` naming when, by which provenance and actor the first came; the same `requestId` with the ' +
          'same answer is 200 again. Served by the tree’s owner (forwarded from any node).',
        params: GateParams,
        querystring: NoQuery,
        body: ref(GateAnswerRequest),
        response: {
          200: { description: 'The answer is in the head.', ...ref(GateAnswerOutcome) },
          ...problemResponses('gate_not_found', 'gate_already_answered', 'gate_closed', 'schema_validation_failed', 'tree_not_active', 'payload_too_large', 'unsupported_media_type'),
        },
      },
    },
    async (request) => {
      const { answer, requestId, actor } = request.body;
      const outcome = await withPointerBase('/body/answer', () =>
        app.host.answerGate(request.params.gateId, {
          answer: answer as never,
          requestId,
          // With authentication on, who answered is the principal, whatever the body says.
          actor: request.principal?.keyId ?? actor ?? null,
        }),
      );
      return wire(outcome);
    },
  );
};

export default gates;
