import { workflow } from '../../../strategies/workflow/index.js';
import { Budget, type Definition, Deployment, Digest, Quota } from '../../kernel/index.js';

/**
 * The workflow strategy's example deployments (docs/strategies/workflow.md). They compose the
 * demo.echo Deployment they are given as their children, so they run with the demo dispatchers and
 * restore from their bindings. Fixed digests, like the demos: bump the version when behaviour changes.
 */
export const workflowExampleNames = ['example.workflow.review', 'example.workflow.batch'] as const;

/** An echo child needs 2 Steps, 1 Effect and 1 Signal; the rest is headroom. */
const echoBudget = Budget.of({ steps: Quota.of(8), effects: Quota.of(4), signals: Quota.of(16) });

/** The most values example.workflow.batch maps over (its map stage's `maxItems`). */
export const batchMaxItems = 100;

interface ReviewInput {
  readonly subject: string;
  readonly text: string;
}

/**
 * example.workflow.review: a transform drafts the two review requests, a fork runs a `security`
 * and a `style` reviewer (demo.echo children) side by side, and a transform merges their answers.
 */
export function reviewDefinition(echo: Deployment): Definition {
  return workflow.define({
    name: 'example.workflow.review',
    description: 'Drafts two review requests, runs a security and a style reviewer child side by side, and merges their answers.',
    inputSchema: {
      type: 'object',
      properties: { subject: { type: 'string', minLength: 1, maxLength: 200 }, text: { type: 'string', maxLength: 2000 } },
      required: ['subject', 'text'],
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: {
        subject: { type: 'string' },
        reviews: { type: 'object', properties: { security: { type: 'string' }, style: { type: 'string' } }, required: ['security', 'style'] },
      },
      required: ['subject', 'reviews'],
    },
    stages: [
      workflow.transform({
        id: 'draft',
        outputSchema: { type: 'object', required: ['subject', 'security', 'style'] },
        run: (value) => {
          const { subject, text } = value as ReviewInput;
          return { subject, security: `security review of ${subject}: ${text}`, style: `style review of ${subject}: ${text}` };
        },
      }),
      workflow.fork({
        id: 'reviewers',
        branches: [
          { id: 'security', deployment: echo, budget: echoBudget, input: (value) => ({ value: (value as { security: string }).security }) },
          { id: 'style', deployment: echo, budget: echoBudget, input: (value) => ({ value: (value as { style: string }).style }) },
        ],
        output: (value, results) => ({ subject: (value as ReviewInput).subject, results }),
      }),
      workflow.transform({
        id: 'merge',
        outputSchema: { type: 'object', required: ['subject', 'reviews'] },
        run: (value) => {
          const { subject, results } = value as { subject: string; results: Record<string, { value: string }> };
          return { subject, reviews: { security: results.security?.value, style: results.style?.value } };
        },
      }),
    ],
  });
}

/**
 * example.workflow.batch: one demo.echo child per value, at most {@link batchMaxItems}, run in
 * windows of 4 (the window is part of the definition), then a transform counts the echoes.
 */
export function batchDefinition(echo: Deployment): Definition {
  return workflow.define({
    name: 'example.workflow.batch',
    description: 'Echoes every value through its own demo.echo child, four children at a time, and reports the echoes in order.',
    inputSchema: {
      type: 'object',
      properties: { values: { type: 'array', items: { type: 'string', maxLength: 1024 } } },
      required: ['values'],
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: { echoes: { type: 'array', items: { type: 'string' } }, count: { type: 'integer' } },
      required: ['echoes', 'count'],
    },
    stages: [
      workflow.map({
        id: 'echo',
        deployment: echo,
        budget: echoBudget,
        items: (value) => (value as { values: string[] }).values,
        input: (item) => ({ value: item }),
        maxItems: batchMaxItems,
        windowSize: 4,
      }),
      workflow.transform({
        id: 'count',
        inputSchema: { type: 'array' },
        outputSchema: { type: 'object', required: ['echoes', 'count'] },
        run: (value) => {
          const echoes = (value as Array<{ value: string }>).map((entry) => entry.value);
          return { echoes, count: echoes.length };
        },
      }),
    ],
  });
}

function example(name: string, definition: Definition): Deployment {
  return Deployment.create({
    definition,
    implementationDigest: Digest.of(`scope:${name}:implementation:v1`),
    configurationDigest: Digest.of(`scope:${name}:configuration:v1`),
  });
}

/** The workflow examples over the exact echo Deployment they bind. */
export function workflowExamples(bindings: { readonly echo: Deployment }): Deployment[] {
  return [example('example.workflow.review', reviewDefinition(bindings.echo)), example('example.workflow.batch', batchDefinition(bindings.echo))];
}
