/** Control intents: pause, resume, cancel, kill. */
import { Type, type TSchema } from '@sinclair/typebox';
import { closedObject, stringEnum } from '../shared.js';

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

export const controlComponents: readonly TSchema[] = [ControlRequest, ControlAccepted];
