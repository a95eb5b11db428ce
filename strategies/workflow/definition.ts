import type { Definition } from '../../src/kernel/definition.js';
import type { Deployment } from '../../src/kernel/deployment.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { ChildSpec, ChildWaitCondition, ChildWaitSpec, Effect } from '../../src/kernel/effect.js';
import { Failure, normalizeDiagnostic } from '../../src/kernel/failure.js';
import { ChildKey, ProcessId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import type { Schema } from '../../src/kernel/schema.js';
import type { Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { machineDefinition } from '../internal/machine.js';
import { answerOf, openedWaitOf, outcomeOf, prefixed, startResultOf, unexpected, type Outcome } from './outcomes.js';
import {
  configError,
  stageBindings,
  toSchema,
  type ChildBinding,
  type FanoutStage,
  type Json,
  type LoopStage,
  type SchemaLike,
  type Stage,
  stageKinds,
} from './stages.js';
import { checkState, failureOf, mapItems, phaseOf, readyState, windowLength, workflowStateKind, type WindowEntry, type WorkflowState } from './state.js';

/**
 * The workflow Definition (kernel-contract §6.1): an ordered sequence of sealed Stages over the
 * current value, composing real child Processes. Not a task graph, a scheduler or a journal: one
 * stage at a time, in order, and the whole run is the state in {@link WorkflowState}.
 *
 * One Step runs every pure stage it reaches (transforms, empty maps, finished loops) and stops at
 * the first stage that needs a child, whose starts it declares; the Engine's answers then drive it
 * through start results → a `subtree_drained` child wait → the drained outcomes. A fan-out starts
 * its window's children in one batch (they settle as one batch), waits for every started child's
 * subtree to drain, and only then starts the next window or fails with the first failure in
 * declaration order.
 */

export interface WorkflowConfig {
  /** The Definition name (a lowercase qualified name, e.g. `example.workflow.review`). */
  readonly name: string;
  readonly description: string;
  readonly inputSchema: SchemaLike;
  readonly outputSchema: SchemaLike;
  /** At least one stage; stage ids are unique. */
  readonly stages: readonly Stage[];
}

type Step = { readonly state: WorkflowState; readonly transition: Transition };

/** Builds the Definition; a configuration mistake throws `invalid_workflow` here, never during a run. */
export function define(config: WorkflowConfig): Definition {
  if (typeof config !== 'object' || config === null) throw configError('expected a workflow configuration');
  const inputSchema = toSchema(config.inputSchema, 'inputSchema');
  const outputSchema = toSchema(config.outputSchema, 'outputSchema');
  let descriptor: Descriptor;
  try {
    descriptor = Descriptor.create({ name: config.name, description: config.description, inputSchema, outputSchema });
  } catch (error) {
    throw configError(error instanceof Error ? error.message : String(error));
  }
  if (!Array.isArray(config.stages) || config.stages.length === 0) throw configError(`${config.name} needs at least one stage`);
  const ids = new Set<string>();
  for (const [index, stage] of config.stages.entries()) {
    if (typeof stage !== 'object' || stage === null || !stageKinds.includes(stage.kind) || !Object.isFrozen(stage)) {
      throw configError(`stages[${index}] is not a stage (build it with transform, call, switch, fork, map or loop)`);
    }
    if (ids.has(stage.id)) throw configError(`two stages are called ${stage.id}`);
    ids.add(stage.id);
  }
  const stages = Object.freeze([...config.stages]);
  const children: Deployment[] = [];
  for (const binding of stages.flatMap(stageBindings)) {
    if (!children.some((known) => known.ref.equals(binding.deployment.ref))) children.push(binding.deployment);
  }
  const run = new WorkflowRun(stages, outputSchema);
  return machineDefinition<WorkflowState>({
    descriptor,
    stateKind: workflowStateKind,
    childDeployments: Object.freeze(children),
    initial(input) {
      // The first stage's input contract holds from the start, so every stored state satisfies its stage's.
      (stages[0] as Stage).inputSchema.validate(input, `${config.name} input for stage ${(stages[0] as Stage).id}`);
      return readyState(0, input.decode<Json>());
    },
    check: (value) => checkState(value, stages, outputSchema),
    step: (state, signals) => run.step(state, signals),
  });
}

/** The pure step function over one workflow's stages. */
class WorkflowRun {
  constructor(
    private readonly stages: readonly Stage[],
    private readonly outputSchema: Schema,
  ) {}

  step(state: WorkflowState, signals: readonly Signal[]): Step {
    const stage = this.stages[state.stage_index];
    switch (phaseOf(state, this.stages.length)) {
      case 'completed':
        return { state, transition: Transition.complete(0, Payload.encode(state.current_value)) };
      case 'ready':
        return this.advance(state, state, 0);
      case 'child_starting': {
        const started = startResultOf(signals[0]);
        // A single child's start failure is the stage's failure, unchanged.
        if ('failure' in started) return { state, transition: Transition.fail(1, started.failure) };
        const wait = drainedWait(stage as Stage, [started.processId]);
        return { state: { ...state, child: { process_id: started.processId } }, transition: Transition.continue(1, [wait]) };
      }
      case 'child_opening': {
        const waitId = openedWaitOf(signals[0]);
        return { state: { ...state, child: { ...state.child, wait_id: waitId.toString() } }, transition: Transition.wait(1, waitId) };
      }
      case 'child_waiting':
        return this.childDrained(state, stage as Stage, signals);
      case 'fanout_starting':
        return this.windowStarted(state, stage as FanoutStage, signals);
      case 'fanout_opening': {
        const waitId = openedWaitOf(signals[0]);
        return { state: { ...state, fanout_wait_id: waitId.toString() }, transition: Transition.wait(1, waitId) };
      }
      case 'fanout_waiting':
        return this.windowDrained(state, stage as FanoutStage, signals);
    }
  }

  /**
   * Runs stages from `state` (a stage about to begin, its value already checked against the
   * stage's input schema) until one needs children or the workflow completes. `before` is the
   * state to keep if the Step fails.
   */
  private advance(before: WorkflowState, state: WorkflowState, consumed: number): Step {
    let current = state;
    const failed = (failure: Failure): Step => ({ state: before, transition: Transition.fail(consumed, failure) });
    while (current.stage_index < this.stages.length) {
      const stage = this.stages[current.stage_index] as Stage;
      const value = current.current_value;
      switch (stage.kind) {
        case 'transform': {
          const output = attempt(() => stage.run(value), 'execution', 'workflow.transform.failed', `transform ${stage.id} failed`);
          if ('failure' in output) return failed(output.failure);
          const encoded = encode(output.value);
          if (encoded === undefined || !stage.outputSchema.accepts(encoded)) {
            return failed(Failure.create('contract', 'workflow.transform.output_invalid', `the output of transform ${stage.id} does not satisfy its output schema`));
          }
          const next = this.enter(current.stage_index + 1, output.value);
          if ('failure' in next) return failed(next.failure);
          current = next.state;
          break;
        }
        case 'call':
        case 'switch':
        case 'loop': {
          let binding: ChildBinding = stage.kind === 'switch' ? (stage.cases[0] as ChildBinding) : stage.child;
          let input: (value: Json) => Json = stage.kind === 'switch' ? (stage.cases[0] as { input: (value: Json) => Json }).input : stage.input;
          let selected: string | undefined;
          if (stage.kind === 'switch') {
            const chosen = attempt(() => stage.select(value), 'execution', 'workflow.switch.function_failed', `switch ${stage.id} select failed`);
            if ('failure' in chosen) return failed(chosen.failure);
            const match = stage.cases.find((entry) => entry.id === chosen.value);
            if (match === undefined) return failed(Failure.create('contract', 'workflow.switch.case_unknown', normalizeDiagnostic(`switch ${stage.id} has no case ${JSON.stringify(chosen.value)}`)));
            binding = match;
            input = match.input;
            selected = match.id;
          }
          const key = stage.kind === 'switch' ? `${stage.id}.${selected}` : stage.kind === 'loop' ? `${stage.id}.${current.loop_iteration}` : stage.id;
          const start = startEffect(stage, key, binding, () => input(value));
          if ('failure' in start) return failed(start.failure);
          const next: WorkflowState = { ...current, child: {}, ...(selected === undefined ? {} : { selected_case_id: selected }) };
          return { state: next, transition: Transition.continue(consumed, [start.value]) };
        }
        case 'fork':
        case 'map': {
          const listed = mapItems(stage, value);
          if ('problem' in listed) {
            const code = listed.tooMany ? 'workflow.map.too_many_items' : 'workflow.map.items_invalid';
            return failed(Failure.create('contract', code, normalizeDiagnostic(listed.problem)));
          }
          if (listed.items.length === 0) {
            const result = attempt(() => (stage.kind === 'fork' ? stage.output(value, {}) : stage.output(value, [])), 'execution', `workflow.${stage.kind}.function_failed`, `${stage.kind} ${stage.id} output failed`);
            if ('failure' in result) return failed(result.failure);
            const next = this.enter(current.stage_index + 1, result.value);
            if ('failure' in next) return failed(next.failure);
            current = next.state;
            break;
          }
          const window = startWindow(stage, value, listed.items, 0);
          if ('failure' in window) return failed(window.failure);
          return { state: { ...current, active_fanout_window: window.entries }, transition: Transition.continue(consumed, window.effects) };
        }
      }
    }
    return { state: current, transition: Transition.complete(consumed, Payload.encode(current.current_value)) };
  }

  /** The ready state of stage `index` with `value`, or the contract failure of a value it does not accept. */
  private enter(index: number, value: Json, loopIteration = 0): { readonly state: WorkflowState } | { readonly failure: Failure } {
    const stage = this.stages[index];
    const encoded = encode(value);
    const schema = stage === undefined ? this.outputSchema : stage.inputSchema;
    if (encoded === undefined || !schema.accepts(encoded)) {
      const code = stage === undefined ? 'workflow.output.invalid' : `workflow.${stage.kind}.input_invalid`;
      const message = stage === undefined ? 'the final value does not satisfy the workflow output schema' : `the value does not satisfy the input schema of stage ${stage.id}`;
      return { failure: Failure.create('contract', code, message) };
    }
    // The decoded canonical value, so the state holds exactly what its snapshot will.
    return { state: readyState(index, encoded.decode<Json>(), loopIteration) };
  }

  private childDrained(state: WorkflowState, stage: Stage, signals: readonly Signal[]): Step {
    const child = state.child as { process_id: string; wait_id: string };
    const waitId = WaitId.parse(child.wait_id);
    const answer = answerOf(signals, waitId);
    if (answer === undefined) return { state, transition: Transition.wait(0, waitId) };
    const consumed = answer.position + 1;
    const facts = answer.facts.get(child.process_id);
    if (facts === undefined) throw unexpected(`the child wait answer does not report child ${child.process_id}`);
    const outcome: Outcome = outcomeOf(stage.kind, facts);
    if (!outcome.ok) return { state, transition: Transition.fail(consumed, outcome.failure) };
    const value = state.current_value;
    let next: Json;
    if (stage.kind === 'loop') return this.iterated(state, stage, outcome.output, consumed);
    if (stage.kind === 'call') {
      const mapped = attempt(() => stage.output(value, outcome.output), 'execution', 'workflow.call.function_failed', `call ${stage.id} output failed`);
      if ('failure' in mapped) return { state, transition: Transition.fail(consumed, mapped.failure) };
      next = mapped.value;
    } else if (stage.kind === 'switch') {
      const caseId = state.selected_case_id as string;
      const mapped = attempt(() => stage.output(value, outcome.output, caseId), 'execution', 'workflow.switch.function_failed', `switch ${stage.id} output failed`);
      if ('failure' in mapped) return { state, transition: Transition.fail(consumed, mapped.failure) };
      next = mapped.value;
    } else {
      throw unexpected(`stage ${stage.id} (${stage.kind}) runs no single child`);
    }
    const entered = this.enter(state.stage_index + 1, next);
    if ('failure' in entered) return { state, transition: Transition.fail(consumed, entered.failure) };
    return this.advance(state, entered.state, consumed);
  }

  /** After a loop body completed: stop at the bound or when `until` says so, else start the next iteration. */
  private iterated(state: WorkflowState, stage: LoopStage, output: Json, consumed: number): Step {
    const iteration = state.loop_iteration + 1;
    const done = attempt(() => iteration >= stage.maxIterations || stage.until(output, iteration) === true, 'execution', 'workflow.loop.function_failed', `loop ${stage.id} until failed`);
    if ('failure' in done) return { state, transition: Transition.fail(consumed, done.failure) };
    const entered = done.value ? this.enter(state.stage_index + 1, output) : this.enter(state.stage_index, output, iteration);
    if ('failure' in entered) return { state, transition: Transition.fail(consumed, entered.failure) };
    return this.advance(state, entered.state, consumed);
  }

  private windowStarted(state: WorkflowState, stage: FanoutStage, signals: readonly Signal[]): Step {
    const size = state.active_fanout_window.length;
    if (signals.length < size) throw unexpected(`fan-out ${stage.id} expected ${size} start results, got ${signals.length}`);
    const entries: WindowEntry[] = signals.slice(0, size).map((signal) => {
      const started = startResultOf(signal);
      return 'failure' in started ? { failure: started.failure.toWire() as WindowEntry['failure'] } : { child_process_id: started.processId };
    });
    const children = entries.flatMap((entry) => (entry.child_process_id === undefined ? [] : [entry.child_process_id]));
    if (children.length === 0) {
      // Nothing started, so nothing to drain: the first start failure is the stage's.
      return { state, transition: Transition.fail(size, this.memberFailure(state, stage, 0, failureOf(entries[0] as WindowEntry) as Failure)) };
    }
    return { state: { ...state, active_fanout_window: entries }, transition: Transition.continue(size, [drainedWait(stage, children)]) };
  }

  private windowDrained(state: WorkflowState, stage: FanoutStage, signals: readonly Signal[]): Step {
    const waitId = WaitId.parse(state.fanout_wait_id as string);
    const answer = answerOf(signals, waitId);
    if (answer === undefined) return { state, transition: Transition.wait(0, waitId) };
    const consumed = answer.position + 1;
    const outputs: Json[] = [];
    for (const [position, entry] of state.active_fanout_window.entries()) {
      const startFailure = failureOf(entry);
      let outcome: Outcome;
      if (startFailure !== undefined) {
        outcome = { ok: false, failure: startFailure };
      } else {
        const facts = answer.facts.get(entry.child_process_id as string);
        if (facts === undefined) throw unexpected(`the fan-out wait answer does not report child ${entry.child_process_id}`);
        outcome = outcomeOf(stage.kind, facts);
      }
      if (!outcome.ok) return { state, transition: Transition.fail(consumed, this.memberFailure(state, stage, position, outcome.failure)) };
      outputs.push(outcome.output);
    }
    const completed = [...state.completed_fanout_outputs, ...outputs];
    const value = state.current_value;
    const listed = mapItems(stage, value);
    if ('problem' in listed) throw unexpected(listed.problem);
    if (completed.length < listed.items.length) {
      const window = startWindow(stage, value, listed.items, completed.length);
      if ('failure' in window) return { state, transition: Transition.fail(consumed, window.failure) };
      const next: WorkflowState = { ...readyState(state.stage_index, value), active_fanout_window: window.entries, completed_fanout_outputs: completed };
      return { state: next, transition: Transition.continue(consumed, window.effects) };
    }
    const result = attempt(
      () => (stage.kind === 'fork' ? stage.output(value, Object.fromEntries(stage.branches.map((branch, index) => [branch.id, completed[index]]))) : stage.output(value, completed)),
      'execution',
      `workflow.${stage.kind}.function_failed`,
      `${stage.kind} ${stage.id} output failed`,
    );
    if ('failure' in result) return { state, transition: Transition.fail(consumed, result.failure) };
    const entered = this.enter(state.stage_index + 1, result.value);
    if ('failure' in entered) return { state, transition: Transition.fail(consumed, entered.failure) };
    return this.advance(state, entered.state, consumed);
  }

  /** The failure of window member `position`, prefixed by its branch or item. */
  private memberFailure(state: WorkflowState, stage: FanoutStage, position: number, failure: Failure): Failure {
    const index = state.completed_fanout_outputs.length + position;
    return stage.kind === 'fork' ? prefixed(failure, 'branch_', (stage.branches[index] as { id: string }).id) : prefixed(failure, 'item_', String(index));
  }
}

type Attempt<T> = { readonly value: T } | { readonly failure: Failure };

/** Calls a stage's pure function; a throw becomes a Failure (the process fails, the Step is not rejected). */
function attempt<T>(call: () => T, kind: Failure['kind'], code: string, context: string): Attempt<T> {
  try {
    return { value: call() };
  } catch (error) {
    return { failure: Failure.create(kind, code, normalizeDiagnostic(`${context}: ${error instanceof Error ? error.message : String(error)}`)) };
  }
}

function encode(value: Json): Payload | undefined {
  try {
    return Payload.encode(value);
  } catch {
    return undefined;
  }
}

/** The start_child Effect of one binding, its input computed by `input` (whose throw fails the stage). */
function startEffect(stage: Stage, key: string, binding: ChildBinding, input: () => Json): Attempt<Effect> {
  const computed = attempt(input, 'execution', `workflow.${stage.kind}.function_failed`, `${stage.kind} ${stage.id} input failed`);
  if ('failure' in computed) return computed;
  const payload = encode(computed.value);
  if (payload === undefined) return { failure: Failure.create('contract', `workflow.${stage.kind}.input_invalid`, `the child input of ${stage.kind} ${stage.id} is not JSON`) };
  return {
    value: Effect.startChild(
      ChildSpec.create({ key: ChildKey.parse(key), deploymentRef: binding.deployment.ref, input: payload, budget: binding.budget, capabilities: binding.capabilities }),
    ),
  };
}

/** The window of children from item `from`: its empty entries and its start Effects (one batch). */
function startWindow(stage: FanoutStage, value: Json, items: readonly Json[], from: number): { readonly entries: WindowEntry[]; readonly effects: Effect[] } | { readonly failure: Failure } {
  const effects: Effect[] = [];
  const length = windowLength(stage, items.length, from);
  for (let index = from; index < from + length; index += 1) {
    const start =
      stage.kind === 'fork'
        ? startEffect(stage, `${stage.id}.${(stage.branches[index] as { id: string }).id}`, stage.branches[index] as ChildBinding, () => (stage.branches[index] as { input: (v: Json) => Json }).input(value))
        : startEffect(stage, `${stage.id}.${index}`, stage.child, () => stage.input(items[index], index));
    if ('failure' in start) return start;
    effects.push(start.value);
  }
  return { entries: effects.map(() => ({})), effects };
}

/** A `subtree_drained` wait for every one of `children`. */
function drainedWait(stage: Stage, children: readonly string[]): Effect {
  return Effect.waitChildren(
    ChildWaitSpec.create({
      key: WaitKey.parse(`workflow.${stage.id}`),
      children: children.map((id) => ProcessId.parse(id)),
      boundary: 'subtree_drained',
      condition: ChildWaitCondition.all(),
    }),
  );
}
