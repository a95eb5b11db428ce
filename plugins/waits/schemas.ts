/** The inbox: every non-terminal process with an unanswered wait. */
import { Type, type TSchema } from '@sinclair/typebox';
import { anyJson, closedObject, identity, nullable, qualifiedName, ref, stringEnum, timestamp } from '../shared.js';

export const Wait = closedObject(
  {
    processId: Type.String(),
    rootId: Type.String(),
    waitId: Type.String({ description: 'Address the answer to this wait (`waitId` of a signal).' }),
    waitKind: stringEnum(['external', 'children']),
    key: Type.String({ description: "The Execution's logical key of the wait." }),
    deployment: Type.String(),
    since: timestamp('When the wait opened: the time of the committed event that opened it (unchanged by restores).'),
    answerSchema: anyJson(
      'The JSON Schema an answer must satisfy (null: any JSON value). An answer that does not is 422 `schema_validation_failed` with pointers, and nothing is admitted.',
    ),
    prompt: nullable(Type.String({ description: 'What this wait asks, as the process said when it opened it.' })),
    description: nullable(Type.String({ description: "The deployment's description of waits under this key." })),
  },
  { $id: 'Wait', description: 'One unanswered wait.' },
);

export const WaitList = closedObject(
  {
    items: Type.Array(ref(Wait)),
    nextCursor: nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last page.' })),
  },
  { $id: 'WaitList', description: 'A page of unanswered waits, oldest first.' },
);

export const WaitQuery = closedObject({
  deployment: Type.Optional(qualifiedName('Only waits of processes of this deployment.', 'demo.approval')),
  rootId: Type.Optional(identity('Only waits in this tree.', 'process:0123456789abcdef0123456789abcdef')),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'From a previous page’s `nextCursor`.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Page size (default 1000).', example: 100 })),
});

export const waitComponents: readonly TSchema[] = [Wait, WaitList];
