/** Effects: a process's effects, and the two ways out of an Unknown outcome (replay, resolution). */
import { Type, type TSchema } from '@sinclair/typebox';
import { Failure, Settlement } from '../processes/schemas.js';
import { anyJson, closedObject, identity, nullable, ref, stringEnum, timestamp } from '../shared.js';

export const LateReport = closedObject(
  {
    attemptId: Type.String(),
    status: stringEnum(['succeeded', 'failed', 'unknown'], { description: '`unknown`: the worker itself could not tell (its dispatcher threw).' }),
    payload: anyJson('The reported settlement payload (null with status unknown and a reason).'),
    reason: nullable(Type.String({ description: 'Why the worker could not tell.' })),
  },
  {
    $id: 'LateReport',
    description:
      'What a BullMQ worker reported for an attempt it was still running when the effect was declared Unknown (a takeover, a lapsed deadline). ' +
      'Transport evidence, not the record: resolve the effect with it (`POST …/resolve`) if you trust it.',
  },
);

export const EffectAttempt = closedObject(
  {
    attemptId: Type.String(),
    startedAt: nullable(timestamp('When the attempt started; null when its log entry lacks the time.')),
    worker: nullable(
      Type.String({
        description:
          'Evidence of what ran the attempt: the BullMQ worker id from its claim record (kept one day), or, for an attempt run in the owner process, ' +
          'the id of the node that started it. Null when not known (never claimed, record expired).',
      }),
    ),
  },
  { $id: 'EffectAttempt', description: 'One dispatch attempt of an effect.' },
);

export const Effect = closedObject(
  {
    effectId: Type.String(),
    stepSequence: Type.Integer({ minimum: 1 }),
    batchIndex: Type.Integer({ minimum: 0 }),
    target: stringEnum(['framework', 'dispatcher']),
    status: stringEnum(['planned', 'pending', 'settled', 'unknown', 'resolved']),
    attempts: Type.Integer({ minimum: 0, description: 'Dispatch attempts this server made, replays included.' }),
    attemptList: Type.Array(ref(EffectAttempt), { description: 'Those attempts, oldest first, as far as the tree\'s event log still holds them, each with its worker.' }),
    settlement: nullable(ref(Settlement)),
    diagnostic: nullable(ref(Failure)),
    lateReport: Type.Optional(ref(LateReport)),
  },
  { $id: 'Effect', description: 'One effect of a process.' },
);

export const EffectList = closedObject(
  {
    items: Type.Array(ref(Effect)),
    nextCursor: nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last page.' })),
  },
  { $id: 'EffectList', description: "A page of a process's effects, in step order." },
);

export const EffectListQuery = closedObject({
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 16, description: 'From a previous page’s `nextCursor`.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Page size (default 100).', example: 100 })),
});

export const EffectResolution = closedObject(
  {
    status: stringEnum(['succeeded', 'failed'], { description: 'The outcome the host establishes.' }),
    payload: anyJson('The settlement payload.'),
  },
  {
    $id: 'EffectResolution',
    description: 'Host adjudication of an Unknown effect.',
    example: { status: 'succeeded', payload: { mode: 'unknown', attempts: 1 } },
  },
);

export const EffectParams = closedObject({
  id: identity('The process id.', 'process:0123456789abcdef0123456789abcdef'),
  effectId: identity('The effect id.', 'effect:0123456789abcdef'),
});

export const UnknownEffect = closedObject(
  {
    processId: Type.String(),
    rootId: Type.String(),
    deployment: Type.String({ description: 'The deployment name of the process.' }),
    effect: ref(Effect),
  },
  { $id: 'UnknownEffect', description: 'An effect whose outcome is Unknown, with the process it belongs to.' },
);

export const UnknownEffectList = closedObject(
  {
    items: Type.Array(ref(UnknownEffect)),
    nextCursor: nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last page.' })),
  },
  { $id: 'UnknownEffectList', description: 'A page of Unknown effects, by process id then effect id.' },
);

export const UnknownEffectQuery = closedObject({
  status: stringEnum(['unknown'], { description: 'Which effects: only `unknown` (the outcomes nobody knows) is listed across trees.' }),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'From a previous page’s `nextCursor`.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Page size (default 100).', example: 100 })),
});

export const effectComponents: readonly TSchema[] = [LateReport, EffectAttempt, Effect, EffectList, EffectResolution, UnknownEffect, UnknownEffectList];
