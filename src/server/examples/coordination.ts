import { deadlineDefinition } from '../../../strategies/coordination/deadline.js';
import { firstSuccessDefinition } from '../../../strategies/coordination/first-success.js';
import { inputGateDefinition } from '../../../strategies/coordination/input-gate.js';
import { sleepDefinition } from '../../../strategies/demo/sleep.js';
import { unreliableDefinition } from '../../../strategies/demo/unreliable.js';
import { type Definition, Deployment, Digest, type Dispatcher, Schema } from '../../kernel/index.js';
import { sleepDispatcher, unreliableDispatcher } from '../demo-dispatchers.js';
import { deadlineDispatcher } from '../dispatchers/deadline.js';
import type { TimerService } from '../timers/timer-service.js';

/**
 * The coordination examples (docs/strategies/coordination.md):
 *
 * - `example.coordination.input` — an InputGate asking `{question, options?}` and admitting only
 *   the answer `{choice, note?}` addressed to its wait;
 * - `example.coordination.deadline` — a Deadline served by the deadline dispatcher;
 * - `example.coordination.first-success` — a FirstSuccess over `demo.echo`, `demo.unreliable` and
 *   `demo.sleep` candidates, accepting every completed candidate except an echo of `"reject"`.
 *
 * Fixed digests, as for the demos. The candidate bindings carry the demos' own digests, so they are
 * the very DeploymentRefs the demos register (the catalog describes the candidates, and a restore
 * resolves them either way).
 */
export const coordinationExampleNames = ['example.coordination.input', 'example.coordination.deadline', 'example.coordination.first-success'] as const;

function fixed(name: string, definition: Definition, dispatcher?: Dispatcher): Deployment {
  return Deployment.create({
    definition,
    dispatcher,
    implementationDigest: Digest.of(`scope:${name}:implementation:v1`),
    configurationDigest: Digest.of(`scope:${name}:configuration:v1`),
  });
}

export const exampleGateAnswerSchema: Schema = Schema.of({
  type: 'object',
  properties: { choice: { type: 'string', minLength: 1, maxLength: 256 }, note: { type: 'string', maxLength: 1024 } },
  required: ['choice'],
  additionalProperties: false,
});

/** `echo` is the demos' own demo.echo Deployment (its ref is the one they register). */
export function coordinationExamples(options: { readonly echo: Deployment; readonly shutdown?: AbortSignal; readonly timers?: () => TimerService | undefined }): Deployment[] {
  const gate = inputGateDefinition({
    name: 'example.coordination.input',
    description: 'Asks a question {question, options?} through one wait and completes with the answer {choice, note?} addressed to it.',
    requestSchema: Schema.of({
      type: 'object',
      properties: {
        question: { type: 'string', minLength: 1, maxLength: 1024 },
        options: { type: 'array', maxItems: 16, items: { type: 'string', maxLength: 128 } },
      },
      required: ['question'],
      additionalProperties: false,
    }),
    answerSchema: exampleGateAnswerSchema,
  });
  const deadline = deadlineDefinition({
    name: 'example.coordination.deadline',
    description: 'Completes with its input instant (RFC 3339) once that instant has passed.',
  });
  const competition = firstSuccessDefinition({
    name: 'example.coordination.first-success',
    description: 'Starts every candidate at once; the first completed one whose output is not an echo of "reject" wins and the rest are canceled.',
    maxCandidates: 8,
    accept: ({ output }) => !(typeof output === 'object' && output !== null && (output as { value?: unknown }).value === 'reject'),
    deployments: [options.echo, fixed('demo.unreliable', unreliableDefinition, unreliableDispatcher()), fixed('demo.sleep', sleepDefinition, sleepDispatcher(options.shutdown, options.timers))],
  });
  return [
    fixed('example.coordination.input', gate),
    fixed('example.coordination.deadline', deadline, deadlineDispatcher({ shutdown: options.shutdown, timers: options.timers })),
    fixed('example.coordination.first-success', competition),
  ];
}
