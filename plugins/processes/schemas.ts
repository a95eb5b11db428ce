/**
 * Processes: start, list, inspect, await. The Process view and its parts (budget, limits, usage,
 * receipts, settlements, results) are named components that other resources reference too.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { failureKindValues, settlementStatusValues, statusValues, terminationCauseValues } from '../../src/kernel/index.js';
import { anyJson, closedObject, identity, nullable, qualifiedName, ref, stringEnum, timestamp } from '../shared.js';

export const Quota = closedObject(
  { maximum: nullable(Type.Integer({ minimum: 0, description: 'The bound; null means unlimited.' })) },
  { $id: 'Quota', description: 'A bound on a counter.', example: { maximum: 100 } },
);

export const Budget = closedObject(
  { steps: ref(Quota), effects: ref(Quota), signals: ref(Quota) },
  {
    $id: 'Budget',
    description: 'What one process may consume: committed steps, prepared effects, accepted signals.',
    example: { steps: { maximum: 100 }, effects: { maximum: 50 }, signals: { maximum: 50 } },
  },
);

export const TreeLimits = closedObject(
  {
    maxDepth: Type.Integer({ minimum: 0 }),
    maxChildren: ref(Quota),
    maxActiveChildren: Type.Integer({ minimum: 0 }),
    maxTreeProcesses: ref(Quota),
    maxPendingSignals: Type.Integer({ minimum: 0 }),
    maxSnapshotBytes: ref(Quota),
    maxProcessSnapshotBytes: ref(Quota),
  },
  { $id: 'TreeLimits', description: 'The designed bounds of a process tree.' },
);

export const TreeLimitsRequest = Type.Partial(TreeLimits, {
  $id: 'TreeLimitsRequest',
  additionalProperties: false,
  description: 'Tree limits to narrow; members left out keep the server grant.',
});

export const Usage = closedObject(
  {
    committedSteps: Type.Integer({ minimum: 0 }),
    preparedEffects: Type.Integer({ minimum: 0 }),
    acceptedSignals: Type.Integer({ minimum: 0 }),
    droppedDeltas: Type.Integer({ minimum: 0 }),
  },
  { $id: 'Usage', description: 'What a process has consumed so far.' },
);

export const Failure = closedObject(
  {
    kind: stringEnum(failureKindValues),
    code: Type.String({ example: 'execution.step.failed' }),
    message: Type.String(),
  },
  { $id: 'Failure', description: 'Why a process (or an effect) failed: a classified, bounded diagnostic.' },
);

export const Result = closedObject(
  {
    processId: Type.String(),
    status: stringEnum(statusValues, { description: 'A terminal status.' }),
    cause: stringEnum(terminationCauseValues),
    reason: nullable(Type.String({ description: 'The reason given with a control intent.' })),
    output: anyJson('The output (validated against the deployment output schema); null unless completed.'),
    failure: nullable(ref(Failure)),
    unresolvedEffectIds: Type.Array(Type.String(), { description: 'Effects whose outcome stayed Unknown.' }),
    startedAt: timestamp('When the process started.'),
    finishedAt: timestamp('When the terminal checkpoint was committed.'),
    usage: ref(Usage),
  },
  { $id: 'Result', description: "A process's terminal result. A failed process is data: it is returned with 200." },
);

export const Receipt = closedObject(
  {
    id: Type.String({ description: 'The signal id.' }),
    waitId: nullable(Type.String()),
    payloadDigest: Type.String(),
    arrivalSequence: Type.Integer({ minimum: 0 }),
    consumed: Type.Boolean(),
    payload: anyJson('The payload while unconsumed; null once consumed (its digest stays).'),
    agency: stringEnum(['user', 'machine'], {
      description:
        'Who sent it, as the server saw it: `user` for a signal an HTTP caller delivered (a gate answer included), `machine` for the ' +
        'rest (engine-minted, signal_child, cross-tree messages, policy answers).',
    }),
  },
  { $id: 'Receipt', description: 'A signal the process accepted.' },
);

export const Settlement = closedObject(
  {
    effectId: Type.String(),
    status: stringEnum(settlementStatusValues),
    payload: anyJson('The settlement payload.'),
  },
  { $id: 'Settlement', description: "An effect's outcome as committed." },
);

export const RuntimeError = closedObject(
  {
    code: Type.String(),
    message: Type.String(),
    headDigest: Type.String(),
    incarnationId: Type.String(),
    unresolvedEffectIds: Type.Array(Type.String()),
  },
  { $id: 'RuntimeError', description: "Why the tree's writer stopped; the tree needs a restore." },
);

export const Process = closedObject(
  {
    processId: Type.String(),
    status: stringEnum(statusValues),
    rootId: Type.String(),
    parentId: nullable(Type.String()),
    depth: Type.Integer({ minimum: 0 }),
    deployment: Type.String({ description: 'The deployment name.' }),
    deploymentRef: Type.String({ description: '`<name>+sha256:<hex>`: the exact behaviour this process runs.' }),
    startedAt: timestamp('When the process started.'),
    usage: ref(Usage),
    budget: ref(Budget),
    capabilities: Type.Array(Type.String()),
    waitId: nullable(Type.String({ description: 'The open wait, if the process waits.' })),
    waitKind: nullable(stringEnum(['external', 'children'])),
    pauseReason: nullable(Type.String()),
    unknownEffectIds: Type.Array(Type.String(), { description: 'Effects whose outcome is Unknown (resolve or replay them).' }),
    receiptCount: Type.Integer({
      minimum: 0,
      description: 'Signals the mailbox holds (engine-minted ones included); page them with `GET /v1/processes/{id}/signals`.',
    }),
    result: nullable(ref(Result)),
    work: stringEnum(['idle', 'queued', 'step', 'dispatch', 'admission', 'inactive'], {
      description: "Live work in this server's runtime; `inactive` when no runtime here owns the tree.",
    }),
    runtimeError: nullable(ref(RuntimeError)),
  },
  { $id: 'Process', description: 'Inspection of one process.' },
);

export const ProcessSummary = closedObject(
  {
    processId: Type.String(),
    deployment: Type.String(),
    status: stringEnum(statusValues),
    startedAt: timestamp('When the process started.'),
    hasUnknown: Type.Boolean({ description: 'Some process of the tree has an effect whose outcome is Unknown (see `GET /v1/effects?status=unknown`).' }),
    hasOpenGate: Type.Boolean({ description: 'Some process of the tree waits on an open gate (an open external wait).' }),
  },
  { $id: 'ProcessSummary', description: 'One root process in a list.' },
);

export const ProcessPage = closedObject(
  {
    items: Type.Array(ref(ProcessSummary)),
    nextCursor: nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last page.' })),
  },
  { $id: 'ProcessPage', description: 'Root processes, newest first.' },
);

export const ProcessChildren = closedObject(
  {
    processId: Type.String({ description: 'The parent.' }),
    items: Type.Array(ref(Process), { description: 'Its direct children, in tree order (depth, then id).' }),
  },
  { $id: 'ProcessChildren', description: "A process's direct children, each viewed like any process." },
);

export const StartProcessRequest = closedObject(
  {
    deployment: qualifiedName('The deployment name.', 'demo.echo'),
    input: anyJson("The process input; validated against the deployment's input schema."),
    budget: Type.Optional(ref(Budget)),
    treeLimits: Type.Optional(ref(TreeLimitsRequest)),
    capabilities: Type.Optional(
      Type.Array(qualifiedName('A capability name.', 'demo.echo'), {
        uniqueItems: true,
        description: 'A subset of the capabilities the server grants.',
      }),
    ),
  },
  {
    $id: 'StartProcessRequest',
    description: 'Start a root process. Budget, tree limits and capabilities may only narrow what the server grants.',
    example: { deployment: 'demo.echo', input: { value: 'hello' } },
  },
);

export const ResultPending = closedObject(
  {
    processId: Type.String(),
    rootId: Type.String(),
    status: stringEnum(statusValues, { description: 'The current, non-terminal status.' }),
    work: stringEnum(['idle', 'queued', 'step', 'dispatch', 'admission', 'inactive'], {
      description: "Live work in this server's runtime; `inactive`: no runtime here owns the tree, so nothing will move it until it is restored.",
    }),
    next: nullable(
      closedObject(
        {
          code: stringEnum(['tree_not_active'], { description: 'Why waiting longer will not help.' }),
          detail: Type.String({ description: 'What to do instead.' }),
        },
        { description: 'Set when waiting again would not help (the tree is inactive here).' },
      ),
    ),
  },
  { $id: 'ResultPending', description: 'The process was not terminal when the wait ended.' },
);

export const ReceiptPage = closedObject(
  {
    items: Type.Array(ref(Receipt)),
    nextCursor: nullable(Type.String({ description: 'Pass as `after` for the next page; null on the last page.' })),
  },
  { $id: 'ReceiptPage', description: "A page of a process's signal receipts, in arrival order." },
);

export const ReceiptQuery = closedObject({
  after: Type.Optional(Type.Integer({ minimum: 0, description: 'Receipts with an arrival sequence above this one (default 0).' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Page size (default 100).', example: 100 })),
});

export const StartHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      pattern: '^[\\x21-\\x7e]+$',
      description:
        'Same key + same body returns the same process (200); same key + other body is 409 `idempotency_key_conflict`; ' +
        'a start with the key still unfinished elsewhere is 409 `idempotency_key_in_progress` (retry). ' +
        'Pick a fresh key per intended start (e.g. a UUID); no example is pre-filled, so each "Try it out" is a new start.',
    }),
  ),
});

/** A start-time bound of the process list: an ISO 8601 UTC instant, as `startedAt` is written. */
function startTime(description: string): ReturnType<typeof Type.String> {
  return Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,3})?)?Z$', description, example: '2025-01-01T00:00:00.000Z' });
}

