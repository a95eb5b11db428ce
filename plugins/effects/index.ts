/**
 * `GET /v1/processes/{id}/effects`, and for an Unknown effect: `POST …/effects/{effectId}/replay`
 * (when its ReplayPolicy allows) and `POST …/effects/{effectId}/resolution` (host adjudication);
 * `GET /v1/effects?status=unknown`: every Unknown effect across trees, for a person to adjudicate.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses } from '../problem-details.js';
import { NoQuery, ProcessParams, ref, wire } from '../shared.js';
import { Effect, EffectList, EffectListQuery, EffectParams, EffectResolution, UnknownEffectList, UnknownEffectQuery } from './schemas.js';

export { effectComponents } from './schemas.js';

const effects: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/processes/:id/effects',
    {
      schema: {
        operationId: 'listEffects',
        tags: ['effects'],
        summary: "A process's effects",
        params: ProcessParams,
        querystring: EffectListQuery,
        response: { 200: { description: 'A page of the effects of the process, in step order.', ...ref(EffectList) }, ...problemResponses('process_not_found') },
      },
    },
    async (request) => {
      const { cursor, limit } = request.query;
      const page = await app.host.effects(request.params.id, { ...(cursor === undefined ? {} : { cursor }), ...(limit === undefined ? {} : { limit }) });
      return wire({ items: [...page.items], nextCursor: page.nextCursor });
    },
  );

  app.get(
    '/v1/effects',
    {
      schema: {
        operationId: 'listUnknownEffects',
        tags: ['effects'],
        summary: 'Every effect whose outcome is Unknown',
        description:
          'Across every tree, on any node: in Redis mode from the Unknown-outcome index (written before each commit that makes an effect Unknown, ' +
          'every entry verified against the tree\'s stored head), embedded from this server\'s trees. No log is scanned to find them. ' +
          'With each effect\'s evidence (attempts and the worker of each, diagnostic, late report). Resolve or replay each through its process.',
        querystring: UnknownEffectQuery,
        response: { 200: { description: 'A page of Unknown effects.', ...ref(UnknownEffectList) }, ...problemResponses('invalid_request') },
      },
    },
    async (request) => {
      const { cursor, limit } = request.query;
      const page = await app.host.unknownEffects({
        ...(cursor === undefined ? {} : { cursor }),
        ...(limit === undefined ? {} : { limit }),
        ...(request.principal === undefined ? {} : { tenant: request.principal.tenant }),
      });
      return wire({ items: [...page.items], nextCursor: page.nextCursor });
    },
  );

  app.post(
    '/v1/processes/:id/effects/:effectId/replay',
    {
      schema: {
        operationId: 'replayEffect',
        tags: ['effects'],
        summary: 'Replay an Unknown effect under its identity',
        description: 'Only when its ReplayPolicy allows; a replay that ends Unknown again is 502 `effect_outcome_unknown`.',
        params: EffectParams,
        querystring: NoQuery,
        response: {
          200: { description: 'The replay settled the effect.', ...ref(Effect) },
          ...problemResponses(
            'process_not_found',
            'effect_not_found',
            'effect_not_pending',
            'process_finished',
            'tree_not_active',
            'effect_replay_forbidden',
          ),
        },
      },
    },
    async (request) => wire(await app.host.replayEffect(request.params.id, request.params.effectId)),
  );

  app.post(
    '/v1/processes/:id/effects/:effectId/resolution',
    {
      schema: {
        operationId: 'resolveEffect',
        tags: ['effects'],
        summary: 'Adjudicate an Unknown effect',
        params: EffectParams,
        querystring: NoQuery,
        body: ref(EffectResolution),
        response: {
          200: { description: 'The effect is resolved.', ...ref(Effect) },
          ...problemResponses(
            'process_not_found',
            'effect_not_found',
            'effect_not_pending',
            'process_finished',
            'tree_not_active',
            'payload_too_large',
            'unsupported_media_type',
          ),
        },
      },
    },
    async (request) =>
      wire(
        await app.host.resolveEffect(request.params.id, request.params.effectId, {
          status: request.body.status as 'succeeded' | 'failed',
          payload: request.body.payload as never,
        }),
      ),
  );
};

export default effects;
