/** Trees: inspection, the authoritative stored head, capture, restore, release. */
import { Type, type TSchema } from '@sinclair/typebox';
import { Process } from '../processes/schemas.js';
import { closedObject, nullable, ref, stringEnum } from '../shared.js';

export const Succession = closedObject(
  {
    successorId: Type.Union([Type.String(), Type.Null()], { description: "The successor's root id (null while the move-on is unfinished: repeat it to finish)." }),
    reason: Type.String({ description: "The restoreDecider's reason for accepting." }),
    decidedAt: Type.String({ description: 'When the move-on was decided (RFC 3339).' }),
    fromRef: Type.String({ description: "The superseded tree's deployment version." }),
    toRef: Type.String({ description: "The successor's deployment version." }),
    differs: Type.Array(Type.String(), { description: 'The DeploymentRef members in which the two versions differ.' }),
  },
  { $id: 'Succession', description: 'A drifted tree moved on to a successor tree on the current version.' },
);

export const Tree = closedObject(
  {
    rootId: Type.String(),
    incarnationId: Type.String({ description: 'The writer generation; a restore mints a new one and fences the previous writer.' }),
    headDigest: Type.String({ description: 'Digest of the authoritative stored head.' }),
    commitPending: Type.Boolean(),
    freeze: stringEnum(['none', 'acquiring', 'held']),
    stopped: Type.Boolean({ description: 'The writer stopped with a RuntimeError.' }),
    fault: nullable(
      closedObject(
        {
          code: Type.String({ description: 'The stopped writer\'s classification, e.g. `engine.tree.committer_failed`.' }),
          message: Type.String({ description: 'What failed.' }),
          since: Type.String({ description: 'When the writer stopped.' }),
          incarnationId: Type.String({ description: 'The incarnation that stopped; a restore (a new incarnation) clears the fault.' }),
        },
        {
          description:
            'The first persistence fault of this tree, latched (README "Persistence faults"): until a restore installs a new incarnation, ' +
            'signals, control and effect resolutions answer 503 `runtime_stopped` and long polls wake with it; reads go on. ' +
            'The owner restores the tree by itself once storage answers. Null when the tree runs normally.',
        },
      ),
    ),
    active: Type.Boolean({ description: 'A runtime in this server owns the tree (false: served from the stored head).' }),
    processes: Type.Array(ref(Process), { description: 'One entry per process of the tree.' }),
    supersededBy: Type.Union([ref(Succession), Type.Null()], {
      description: 'Set when the tree was moved on to a successor tree on another deployment version: it was cancelled by the same commit and never runs again (docs/deployment-versions.md).',
    }),
    predecessorId: Type.Union([Type.String(), Type.Null()], { description: 'The tree this one succeeded (a drifted tree moved on), or null.' }),
    policyBreaker: Type.Optional(
      closedObject(
        {
          consecutiveFailures: Type.Integer({ minimum: 0, description: 'Gate policy failures in a row in this tree (a throw, an invalid answer, a refused delivery).' }),
          tripped: Type.Boolean({ description: 'Tripped after `SCOPE_POLICY_BREAKER_FAILURES` failures in a row: no gate policy runs in this tree on this owner any more.' }),
          trippedAt: nullable(Type.String({ description: 'When it tripped.' })),
          lastFailure: nullable(Type.String({ description: 'The rule and cause of the last failure.' })),
        },
        { description: 'The tree’s gate policy breaker on its owner (README "Gates"); absent until a policy of the tree failed there.' },
      ),
    ),
    controls: Type.Optional(
      Type.Array(
        closedObject({
          action: stringEnum(['pause', 'resume', 'cancel', 'kill']),
          scope: stringEnum(['process', 'tree', 'bulk'], { description: '`POST /v1/processes/{id}/…`, `POST /v1/trees/{rootId}/…` or `POST /v1/processes:bulk`.' }),
          processId: Type.String({ description: 'The process addressed (the root for tree-wide and bulk controls).' }),
          agency: stringEnum(['user', 'machine'], { description: 'Set by the server: `user` for an HTTP caller, `machine` for the server’s own (as for signals).' }),
          at: Type.String({ description: 'When the server admitted it (RFC 3339).' }),
        }),
        {
          description:
            'The tree’s admitted controls (the last 100, oldest first), each written in the very commit that recorded it. ' +
            'Absent on a resident tree until its owner has read them (the first view asks storage in the background).',
        },
      ),
    ),
  },
  { $id: 'Tree', description: 'Inspection of one process tree.' },
);

export const TreeSnapshot = Type.Object(
  {},
  {
    $id: 'TreeSnapshot',
    additionalProperties: true,
    description: 'The canonical TreeSnapshot JSON (docs/wire-format.md), exactly as stored; its digest is the ETag.',
  },
);

export const ReleaseQuery = closedObject({
  purge: Type.Optional(
    Type.Boolean({ description: 'On a finished tree, also delete its stored head and log.', example: false }),
  ),
});

export const CaptureQuery = closedObject({
  waitMs: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 60_000, description: 'How long to wait for in-flight Effects to settle (default 10000); past it, 409 `tree_busy`.', example: 10000 }),
  ),
});

export const RestoreQuery = closedObject({
  force: Type.Optional(
    Type.Boolean({
      description: 'Take the tree even from a live owner node (an operator override; the fenced owner drops it and forwards from then on). Without it, a tree a live other node owns is forwarded there.',
      example: false,
    }),
  ),
});

export const RestoreRequest = closedObject(
  {
    allowDrift: Type.Optional(
      Type.Boolean({
        description:
          "Move a drifted tree (its deployment version held by no node here) on: the current version's restoreDecider decides, and an accepted tree " +
          'continues as a successor tree started from its state while this one is cancelled and superseded. Without it a drifted tree is refused with `deployment_drift`.',
        example: true,
      }),
    ),
  },
  { $id: 'RestoreRequest', description: 'Restore options. An absent body means `{}`.', example: { allowDrift: true } },
);

export const SnapshotHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String({ description: 'A previous ETag: 304 when the head has not changed.' })),
});

export const treeComponents: readonly TSchema[] = [Succession, Tree, TreeSnapshot, RestoreRequest];