export const ListProcessesQuery = closedObject({
  status: Type.Optional(stringEnum(statusValues, { description: 'Only processes with this status.' })),
  deployment: Type.Optional(qualifiedName('Only processes of this deployment.', 'demo.echo')),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Page size (default 20).', example: 50 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'From a previous page’s `nextCursor`.' })),
  startedAfter: Type.Optional(startTime('Only processes started at or after this time (ISO 8601, UTC).')),
  startedBefore: Type.Optional(startTime('Only processes started before this time (ISO 8601, UTC).')),
  hasUnknown: Type.Optional(stringEnum(['true', 'false'], { description: 'Only trees that have (`true`) or have not (`false`) an effect whose outcome is Unknown.' })),
  hasOpenGate: Type.Optional(stringEnum(['true', 'false'], { description: 'Only trees that have (`true`) or have not (`false`) an open gate (an open external wait).' })),
});

/** The longest result long poll, in milliseconds. */
export const maxWaitMs = 60_000;

export const ResultQuery = closedObject({
  waitMs: Type.Optional(
    Type.Integer({ minimum: 0, maximum: maxWaitMs, description: 'How long to wait for the terminal result (default 0).', example: 5000 }),
  ),
});

export const processComponents: readonly TSchema[] = [
  Quota,
  Budget,
  TreeLimits,
  TreeLimitsRequest,
  Usage,
  Failure,
  Result,
  Receipt,
  Settlement,
  RuntimeError,
  Process,
  ProcessSummary,
  ProcessPage,
  ProcessChildren,
  StartProcessRequest,
  ResultPending,
  ReceiptPage,
];
