/** Control intents: pause, resume, cancel, kill. */
import { Type, type TSchema } from '@sinclair/typebox';
import { statusValues } from '../../src/kernel/index.js';
import { bulkMaxTrees } from '../../src/server/host.js';
import { closedObject, nullable, ref, stringEnum } from '../shared.js';

export const controlActions = ['pause', 'resume', 'cancel', 'kill'] as const;

export const ControlRequest = closedObject(
  { reason: Type.Optional(Type.String({ maxLength: 4096, description: 'Why; recorded with the intent and the result.' })) },
  { $id: 'ControlRequest', description: 'A control intent. An absent body means `{}`.', example: { reason: 'operator request' } },
);

export const ControlAccepted = closedObject(
  {
    processId: Type.String(),
    action: stringEnum(controlActions),
  },
  { $id: 'ControlAccepted', description: 'The intent is in the authoritative head (it survives a crash); watch the process for its effect.' },
);

export const TreeControlAccepted = closedObject(
  {
    rootId: Type.String(),
    action: stringEnum(controlActions),
    affected: Type.Integer({ minimum: 0, description: 'Processes of the tree the control changed in its one commit; 0: none was live to change, nothing was committed.' }),
  },
  { $id: 'TreeControlAccepted', description: 'The tree-wide intent is in the authoritative head for every process it names (it survives a crash).' },
);

export const BulkFilter = closedObject(
  {
    status: Type.Optional(stringEnum(statusValues, { description: 'Only roots with this status (as `GET /v1/processes?status=`).' })),
    deployment: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Only roots of this deployment.' })),
    startedFrom: Type.Optional(Type.String({ format: 'date-time', description: 'Only roots started at or after this instant.' })),
    startedBefore: Type.Optional(Type.String({ format: 'date-time', description: 'Only roots started before this instant.' })),
    hasUnknown: Type.Optional(Type.Boolean({ description: 'Only trees that have (true) or have not (false) an effect whose outcome is Unknown (as `GET /v1/processes?hasUnknown=`).' })),
    hasOpenGate: Type.Optional(Type.Boolean({ description: 'Only trees that have (true) or have not (false) an open gate (as `GET /v1/processes?hasOpenGate=`).' })),
  },
  { $id: 'BulkFilter', description: 'Which root processes (trees) to act on: the process list\'s filters and a start-time range. `{}` matches every root.' },
);

export const BulkControlRequest = closedObject(
  {
    filter: ref(BulkFilter),
    action: stringEnum(controlActions),
    dryRun: Type.Optional(Type.Boolean({ description: 'Count the matching trees and change nothing (default false).' })),
    reason: Type.Optional(Type.String({ maxLength: 4096, description: 'Recorded with every intent.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: bulkMaxTrees, description: `Roots of the list this call covers (default and maximum ${bulkMaxTrees}).` })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'A previous answer\'s `nextCursor`: continue after the roots it covered.' })),
  },
  { $id: 'BulkControlRequest', example: { filter: { deployment: 'demo.sleep', status: 'running' }, action: 'cancel', dryRun: true } },
);

export const BulkControlResult = closedObject(
  {
    action: stringEnum(controlActions),
    dryRun: Type.Boolean(),
    matched: Type.Integer({ minimum: 0, description: 'Roots the filter matched in the part of the list this call covered.' }),
    affected: Type.Integer({ minimum: 0, description: 'Trees the control changed (0 on a dry run).' }),
    processesAffected: Type.Integer({ minimum: 0, description: 'Processes changed across those trees.' }),
    skipped: Type.Integer({ minimum: 0, description: 'Matched trees with nothing to change (already paused, already ending …).' }),
    failed: Type.Array(
      closedObject({ rootId: Type.String(), code: Type.String({ description: 'The problem code the tree\'s control answered.' }), message: Type.String() }),
      { description: 'Matched trees the control failed on.' },
    ),
    truncated: Type.Boolean({ description: 'The list goes on past this call: call again with `cursor: nextCursor`.' }),
    nextCursor: nullable(Type.String()),
  },
  { $id: 'BulkControlResult', description: 'What a bulk control matched and did. A dry run\'s `matched` is what a real run with the same filter and cursor acts on.' },
);

export const controlComponents: readonly TSchema[] = [ControlRequest, ControlAccepted, TreeControlAccepted, BulkFilter, BulkControlRequest, BulkControlResult];
