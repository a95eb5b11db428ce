import type { Definition } from '../../src/kernel/definition.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { Failure } from '../../src/kernel/failure.js';
import { Schema } from '../../src/kernel/schema.js';
import { objectOf } from '../internal/machine.js';
import { singleEffectDefinition } from '../demo/single-effect.js';
import { coordinatorDefinition } from './coordinator.js';
import type { Decision, Turn } from './schemas.js';

/**
 * example.collaboration.research: a scripted, deterministic collaboration. Its coordinator
 * decides from the Turn alone — turn 1 starts two tasks (`notes` on the echo worker, `survey` on
 * the sleep worker) and waits; every later turn waits until both have an outcome, then completes
 * with the outcomes sorted by task key. How many turns that takes depends on timing; the output
 * does not, which is what lets a crash test compare a restored run with an uninterrupted one.
 */
export const researchName = 'example.collaboration.research';
export const researchCoordinatorName = `${researchName}.coordinator`;
export const researchNotesName = `${researchName}.notes`;
export const researchSurveyName = `${researchName}.survey`;

/** The working state (and the collaboration's input): the topic and how long the survey takes. */
export const researchStateSchema: Schema = Schema.of({
  type: 'object',
  properties: { topic: { type: 'string', minLength: 1, maxLength: 256 }, surveyMs: { type: 'integer', minimum: 0, maximum: 60_000 } },
  required: ['topic'],
  additionalProperties: false,
});

export const researchOutputSchema: Schema = Schema.of({
  type: 'object',
  properties: {
    topic: { type: 'string' },
    results: {
      type: 'array',
      items: {
        type: 'object',
        properties: { task: { type: 'string' }, status: { type: 'string' }, output: {} },
        required: ['task', 'status'],
        additionalProperties: false,
      },
    },
  },
  required: ['topic', 'results'],
  additionalProperties: false,
});

interface ResearchState {
  readonly topic: string;
  readonly surveyMs?: number;
}

/** The coordinator's pure decision: a function of the Turn only. */
export function decideResearch(turn: Turn): Decision {
  const state = turn.state as ResearchState;
  if (turn.number === 1) {
    return {
      mode: 'wait',
      state,
      tasks: [
        { key: 'notes', worker: researchNotesName, input: { value: `notes on ${state.topic}` } },
        { key: 'survey', worker: researchSurveyName, input: { ms: state.surveyMs ?? 0 } },
      ],
    };
  }
  const settled = turn.tasks.every((task) => task.outcome !== undefined || (task.start !== undefined && 'failure' in task.start));
  if (!settled) return { mode: 'wait', state };
  const results = [...turn.tasks]
    .sort((a, b) => (a.request.key < b.request.key ? -1 : a.request.key > b.request.key ? 1 : 0))
    .map((task) => {
      if (task.outcome === undefined) return { task: task.request.key, status: 'not_started' };
      return { task: task.request.key, status: task.outcome.status, ...(task.outcome.output === undefined ? {} : { output: task.outcome.output }) };
    });
  return { mode: 'complete', state, output: { topic: state.topic, results } };
}

export const researchCoordinatorDefinition: Definition = coordinatorDefinition({
  name: researchCoordinatorName,
  description: 'The research coordinator: starts a notes and a survey task, waits for both, reports their outcomes by key.',
  decide: decideResearch,
});

const notesSchema = Schema.of({
  type: 'object',
  properties: { value: { type: 'string', maxLength: 4096 } },
  required: ['value'],
  additionalProperties: false,
});

/** The notes worker: one echo Effect of `{value}` (run by the demo echo Dispatcher); output `{value}`. */
export const researchNotesDefinition: Definition = singleEffectDefinition<{ value: string }>({
  descriptor: Descriptor.create({
    name: researchNotesName,
    description: 'Takes notes: echoes its value through one dispatcher effect.',
    inputSchema: notesSchema,
    outputSchema: notesSchema,
  }),
  stateKind: researchNotesName,
  effectPayload: (input) => ({ value: input.value }),
  finish(input, settlement) {
    if (settlement.status !== 'succeeded') return { failure: Failure.create('external', `${researchNotesName}.failed`, 'the notes were not taken') };
    const value = objectOf(settlement.payload)?.value;
    return { output: { value: typeof value === 'string' ? value : input.value } };
  },
});

/** The survey worker: one sleep Effect of `{ms}` (run by the demo sleep Dispatcher); output `{sleptMs}`. */
export const researchSurveyDefinition: Definition = singleEffectDefinition<{ ms: number }>({
  descriptor: Descriptor.create({
    name: researchSurveyName,
    description: 'Runs a survey: sleeps ms milliseconds in one dispatcher effect.',
    inputSchema: Schema.of({ type: 'object', properties: { ms: { type: 'integer', minimum: 0, maximum: 60_000 } }, required: ['ms'], additionalProperties: false }),
    outputSchema: Schema.of({ type: 'object', properties: { sleptMs: { type: 'integer' } }, required: ['sleptMs'], additionalProperties: false }),
  }),
  stateKind: researchSurveyName,
  effectPayload: (input) => ({ ms: input.ms }),
  finish(input, settlement) {
    if (settlement.status !== 'succeeded') return { failure: Failure.create('external', `${researchSurveyName}.failed`, 'the survey did not finish') };
    return { output: { sleptMs: input.ms } };
  },
});
