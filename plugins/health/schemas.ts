/** Liveness, readiness and metrics. */
import { Type, type TSchema } from '@sinclair/typebox';
import { closedObject } from '../shared.js';

export const Health = closedObject(
  { status: Type.Literal('ok') },
  { $id: 'Health', description: 'The process is alive.' },
);

export const Readiness = closedObject(
  {
    ready: Type.Boolean(),
    checks: Type.Record(Type.String(), Type.String(), { description: 'Each check: `ok` or why it failed.', example: { store: 'ok' } }),
  },
  { $id: 'Readiness', description: 'Whether this server can take work (store reachable, workers present).' },
);

export const healthComponents: readonly TSchema[] = [Health, Readiness];
