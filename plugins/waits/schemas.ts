/** The inbox: every non-terminal process with an unanswered wait. */
import { Type, type TSchema } from '@sinclair/typebox';
import { closedObject, identity, qualifiedName, ref, stringEnum, timestamp } from '../shared.js';

export const Wait = closedObject(
  {
    processId: Type.String(),
    rootId: Type.String(),
    waitId: Type.String({ description: 'Address the answer to this wait (`waitId` of a signal).' }),
    waitKind: stringEnum(['external', 'children']),
    deployment: Type.String(),
    since: timestamp('When the wait opened: the time of the committed event that opened it (unchanged by restores).'),
  },
  { $id: 'Wait', description: 'One unanswered wait.' },
);

export const WaitList = closedObject({ items: Type.Array(ref(Wait)) }, { $id: 'WaitList', description: 'Unanswered waits.' });

export const WaitQuery = closedObject({
  deployment: Type.Optional(qualifiedName('Only waits of processes of this deployment.', 'demo.approval')),
  rootId: Type.Optional(identity('Only waits in this tree.', 'process:0123456789abcdef0123456789abcdef')),
});

export const waitComponents: readonly TSchema[] = [Wait, WaitList];
