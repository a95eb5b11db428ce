/** Liveness, readiness and metrics. */
import { Type, type TSchema } from '@sinclair/typebox';
import { closedObject, ref } from '../shared.js';

export const Health = closedObject(
  { status: Type.Literal('ok') },
  { $id: 'Health', description: 'The process is alive.' },
);

const ProcessGeneration = closedObject(
  {
    serial: Type.Integer({ description: 'The generation\'s number under its key (a replacement has a higher one).' }),
    state: Type.String({ description: '`starting`, `live` or `retiring`.' }),
    leases: Type.Integer({ description: 'Dispatches it is serving now.' }),
    current: Type.Boolean({ description: 'Whether new dispatches go to it.' }),
  },
  { description: 'One running generation of a supervised command.' },
);

export const WorkerProcessKey = closedObject(
  {
    key: Type.String({ description: 'The process dispatcher key (one command configuration).' }),
    resolvable: Type.Boolean({ description: 'Whether the command is an executable file on the worker\'s machine.' }),
    lastStart: Type.Optional(Type.String({ description: 'The last start\'s outcome: `started`, or its failure code (`start_failed`, `invalid_handshake`).' })),
    generations: Type.Array(ProcessGeneration),
    check: Type.String({ description: '`ok`, or why this key cannot run Effects.' }),
  },
  { $id: 'WorkerProcessKey', description: 'A process dispatcher key a worker runs for a deployment, as its last heartbeat reported it.' },
);

export const ServedRef = closedObject(
  {
    deployment: Type.String(),
    ref: Type.String({ description: 'The exact DeploymentRef the workers must hold.' }),
    workers: Type.Array(
      closedObject({
        workerId: Type.String(),
        ready: Type.Boolean({ description: 'Whether every process key it runs for this ref can run Effects.' }),
        processes: Type.Array(ref(WorkerProcessKey)),
      }),
      { description: 'The live workers holding the ref (a worker drops out once its heartbeat expires).' },
    ),
  },
  { $id: 'ServedRef', description: 'A deployment whose Effects run on `scope worker` processes, and the live workers serving it.' },
);

export const Readiness = closedObject(
  {
    ready: Type.Boolean(),
    checks: Type.Record(Type.String(), Type.String(), { description: 'Each check: `ok` or why it failed.', example: { store: 'ok' } }),
    workers: Type.Optional(
      Type.Array(ref(ServedRef), {
        description:
          'With the BullMQ transport: per deployment sent to workers, the live workers and their process dispatcher keys. `worker:<deployment>` is `ok` when at least one of them can run the ref (every key resolvable, no failed last start).',
      }),
    ),
  },
  { $id: 'Readiness', description: 'Whether this server can take work (store reachable, workers present).' },
);

export const healthComponents: readonly TSchema[] = [Health, WorkerProcessKey, ServedRef, Readiness];
