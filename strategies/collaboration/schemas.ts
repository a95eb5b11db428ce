import { Schema } from '../../src/kernel/schema.js';

/**
 * The two fixed contracts between a collaboration and its coordinator (kernel-contract §6.3). A
 * coordinator Deployment must accept exactly {@link turnSchema} as input and return exactly
 * {@link decisionSchema} as output; the collaboration checks both when it is defined, so a
 * coordinator written against another shape is refused before any Process starts.
 *
 * The working `state` and the final `output` are any JSON here: the collaboration validates them
 * against its own configured `stateSchema` and `outputSchema` when a Decision arrives, so the two
 * schemas stay the same for every collaboration.
 */

/** Task keys are identity text (1–256 of `[A-Za-z0-9._:-]`); the collaboration checks the reserved prefix. */
const key = { type: 'string', minLength: 1, maxLength: 256 } as const;

const failure = {
  type: 'object',
  properties: { kind: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } },
  required: ['kind', 'code', 'message'],
  additionalProperties: false,
} as const;

/** What the coordinator asks a worker to do: a fresh task `key`, the worker's descriptor name, its input. */
const taskRequest = {
  type: 'object',
  properties: { key, worker: { type: 'string', minLength: 1, maxLength: 128 }, input: {} },
  required: ['key', 'worker', 'input'],
  additionalProperties: false,
} as const;

/** A signal a control delivers to a task's Process: the caller-chosen id, its payload, optionally the wait it answers. */
const controlSignal = {
  type: 'object',
  properties: { id: { type: 'string', minLength: 1, maxLength: 256 }, payload: {}, waitId: { type: 'string', minLength: 1, maxLength: 256 } },
  required: ['id', 'payload'],
  additionalProperties: false,
} as const;

/** One control of a running task: exactly one of `signal` and `cancelReason`. */
const control = {
  type: 'object',
  properties: { task: key, signal: controlSignal, cancelReason: { type: 'string', minLength: 1, maxLength: 1024 } },
  required: ['task'],
  oneOf: [{ required: ['signal'] }, { required: ['cancelReason'] }],
  additionalProperties: false,
} as const;

/** How a task start went: the Process it runs as, or why it did not start. */
const taskStart = {
  type: 'object',
  properties: { processId: { type: 'string' }, failure },
  oneOf: [{ required: ['processId'] }, { required: ['failure'] }],
  additionalProperties: false,
} as const;

/** A task's drained outcome: its terminal status, and its output or failure (timestamps left out). */
const taskOutcome = {
  type: 'object',
  properties: {
    status: { enum: ['completed', 'failed', 'canceled', 'timed_out', 'killed'] },
    output: {},
    failure,
    reason: { type: 'string' },
  },
  required: ['status'],
  additionalProperties: false,
} as const;

const controlResult = {
  type: 'object',
  properties: { status: { enum: ['succeeded', 'failed'] }, failure },
  required: ['status'],
  additionalProperties: false,
} as const;

/** Bounds on one Decision's lists (the configured maxTasks / maxControlsPerTurn bound what is acted on). */
export const maxDecisionTasks = 64;
export const maxDecisionControls = 64;

/**
 * The coordinator's input, one per turn: `number` (1-based), the working `state`, the worker
 * `workers` it may start (their descriptors' wire form), every task so far with what is known of
 * it, and the receipts of the controls the previous Decision asked for.
 */
export const turnSchema: Schema = Schema.of({
  type: 'object',
  properties: {
    number: { type: 'integer', minimum: 1 },
    state: {},
    workers: { type: 'array', items: { type: 'object' } },
    tasks: {
      type: 'array',
      items: {
        type: 'object',
        properties: { request: taskRequest, start: taskStart, outcome: taskOutcome },
        required: ['request'],
        additionalProperties: false,
      },
    },
    controls: {
      type: 'array',
      items: {
        type: 'object',
        properties: { control, result: controlResult },
        required: ['control'],
        additionalProperties: false,
      },
    },
  },
  required: ['number', 'state', 'workers', 'tasks', 'controls'],
  additionalProperties: false,
});

/**
 * The coordinator's output: the `mode` (`continue`, `wait` or `complete`), the next working
 * `state`, the tasks to start and the controls to apply (not with `complete`), and the
 * collaboration's `output` (exactly with `complete`).
 */
export const decisionSchema: Schema = Schema.of({
  type: 'object',
  properties: {
    mode: { enum: ['continue', 'wait', 'complete'] },
    state: {},
    tasks: { type: 'array', maxItems: maxDecisionTasks, items: taskRequest },
    controls: { type: 'array', maxItems: maxDecisionControls, items: control },
    output: {},
  },
  required: ['mode', 'state'],
  additionalProperties: false,
});

/* The TypeScript views of the same shapes. */

export interface FailureView {
  readonly kind: string;
  readonly code: string;
  readonly message: string;
}

export interface TaskRequest {
  readonly key: string;
  readonly worker: string;
  readonly input: unknown;
}

export interface Control {
  readonly task: string;
  readonly signal?: { readonly id: string; readonly payload: unknown; readonly waitId?: string };
  readonly cancelReason?: string;
}

export type TaskStart = { readonly processId: string } | { readonly failure: FailureView };

export interface TaskOutcome {
  readonly status: string;
  readonly output?: unknown;
  readonly failure?: FailureView;
  readonly reason?: string;
}

export interface Task {
  readonly request: TaskRequest;
  readonly start?: TaskStart;
  readonly outcome?: TaskOutcome;
}

export interface ControlReceipt {
  readonly control: Control;
  readonly result?: { readonly status: 'succeeded' | 'failed'; readonly failure?: FailureView };
}

export interface Turn {
  readonly number: number;
  readonly state: unknown;
  readonly workers: readonly unknown[];
  readonly tasks: readonly Task[];
  readonly controls: readonly ControlReceipt[];
}

export type DecisionMode = 'continue' | 'wait' | 'complete';

export interface Decision {
  readonly mode: DecisionMode;
  readonly state: unknown;
  readonly tasks?: readonly TaskRequest[];
  readonly controls?: readonly Control[];
  readonly output?: unknown;
}
