import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import type { Definition } from '../../src/kernel/definition.js';
import type { Deployment } from '../../src/kernel/deployment.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { ChildSpec, ChildWaitCondition, ChildWaitSpec, Effect } from '../../src/kernel/effect.js';
import { Failure } from '../../src/kernel/failure.js';
import { ChildKey, ProcessId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Quota } from '../../src/kernel/quota.js';
import { Schema } from '../../src/kernel/schema.js';
import type { Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { invalidState, machineDefinition, objectOf, statePhase, stateRecord } from '../internal/machine.js';

/**
 * demo.fanout: a process tree in one deployment. It starts one `demo.echo` child per input value
 * (at most {@link maxFanout}), waits until a quorum of them has drained (`subtree_drained`), cancels
 * the children still running with `cancel_child`, waits for those to drain as well, and completes
 * with the outputs of every child that completed, in input order. Input `{values, quorum?}`
 * (quorum defaults to all); output `{outputs:[{processId,value}], canceled:[processId]}`.
 *
 * Each phase reads exactly the Engine signals its previous batch produced, so the window is known:
 * N start results, then a wait opening (possibly followed by its answer), then the cancel receipts.
 */
export const fanoutName = 'demo.fanout';

/**
 * The bound on N: a demo tree, not a load generator. Beyond the default max_active_children (16) a
 * start must be granted more active children (`treeLimits.maxActiveChildren`), or the later starts
 * are refused with `engine.child.tree_limit` while earlier children still run.
 */
export const maxFanout = 32;

const outputSchema = {
  type: 'object',
  properties: {
    outputs: {
      type: 'array',
      items: {
        type: 'object',
        properties: { processId: { type: 'string' }, value: { type: 'string' } },
        required: ['processId', 'value'],
        additionalProperties: false,
      },
    },
    canceled: { type: 'array', items: { type: 'string' } },
  },
  required: ['outputs', 'canceled'],
  additionalProperties: false,
} as const;

export const fanoutDescriptor: Descriptor = Descriptor.create({
  name: fanoutName,
  description: 'Starts one demo.echo child per value, waits for a quorum to drain, cancels the rest and reports the outputs.',
  inputSchema: Schema.of({
    type: 'object',
    properties: {
      values: { type: 'array', minItems: 1, maxItems: maxFanout, items: { type: 'string', maxLength: 1024 } },
      quorum: { type: 'integer', minimum: 1, maximum: maxFanout },
    },
    required: ['values'],
    additionalProperties: false,
  }),
  outputSchema: Schema.of(outputSchema),
});

/**
 * Each echo child's permanent grant: finite in every dimension, so a finite parent can give it
 * (an echo needs 2 Steps, 1 Effect, 1 Signal; the rest is headroom).
 */
const childBudget = Budget.of({ steps: Quota.of(8), effects: Quota.of(4), signals: Quota.of(16) });

type Phase = 'init' | 'starting' | 'opening' | 'waiting' | 'canceling' | 'draining_opening' | 'draining';
const phases: readonly Phase[] = ['init', 'starting', 'opening', 'waiting', 'canceling', 'draining_opening', 'draining'];

interface FanoutState {
  readonly phase: Phase;
  readonly values: readonly string[];
  readonly quorum: number;
  /** Started children, in input order (set once every start succeeded). */
  readonly children: readonly string[];
  /** The wait the process is on (waiting / draining phases). */
  readonly waitId?: string;
  /** Outputs collected so far, by child id. */
  readonly outputs: Readonly<Record<string, string>>;
  /** Children canceled with cancel_child. */
  readonly canceled: readonly string[];
}

const kind = 'demo.fanout';

function check(value: unknown): FanoutState {
  const record = stateRecord(kind, value, ['phase', 'values', 'quorum', 'children', 'outputs', 'canceled'], ['waitId']);
  statePhase(kind, record, phases);
  const strings = (member: string): void => {
    const list = record[member];
    if (!Array.isArray(list) || list.some((item) => typeof item !== 'string')) throw invalidState(kind, `${member} must be an array of strings`);
  };
  strings('values');
  strings('children');
  strings('canceled');
  if (typeof record.quorum !== 'number' || !Number.isSafeInteger(record.quorum) || record.quorum < 1) throw invalidState(kind, 'quorum must be a positive integer');
  if (typeof record.outputs !== 'object' || record.outputs === null || Array.isArray(record.outputs)) throw invalidState(kind, 'outputs must be an object');
  if (record.waitId !== undefined && typeof record.waitId !== 'string') throw invalidState(kind, 'waitId must be a string');
  return record as unknown as FanoutState;
}

/** A child-wait answer's outcomes: `{result:{process_id,output?,termination:{status}}}` in request order. */
interface Outcome {
  readonly result: { readonly process_id: string; readonly output?: { readonly value?: unknown }; readonly termination: { readonly status: string } };
}

function outcomesOf(signal: Signal): readonly Outcome[] {
  const outcomes = objectOf(signal.payload)?.outcomes;
  return Array.isArray(outcomes) ? (outcomes as Outcome[]) : [];
}

/** Folds the completed children of an answer into the collected outputs. */
function collect(state: FanoutState, answer: Signal): Record<string, string> {
  const outputs = { ...state.outputs };
  for (const outcome of outcomesOf(answer)) {
    const value = outcome.result.output?.value;
    if (outcome.result.termination.status === 'completed' && typeof value === 'string') outputs[outcome.result.process_id] = value;
  }
  return outputs;
}

function waitFor(key: string, children: readonly string[], condition: ChildWaitCondition): Effect {
  return Effect.waitChildren(
    ChildWaitSpec.create({ key: WaitKey.parse(key), children: children.map((id) => ProcessId.parse(id)), boundary: 'subtree_drained', condition }),
  );
}

function complete(state: FanoutState, consumed: number, outputs: Readonly<Record<string, string>>): Transition {
  return Transition.complete(
    consumed,
    Payload.encode({
      outputs: state.children.filter((id) => outputs[id] !== undefined).map((id) => ({ processId: id, value: outputs[id] })),
      canceled: state.canceled,
    }),
  );
}

/** The fan-out Definition over the exact echo Deployment it binds (folded into its DeploymentRef). */
export function fanoutDefinition(echo: Deployment): Definition {
  return machineDefinition<FanoutState>({
    descriptor: fanoutDescriptor,
    stateKind: kind,
    childDeployments: [echo],
    initial(input) {
      const { values, quorum } = input.decode<{ values: string[]; quorum?: number }>();
      return { phase: 'init', values, quorum: Math.min(quorum ?? values.length, values.length), children: [], outputs: {}, canceled: [] };
    },
    check,
    step(state, signals) {
      switch (state.phase) {
        case 'init': {
          // Start every child in one batch (its N start results come back together, in order).
          const starts = state.values.map((value, index) =>
              Effect.startChild(
                ChildSpec.create({
                  key: ChildKey.parse(`echo-${index}`),
                  deploymentRef: echo.ref,
                  input: Payload.encode({ value }),
                  budget: childBudget,
                  capabilities: CapabilitySet.empty,
                }),
              ),
            );
          return { state: { ...state, phase: 'starting' }, transition: Transition.continue(0, starts) };
        }
        case 'starting': {
          const results = signals.slice(0, state.values.length).map((signal) => objectOf(signal.payload) ?? {});
          const failed = results.find((result) => result.failure !== undefined);
          if (failed !== undefined) {
            const failure = failed.failure as { code?: string; message?: string };
            return {
              state,
              transition: Transition.fail(results.length, Failure.create('execution', 'demo.fanout.start_failed', `a child did not start: ${failure.code ?? 'unknown'}`)),
            };
          }
          const children = results.map((result) => String(result.process_id));
          const next: FanoutState = { ...state, phase: 'opening', children };
          return { state: next, transition: Transition.continue(results.length, [waitFor('quorum', children, ChildWaitCondition.quorum(state.quorum))]) };
        }
        case 'opening':
        case 'draining_opening': {
          const waitId = signals[0]?.waitId as WaitId;
          return {
            state: { ...state, phase: state.phase === 'opening' ? 'waiting' : 'draining', waitId: waitId.toString() },
            transition: Transition.wait(1, waitId),
          };
        }
        case 'waiting':
        case 'draining': {
          const waitId = WaitId.parse(state.waitId);
          const position = signals.findIndex((signal) => waitId.equals(signal.waitId));
          if (position < 0) return { state, transition: Transition.wait(0, waitId) };
          const outputs = collect(state, signals[position] as Signal);
          const answered = new Set(outcomesOf(signals[position] as Signal).map((outcome) => outcome.result.process_id));
          const running = state.children.filter((id) => !answered.has(id) && !state.canceled.includes(id));
          if (state.phase === 'draining' || running.length === 0) return { state, transition: complete(state, position + 1, outputs) };
          const cancels = running.map((id) => Effect.cancelChild(ProcessId.parse(id), 'the fan-out quorum was reached'));
          return { state: { ...state, phase: 'canceling', outputs, canceled: running, waitId: undefined }, transition: Transition.continue(position + 1, cancels) };
        }
        case 'canceling': {
          // The cancel receipts confirm intent only; drain the canceled children before finishing.
          const receipts = state.canceled.length;
          return {
            state: { ...state, phase: 'draining_opening' },
            transition: Transition.continue(receipts, [waitFor('drain', state.canceled, ChildWaitCondition.all())]),
          };
        }
      }
    },
  });
}
