/**
 * `GET /v1/trees/{rootId}`, `GET …/snapshot` (ETag = digest), `POST …/capture`, `POST …/restore`
 * and `DELETE /v1/trees/{rootId}` (`?purge=true` on a finished tree also deletes persistence).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import type { SnapshotView } from '../../src/server/host.js';
import { problemResponses } from '../problem-details.js';
import { NoQuery, ref, TreeParams, wire } from '../shared.js';
import { CaptureQuery, ReleaseQuery, RestoreQuery, RestoreRequest, SnapshotHeaders, Tree, TreeSnapshot } from './schemas.js';

export { treeComponents } from './schemas.js';

/** Operations whose body may be absent (documented `required: false`). */
export const treeBodyOptionalOperations: ReadonlySet<string> = new Set(['restoreTree']);

function etagOf(digest: string): string {
  return `"${digest}"`;
}

/** The snapshot's canonical text is sent verbatim: re-serialising would lose its number lexemes. */
function sendSnapshot(reply: FastifyReply, snapshot: SnapshotView): FastifyReply {
  return reply.code(200).header('etag', etagOf(snapshot.digest)).type('application/json; charset=utf-8').send(snapshot.json);
}

const snapshotResponse = {
  description: 'The snapshot; `ETag` is its digest.',
  headers: { etag: { type: 'string', description: 'The snapshot digest, quoted.' } },
  content: { 'application/json': { schema: ref(TreeSnapshot) } },
};

const trees: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/trees/:rootId',
    {
      schema: {
        operationId: 'getTree',
        tags: ['trees'],
        summary: 'Inspect a tree',
        params: TreeParams,
        querystring: NoQuery,
        response: { 200: { description: 'The tree.', ...ref(Tree) }, ...problemResponses('tree_not_found') },
      },
    },
    async (request) => wire(await app.host.inspectTree(request.params.rootId)),
  );

  app.get(
    '/v1/trees/:rootId/snapshot',
    {
      schema: {
        operationId: 'getTreeSnapshot',
        tags: ['trees'],
        summary: 'The authoritative stored head',
        params: TreeParams,
        querystring: NoQuery,
        headers: SnapshotHeaders,
        response: {
          200: snapshotResponse,
          304: { description: 'Unchanged since the `If-None-Match` ETag.', type: 'null' },
          ...problemResponses('tree_not_found'),
        },
      },
    },
    async (request, reply) => {
      const snapshot = await app.host.snapshot(request.params.rootId);
      const offered = request.headers['if-none-match'];
      if (offered !== undefined && offered.split(',').some((tag) => tag.trim() === etagOf(snapshot.digest))) {
        return reply.code(304).header('etag', etagOf(snapshot.digest)).send();
      }
      return sendSnapshot(reply, snapshot);
    },
  );

  app.post(
    '/v1/trees/:rootId/capture',
    {
      schema: {
        operationId: 'captureTree',
        tags: ['trees'],
        summary: 'Quiesce at safe boundaries and commit the cut',
        description:
          'Waits for in-flight Effects to settle (new Steps and dispatches are held meanwhile), then answers the acknowledged head. ' +
          'Past `waitMs` the hold is lifted and the answer is 409 `tree_busy`: nothing changed, the tree runs on.',
        params: TreeParams,
        querystring: CaptureQuery,
        response: {
          200: snapshotResponse,
          ...problemResponses('tree_not_found', 'tree_not_active', 'tree_busy'),
        },
      },
    },
    async (request, reply) => sendSnapshot(reply, await app.host.captureTree(request.params.rootId, request.query.waitMs)),
  );

  app.post(
    '/v1/trees/:rootId/restore',
    {
      schema: {
        operationId: 'restoreTree',
        tags: ['trees'],
        summary: 'Take the tree over from its stored head',
        description:
          'A new incarnation fences the previous writer. Restoring a tree this server already owns returns it as it is. With other nodes on the same Redis, a tree a live other node owns is restored there (the request is forwarded) unless `force=true`; a tree whose owner\'s lease is gone is taken over here. ' +
          'A finished tree that no server holds is restored as well: its log gains `agent.process.restored` events after its end, which a stream that already ended at the finish does not deliver (a new stream does). Reads, signals and controls need no restore for a finished tree (they answer from its head). ' +
          'A tree whose deployment version this node does not hold is refused with `deployment_drift`; `{"allowDrift": true}` moves it on to a successor tree instead (the answer is this tree, superseded, naming the successor).',
        params: TreeParams,
        querystring: RestoreQuery,
        body: ref(RestoreRequest),
        response: {
          200: { description: 'The restored tree (or, moved on, this tree superseded by its successor).', ...ref(Tree) },
          ...problemResponses(
            'tree_not_found',
            'tree_owned_elsewhere',
            'node_lease_lost',
            'owner_unreachable',
            'deployment_not_found',
            'deployment_drift',
            'deployment_drift_undecidable',
            'deployment_drift_refused',
            'tree_superseded',
            'process_finished',
            'schema_validation_failed',
          ),
        },
      },
      // A body-less POST (`curl -X POST …/restore`) means `{}`.
      preValidation: async (request) => {
        if (request.body === undefined) (request as { body: unknown }).body = {};
      },
    },
    async (request) =>
      wire(
        await app.host.restoreTree(request.params.rootId, {
          force: request.query.force ?? false,
          allowDrift: request.body.allowDrift ?? false,
          ...(request.principal === undefined ? {} : { actor: request.principal.keyId }),
        }),
      ),
  );

  app.delete(
    '/v1/trees/:rootId',
    {
      schema: {
        operationId: 'releaseTree',
        tags: ['trees'],
        summary: "Release a tree from this runtime's memory",
        description: 'Never deletes persistence, except `?purge=true` on a finished tree, which also deletes its stored head and log.',
        params: TreeParams,
        querystring: ReleaseQuery,
        response: {
          204: { description: 'Released (and purged when asked).', type: 'null' },
          ...problemResponses('tree_not_found', 'tree_live', 'tree_owned_elsewhere'),
        },
      },
    },
    async (request, reply) => {
      await app.host.releaseTree(request.params.rootId, request.query.purge ?? false);
      return reply.code(204).send();
    },
  );
};

export default trees;
