/** The inbox: every non-terminal process with an unanswered wait. */
import { Type, type TSchema } from '@sinclair/typebox';
import { closedObject, ref, stringEnum, timestamp } from '../shared.js';

export const Wait = closedObject(
  {
    processId: Type.String(),
    rootId: Type.String(),
    waitId: Type.String({ description: 'Address the answer to this wait (`waitId` of a signal).' }),
    waitKind: stringEnum(['external', 'children']),
    deployment: Type.String(),
    since: timestamp('When the wait opened (as known to this server).'),
  },
  { $id: 'Wait', description: 'One unanswered wait.' },
);

export const WaitList = closedObject({ items: Type.Array(ref(Wait)) }, { $id: 'WaitList', description: 'Unanswered waits.' });

export const waitComponents: readonly TSchema[] = [Wait, WaitList];
