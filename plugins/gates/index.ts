/**
 * `GET /v1/gates`, `GET /v1/gates/{gateId}`, `POST /v1/gates/{gateId}/answer`; host-owned gates:
 * `POST /v1/gates`, `GET /v1/gates/{gateId}/answer`, `POST /v1/gates/{gateId}/close`,
 * `POST /v1/gates/{gateId}/callback`.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import { problemResponses, withPointerBase } from '../problem-details.js';
import { NoQuery, ref, wire } from '../shared.js';
import { AnyGate, GateAnswerOutcome, GateAnswerRequest, GateList, GateParams, GateQuery, gateComponents as processGateComponents } from './schemas.js';
import { HostGate, HostGateAnswerOutcome, HostGateAnswerPoll, HostGateAnswerQuery, HostGateCallbackQuery, HostGateCallbackRequest, hostGateComponents, HostGateOpened, HostGateOpenRequest } from './host-schemas.js';

export const gateComponents: readonly TSchema[] = [...processGateComponents, ...hostGateComponents];

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
      const { owner, state, kind, deployment, rootId, cursor, limit } = request.query;
      const page = await app.host.gatePage({
        ...(owner === undefined ? {} : { owner: owner as 'process' | 'host' }),
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
        description:
          'A process-owned gate’s state is read off the head of its tree: `answered` exactly when the head holds the answer. ' +
          'A host-owned gate’s is its record’s (`closed` once closed or expired).',
        params: GateParams,
        querystring: NoQuery,
        response: { 200: { description: 'The gate.', ...AnyGate }, ...problemResponses('gate_not_found') },
      },
    },
    async (request) => wire(await app.host.gate(request.params.gateId, request.principal?.tenant)),
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
          'same answer is 200 again. Served by the tree’s owner (forwarded from any node). ' +
          'A host-owned gate is answered the same way, exactly once across nodes, while it is neither closed nor expired (409 `gate_closed`).',
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
        }, request.principal?.tenant),
      );
      return wire(outcome);
    },
  );

  app.post(
    '/v1/gates',
    {
      schema: {
        operationId: 'openGate',
        tags: ['gates'],
        summary: 'Open a host-owned gate',
        description:
          'A question to a person from an external system, bound to no wait: `form` (answered against its JSON Schema) or ' +
          '`open_url` (a page to visit; its `callbackUrl` carries a one-time signed token). The payload is checked for its kind ' +
          'before anything is written (422 `gate_kind_mismatch` for `approval`, `gate_payload_invalid` with pointers). Counted ' +
          'against `SCOPE_GATE_MAX_PER_TENANT` and `SCOPE_GATE_MAX_OPEN` (429 `gate_capacity` with Retry-After); expires after ' +
          '`timeoutMs`. The same `requestId` with the same body returns the same gate (200).',
        querystring: NoQuery,
        body: ref(HostGateOpenRequest),
        response: {
          200: { description: 'Opened before under this request id.', ...ref(HostGateOpened) },
          201: { description: 'Opened.', ...ref(HostGateOpened) },
          ...problemResponses('gate_kind_mismatch', 'gate_payload_invalid', 'gate_capacity', 'gate_request_conflict', 'payload_too_large', 'unsupported_media_type'),
        },
      },
    },
    async (request, reply) => {
      const { kind, prompt, answerSchema, url, timeoutMs, actor, requestId } = request.body;
      const opened = await app.host.openGate({
        kind,
        ...(prompt === undefined ? {} : { prompt }),
        ...(answerSchema === undefined ? {} : { answerSchema: answerSchema as never }),
        ...(url === undefined ? {} : { url }),
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
        ...(requestId === undefined ? {} : { requestId }),
        actor: request.principal?.keyId ?? actor ?? null,
        tenant: request.principal?.tenant ?? 'default',
      });
      return reply.code(opened.created ? 201 : 200).send(wire({ gate: opened.gate, callbackUrl: opened.callbackUrl }));
    },
  );

  app.get(
    '/v1/gates/:gateId/answer',
    {
      schema: {
        operationId: 'getGateAnswer',
        tags: ['gates'],
        summary: 'A host-owned gate’s answer (long poll)',
        description:
          'For the gate’s opener: the answer once the gate is answered. With `waitMs`, waits for the answer or the close ' +
          '(woken by it, on whichever node it lands) or the gate’s expiry, at most `waitMs`; `gate.state` says which came ' +
          '(`open`: the wait ran out). After close the answer is gone: `answer` is null, `gate.answer` keeps who, when, ' +
          'provenance and digest. Process-owned gates: 409 `gate_owner_mismatch`.',
        params: GateParams,
        querystring: HostGateAnswerQuery,
        response: { 200: { description: 'The gate and its answer (null unless answered).', ...ref(HostGateAnswerPoll) }, ...problemResponses('gate_not_found', 'gate_owner_mismatch') },
      },
    },
    async (request) => wire(await app.host.pollGateAnswer(request.params.gateId, request.query.waitMs ?? 0, request.principal?.tenant)),
  );

  app.post(
    '/v1/gates/:gateId/close',
    {
      schema: {
        operationId: 'closeGate',
        tags: ['gates'],
        summary: 'Close a host-owned gate',
        description:
          'Idempotent. A closed gate takes no answer (409 `gate_closed`) and no longer counts against the caps; its answer is ' +
          'deleted (the gate keeps who answered, when, with which provenance, and the answer’s digest). Process-owned gates ' +
          'close when their wait ends: 409 `gate_owner_mismatch`.',
        params: GateParams,
        querystring: NoQuery,
        response: { 200: { description: 'The closed gate.', ...ref(HostGate) }, ...problemResponses('gate_not_found', 'gate_owner_mismatch') },
      },
    },
    async (request) => wire(await app.host.closeGate(request.params.gateId, request.principal?.tenant)),
  );

  app.post(
    '/v1/gates/:gateId/callback',
    {
      schema: {
        operationId: 'gateCallback',
        tags: ['gates'],
        summary: 'Answer an open_url gate through its callback',
        description:
          'The visited page’s answer, authorised by the one-time token in the gate’s `callbackUrl` (no bearer token needed): ' +
          'a wrong or tampered token is 401 `gate_token_invalid`, a spent one 409 `gate_token_used`, a closed or expired gate ' +
          '409 `gate_closed`. Validated against the gate’s answer schema (422 with pointers); recorded with provenance `api`.',
        params: GateParams,
        querystring: HostGateCallbackQuery,
        body: ref(HostGateCallbackRequest),
        response: {
          200: { description: 'The answer is stored.', ...ref(HostGateAnswerOutcome) },
          ...problemResponses('gate_token_invalid', 'gate_not_found', 'gate_owner_mismatch', 'gate_token_used', 'gate_already_answered', 'gate_closed', 'schema_validation_failed', 'payload_too_large', 'unsupported_media_type'),
        },
      },
    },
    async (request) => {
      const outcome = await withPointerBase('/body/answer', () => app.host.gateCallback(request.params.gateId, request.query.token, request.body.answer as never));
      return wire(outcome);
    },
  );
};

export default gates;
