// Over 400 lines: one Definition's configuration checks, state and Step protocol, read as one unit.
import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import { ClassifiedError } from '../../src/kernel/classified-error.js';
import type { Definition } from '../../src/kernel/definition.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { ChildSpec, ChildWaitCondition, ChildWaitSpec, Effect } from '../../src/kernel/effect.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { Failure, isFailureKind, validDiagnostic } from '../../src/kernel/failure.js';
import { ChildKey, isIdentityText, ProcessId, SignalId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Quota } from '../../src/kernel/quota.js';
import { Schema } from '../../src/kernel/schema.js';
import { SignalRequest, type Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { machineDefinition } from '../internal/machine.js';
import {
  decisionSchema,
  turnSchema,
  type Control,
  type ControlReceipt,
  type Decision,
  type FailureView,
  type Task,
  type TaskOutcome,
  type TaskRequest,
  type Turn,
} from './schemas.js';
import { checkState, collaborationStateKind, type CollaborationState, type Pending } from './state.js';

/**
 * collaboration (kernel-contract §6.3): coordinator turns beside background workers. Each turn is
 * a child Process of the coordinator Deployment whose input is a {@link Turn} and whose output is a
 * {@link Decision}; the Decision starts worker tasks (child Processes of the worker Deployments,
 * chosen by descriptor name), signals or cancels running tasks, and says when the next turn comes:
 *
 * - `continue`: as soon as the Decision's actions have their receipts, while the tasks run;
 * - `wait`: once at least one outstanding task has drained (with none outstanding, at once if
 *   there are facts the coordinator has not seen — failed starts, outcomes that arrived during
 *   its turn; a `wait` with nothing to wait for fails with `collaboration.wait.nothing_outstanding`);
 * - `complete`: the collaboration completes with `output` after cancelling every task it has not
 *   seen drain (no actions allowed).
 *
 * While a turn runs, the collaboration watches the turn and every outstanding task with one
 * `wait_children` (`any`, `subtree_drained`), re-opened after each answer, so a task that drains
 * during a turn is recorded then and shown in the next Turn. Every fact is explicit: a refused or
 * failed start is the task's `start.failure`, a drained task its `outcome`, a control's receipt
 * (or refusal) its `result`. A failed turn fails the collaboration with the turn's own Failure,
 * unchanged; so does an engine refusal of a turn start.
 *
 * Bounds: `maxTurns` turns in all (a non-complete Decision in the last turn fails with
 * `collaboration.turns.exhausted`); `maxTasks` start attempts (an Engine-rejected start counts;
 * beyond it, requests are refused); `maxConcurrentTasks` admitted tasks whose drained outcome the
 * collaboration has not observed, counting this Decision's own starts (beyond it a request is
 * refused, not deferred: a refused task is a fact the coordinator can act on with a new key);
 * `maxControlsPerTurn` controls acted on per Decision (the rest get refused receipts).
 */

/** One child Deployment the collaboration binds, with the grant each of its Processes gets. */
export interface WorkerConfig {
  readonly deployment: Deployment;
  /** Permanently allocated from the collaboration to each child it starts from this binding. */
  readonly budget: Budget;
  readonly capabilities: CapabilitySet;
}

export interface CollaborationConfig {
  /** The collaboration's descriptor name (a qualified name). */
  readonly name: string;
  readonly description: string;
  readonly coordinator: WorkerConfig;
  /** Selected by descriptor name, which must be unique. */
  readonly workers: readonly WorkerConfig[];
  /** The working state: the collaboration's input and every Decision's `state`. */
  readonly stateSchema: Schema;
  /** The collaboration's output (a `complete` Decision's `output`). */
  readonly outputSchema: Schema;
  readonly maxTurns: Quota;
  readonly maxTasks: Quota;
  /** > 0. */
  readonly maxConcurrentTasks: number;
  /** > 0. */
  readonly maxControlsPerTurn: number;
}

/** Task keys may not start with it: the collaboration's own children (its turns) are keyed under it. */
export const reservedKeyPrefix = 'collaboration:';

/** The child key of turn `number`. */
export function turnKey(number: number): string {
  return `${reservedKeyPrefix}turn:${number}`;
}

/** The cancellation reason a `complete` Decision gives the tasks still running. */
export const completionCancelReason = 'the collaboration completed';

/** Step errors for a window that breaks the Engine protocol this Definition relies on. */
const protocolInvalid = new ClassifiedError('contract', 'collaboration.protocol.invalid', 'the window breaks the collaboration protocol');

/** Throws a definition-time configuration error. */
function configError(message: string): never {
  throw new KernelError(ErrorCode.invalidDeployment, `invalid collaboration ${message}`);
}

function checkWorkerConfig(what: string, worker: WorkerConfig): void {
  if (typeof worker !== 'object' || worker === null) configError(`${what}: expected {deployment, budget, capabilities}`);
  if (!(worker.deployment instanceof Deployment)) configError(`${what}: deployment must be a Deployment`);
  if (!(worker.budget instanceof Budget)) configError(`${what}: budget must be a Budget`);
  if (!(worker.capabilities instanceof CapabilitySet)) configError(`${what}: capabilities must be a CapabilitySet`);
}

function positiveCount(what: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1 || value > 0xffff_ffff) configError(`${what} must be a uint32 > 0, got ${String(value)}`);
}

/** A Failure from its wire view, or a replacement when the view is not a valid one. */
function failureOf(view: FailureView | undefined, fallbackCode: string, fallback: string): Failure {
  if (view !== undefined && isFailureKind(view.kind)) {
    try {
      return Failure.create(view.kind, view.code, view.message);
    } catch {
      // An invalid view cannot be preserved; the fallback below says what happened instead.
    }
  }
  return Failure.create('external', fallbackCode, fallback);
}

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function protocol(problem: string): never {
  throw protocolInvalid.wrap(problem);
}

/** A framework receipt of one of `operations` (engine-owned, unaddressed): its failure view, the started child, or neither (a control that succeeded). */
function receipt(signal: Signal | undefined, operations: readonly string[]): { readonly failure?: FailureView; readonly processId?: string } {
  if (signal === undefined) protocol('a receipt is missing from the window');
  const payload = objectOf(signal.payload.decode<unknown>());
  if (!signal.engineOwned || signal.waitId !== undefined || signal.status !== undefined || payload === undefined || !operations.includes(payload.operation as string)) {
    protocol(`expected a ${operations.join(' or ')} receipt, got ${signal.id.toString()}`);
  }
  const failure = objectOf(payload.failure) as FailureView | undefined;
  const processId = typeof payload.process_id === 'string' ? payload.process_id : undefined;
  return failure !== undefined ? { failure } : processId !== undefined ? { processId } : {};
}

/** One child's facts in a child-wait answer. */
interface AnsweredChild {
  readonly processId: string;
  readonly status: string;
  readonly output?: unknown;
  readonly failure?: FailureView;
  readonly reason?: string;
}

function answeredChildren(signal: Signal): AnsweredChild[] {
  const outcomes = objectOf(signal.payload.decode<unknown>())?.outcomes;
  if (!Array.isArray(outcomes)) protocol('a child-wait answer without outcomes');
  return outcomes.map((entry: unknown) => {
    const result = objectOf(objectOf(entry)?.result);
    const termination = objectOf(result?.termination);
    if (result === undefined || typeof result.process_id !== 'string' || termination === undefined || typeof termination.status !== 'string') {
      protocol('a child-wait outcome without a result');
    }
    const child: AnsweredChild = { processId: result.process_id, status: termination.status };
    return {
      ...child,
      ...(Object.hasOwn(result, 'output') ? { output: result.output } : {}),
      ...(objectOf(termination.failure) !== undefined ? { failure: termination.failure as FailureView } : {}),
      ...(typeof termination.reason === 'string' ? { reason: termination.reason } : {}),
    };
  });
}

function taskOutcome(child: AnsweredChild): TaskOutcome {
  const { processId: _processId, ...outcome } = child;
  return outcome;
}

function startedProcess(task: Task): string | undefined {
  return task.start !== undefined && 'processId' in task.start ? task.start.processId : undefined;
}

/** Admitted tasks whose drained outcome has not been observed, in task order. */
function outstanding(state: CollaborationState): string[] {
  return state.tasks.flatMap((task) => {
    const processId = startedProcess(task);
    return processId !== undefined && task.outcome === undefined ? [processId] : [];
  });
}

function refusal(code: string, message: string): { readonly failure: FailureView } {
  return { failure: { kind: 'contract', code, message } };
}

function accepts(schema: Schema, value: unknown): boolean {
  try {
    return schema.accepts(Payload.encode(value));
  } catch {
    return false;
  }
}

function withoutWatch(state: CollaborationState): CollaborationState {
  const { watch: _watch, ...rest } = state;
  return rest;
}

interface Next {
  readonly state: CollaborationState;
  readonly transition: Transition;
}

/** The collaboration Definition over its coordinator and worker bindings; the configuration is checked here. */
export function collaborationDefinition(config: CollaborationConfig): Definition {
  if (typeof config !== 'object' || config === null) configError('config: expected an object');
  checkWorkerConfig('coordinator', config.coordinator);
  if (!Array.isArray(config.workers)) configError('workers must be an array');
  config.workers.forEach((worker, index) => checkWorkerConfig(`workers[${index}]`, worker));
  if (!(config.stateSchema instanceof Schema)) configError('stateSchema must be a Schema');
  if (!(config.outputSchema instanceof Schema)) configError('outputSchema must be a Schema');
  if (!(config.maxTurns instanceof Quota)) configError('maxTurns must be a Quota');
  if (!(config.maxTasks instanceof Quota)) configError('maxTasks must be a Quota');
  positiveCount('maxConcurrentTasks', config.maxConcurrentTasks);
  positiveCount('maxControlsPerTurn', config.maxControlsPerTurn);
  const coordinator = config.coordinator.deployment.descriptor;
  if (!coordinator.inputSchema.equals(turnSchema)) {
    configError(`coordinator: ${coordinator.name} must accept exactly the collaboration Turn schema as its input`);
  }
  if (!coordinator.outputSchema.equals(decisionSchema)) {
    configError(`coordinator: ${coordinator.name} must return exactly the collaboration Decision schema as its output`);
  }
  const workers = new Map<string, WorkerConfig>();
  for (const worker of config.workers) {
    const name = worker.deployment.descriptor.name;
    if (workers.has(name)) configError(`workers: the descriptor name ${name} is bound twice (workers are selected by name)`);
    workers.set(name, worker);
  }
  const descriptor = Descriptor.create({
    name: config.name,
    description: config.description,
    inputSchema: config.stateSchema,
    outputSchema: config.outputSchema,
  });
  const workerDescriptors = config.workers.map((worker) => JSON.parse(worker.deployment.descriptor.json()) as unknown);
  const maxTurns = config.maxTurns.maximum;
  const maxTasks = config.maxTasks.maximum;

  /** Starts turn `state.turn + 1` with the facts gathered so far. */
  const startTurn = (state: CollaborationState, consumed: number): Next => {
    const number = state.turn + 1;
    if (maxTurns !== undefined && BigInt(number) > maxTurns) {
      return { state, transition: Transition.fail(consumed, Failure.create('execution', 'collaboration.turns.exhausted', `the collaboration may take at most ${maxTurns} turns`)) };
    }
    const turn: Turn = { number, state: state.state, workers: workerDescriptors, tasks: state.tasks, controls: state.controls };
    const start = Effect.startChild(
      ChildSpec.create({
        key: ChildKey.parse(turnKey(number)),
        deploymentRef: config.coordinator.deployment.ref,
        input: Payload.encode(turn),
        budget: config.coordinator.budget,
        capabilities: config.coordinator.capabilities,
      }),
    );
    const { mode: _mode, watch: _watch, ...rest } = state;
    return { state: { ...rest, phase: 'turn_starting', turn: number, controls: [], pending: [], unseen: 0 }, transition: Transition.continue(consumed, [start]) };
  };

  /** Watches the running turn and every outstanding task until one of them drains. */
  const openWatch = (state: CollaborationState, consumed: number): Next => {
    const children = [...(state.turnChild === undefined ? [] : [state.turnChild]), ...outstanding(state)];
    const watch = Effect.waitChildren(
      ChildWaitSpec.create({
        key: WaitKey.parse(`collaboration.watch.${state.watches + 1}`),
        children: children.map((id) => ProcessId.parse(id)),
        boundary: 'subtree_drained',
        condition: ChildWaitCondition.any(),
      }),
    );
    return { state: { ...withoutWatch(state), phase: 'watch_opening', watches: state.watches + 1 }, transition: Transition.continue(consumed, [watch]) };
  };

  /** After the Decision's receipts: the next turn now (`continue`), or once a task drains (`wait`). */
  const afterActions = (state: CollaborationState, consumed: number): Next => {
    if (state.mode === 'continue') return startTurn(state, consumed);
    if (outstanding(state).length > 0) return openWatch(state, consumed);
    // Nothing left to drain: facts the coordinator has not seen (failed starts, outcomes observed
    // during its turn) are what the next turn is for; without any, the wait could never end.
    if (state.unseen > 0) return startTurn(state, consumed);
    return {
      state,
      transition: Transition.fail(consumed, Failure.create('contract', 'collaboration.wait.nothing_outstanding', 'the coordinator chose wait with no task outstanding and no new fact to report')),
    };
  };

  const invalidDecision = (state: CollaborationState, consumed: number, problem: string): Next => ({
    state,
    transition: Transition.fail(consumed, Failure.create('contract', 'collaboration.decision.invalid', `turn ${state.turn}: ${problem}`)),
  });

  /** Compiles one task request into a start, or records why it is refused. */
  const compileTask = (tasks: Task[], request: TaskRequest, counts: { attempts: number; running: number; unseen: number }): Effect | undefined => {
    const refuse = (code: string, message: string): undefined => {
      tasks.push({ request, start: refusal(code, message) });
      counts.unseen += 1;
      return undefined;
    };
    if (request.key.startsWith(reservedKeyPrefix)) return refuse('collaboration.task.key_reserved', `task keys may not start with ${reservedKeyPrefix}`);
    if (!isIdentityText(request.key)) return refuse('collaboration.task.key_invalid', 'a task key is 1-256 of [A-Za-z0-9._:-]');
    if (tasks.some((task) => task.request.key === request.key)) {
      return refuse('collaboration.task.key_reused', `task key ${request.key} was used before; follow-up work needs a new key`);
    }
    const worker = workers.get(request.worker);
    if (worker === undefined) return refuse('collaboration.task.worker_unknown', `no worker is bound under the name ${request.worker}`);
    if (maxTasks !== undefined && BigInt(counts.attempts) >= maxTasks) return refuse('collaboration.task.limit_exceeded', `the collaboration may start at most ${maxTasks} tasks`);
    if (counts.running >= config.maxConcurrentTasks) {
      return refuse('collaboration.task.concurrency_exceeded', `at most ${config.maxConcurrentTasks} tasks may run at once`);
    }
    counts.attempts += 1;
    counts.running += 1;
    tasks.push({ request });
    return Effect.startChild(
      ChildSpec.create({
        key: ChildKey.parse(request.key),
        deploymentRef: worker.deployment.ref,
        input: Payload.encode(request.input),
        budget: worker.budget,
        capabilities: worker.capabilities,
      }),
    );
  };

  /** Compiles one control into signal_child / cancel_child, or records why it is refused. */
  const compileControl = (tasks: readonly Task[], control: Control, index: number): { readonly effect?: Effect; readonly receipt: ControlReceipt } => {
    const refuse = (code: string, message: string) => ({ receipt: { control, result: { status: 'failed' as const, ...refusal(code, message) } } });
    if (index >= config.maxControlsPerTurn) return refuse('collaboration.control.limit_exceeded', `a decision may apply at most ${config.maxControlsPerTurn} controls`);
    const task = tasks.find((entry) => entry.request.key === control.task);
    if (task === undefined) return refuse('collaboration.control.task_unknown', `no task has the key ${control.task}`);
    const processId = startedProcess(task);
    if (processId === undefined) return refuse('collaboration.control.task_not_started', `task ${control.task} has no started process`);
    try {
      const child = ProcessId.parse(processId);
      if (control.signal !== undefined) {
        const request = SignalRequest.create({
          id: control.signal.id,
          waitId: control.signal.waitId === undefined ? undefined : WaitId.parse(control.signal.waitId),
          payload: Payload.encode(control.signal.payload),
        });
        return { effect: Effect.signalChild(child, request), receipt: { control } };
      }
      const reason = control.cancelReason ?? '';
      if (!validDiagnostic(reason)) return refuse('collaboration.control.invalid', 'a cancel reason is non-empty, trimmed text');
      return { effect: Effect.cancelChild(child, reason), receipt: { control } };
    } catch (error) {
      return refuse('collaboration.control.invalid', error instanceof Error ? error.message.slice(0, 1000).trim() || 'invalid control' : 'invalid control');
    }
  };

  /** The turn's Decision, applied. */
  const decide = (state: CollaborationState, output: unknown, consumed: number): Next => {
    if (!accepts(decisionSchema, output)) return invalidDecision(state, consumed, 'the output is not a Decision');
    const decision = output as Decision;
    if (!accepts(config.stateSchema, decision.state)) return invalidDecision(state, consumed, 'the decision state does not satisfy the state schema');
    const requests = decision.tasks ?? [];
    const controls = decision.controls ?? [];
    const next: CollaborationState = { ...state, state: decision.state };
    if (decision.mode === 'complete') {
      if (requests.length > 0 || controls.length > 0) return invalidDecision(state, consumed, 'a complete decision starts no tasks and applies no controls');
      if (!Object.hasOwn(decision, 'output')) return invalidDecision(state, consumed, 'a complete decision carries the output');
      if (!accepts(config.outputSchema, decision.output)) return invalidDecision(state, consumed, 'the output does not satisfy the output schema');
      const running = outstanding(next);
      if (running.length === 0) return { state: next, transition: Transition.complete(consumed, Payload.encode(decision.output)) };
      const cancels = running.map((id) => Effect.cancelChild(ProcessId.parse(id), completionCancelReason));
      return {
        state: { ...withoutWatch(next), phase: 'completing', output: decision.output, pending: running.map((id) => ({ cancel: id })) },
        transition: Transition.continue(consumed, cancels),
      };
    }
    if (Object.hasOwn(decision, 'output')) return invalidDecision(state, consumed, `a ${decision.mode} decision carries no output`);
    if (maxTurns !== undefined && BigInt(state.turn) >= maxTurns) {
      return {
        state,
        transition: Transition.fail(consumed, Failure.create('execution', 'collaboration.turns.exhausted', `turn ${state.turn} was the last of at most ${maxTurns} turns, and it chose ${decision.mode}`)),
      };
    }
    const tasks = [...next.tasks];
    const counts = { attempts: next.attempts, running: outstanding(next).length, unseen: next.unseen };
    const effects: Effect[] = [];
    const pending: Pending[] = [];
    for (const request of requests) {
      const effect = compileTask(tasks, request, counts);
      if (effect !== undefined) {
        effects.push(effect);
        pending.push({ task: tasks.length - 1 });
      }
    }
    const receipts: ControlReceipt[] = [];
    controls.forEach((control, index) => {
      const compiled = compileControl(tasks, control, index);
      receipts.push(compiled.receipt);
      if (compiled.effect !== undefined) {
        effects.push(compiled.effect);
        pending.push({ control: receipts.length - 1 });
      }
    });
    const acting: CollaborationState = { ...next, tasks, controls: receipts, attempts: counts.attempts, unseen: counts.unseen, mode: decision.mode, pending };
    if (effects.length === 0) return afterActions(acting, consumed);
    return { state: { ...withoutWatch(acting), phase: 'acting' }, transition: Transition.continue(consumed, effects) };
  };

  /** A child-wait answer of the watch: record drained tasks; the turn's Decision when the turn is among them. */
  const onAnswer = (state: CollaborationState, answer: Signal, consumed: number): Next => {
    const tasks = [...state.tasks];
    let unseen = state.unseen;
    let turn: AnsweredChild | undefined;
    for (const child of answeredChildren(answer)) {
      if (child.processId === state.turnChild) {
        turn = child;
        continue;
      }
      const index = tasks.findIndex((task) => startedProcess(task) === child.processId && task.outcome === undefined);
      if (index < 0) protocol(`the answer reports ${child.processId}, which this watch did not await`);
      tasks[index] = { ...(tasks[index] as Task), outcome: taskOutcome(child) };
      unseen += 1;
    }
    // The watch stays recorded until the next phase replaces it, so a failing state is still a valid one.
    const next: CollaborationState = { ...state, tasks, unseen };
    if (turn === undefined) return next.turnChild !== undefined ? openWatch(next, consumed) : startTurn(next, consumed);
    const { turnChild: _turnChild, ...afterTurn } = next;
    if (turn.status !== 'completed') {
      const failure = failureOf(turn.failure, 'collaboration.coordinator.not_completed', `turn ${state.turn} ended ${turn.status}${turn.reason === undefined ? '' : `: ${turn.reason}`}`);
      return { state: afterTurn, transition: Transition.fail(consumed, failure) };
    }
    return decide(afterTurn, turn.output, consumed);
  };

  return machineDefinition<CollaborationState>({
    descriptor,
    stateKind: collaborationStateKind,
    childDeployments: [config.coordinator.deployment, ...config.workers.map((worker) => worker.deployment)],
    initial(input) {
      return { phase: 'init', turn: 0, state: input.decode<unknown>(), tasks: [], controls: [], attempts: 0, watches: 0, unseen: 0, pending: [] };
    },
    check: checkState,
    step(state, signals): Next {
      switch (state.phase) {
        case 'init':
          return startTurn(state, 0);
        case 'turn_starting': {
          const started = receipt(signals[0], ['start_child']);
          if (started.processId === undefined) {
            const failure = failureOf(started.failure, 'collaboration.coordinator.start_failed', `turn ${state.turn} did not start`);
            return { state, transition: Transition.fail(1, failure) };
          }
          return openWatch({ ...state, turnChild: started.processId }, 1);
        }
        case 'watch_opening': {
          const opening = signals[0];
          if (opening?.waitId === undefined || !opening.id.equals(SignalId.waitOpened(opening.waitId))) protocol('expected the opening of the watch');
          const watch = opening.waitId;
          const opened: CollaborationState = { ...state, phase: 'watching', watch: watch.toString() };
          const answer = signals[1];
          if (answer !== undefined && answer.id.equals(SignalId.childWaitSatisfied(watch))) return onAnswer(opened, answer, 2);
          return { state: opened, transition: Transition.wait(1, watch) };
        }
        case 'watching': {
          const watch = WaitId.parse(state.watch);
          const answer = signals[0];
          if (answer === undefined) return { state, transition: Transition.wait(0, watch) };
          if (!answer.id.equals(SignalId.childWaitSatisfied(watch))) protocol(`expected the answer of ${watch.toString()}, got ${answer.id.toString()}`);
          return onAnswer(state, answer, 1);
        }
        case 'acting': {
          const tasks = [...state.tasks];
          const controls = [...state.controls];
          let unseen = state.unseen;
          state.pending.forEach((pending, position) => {
            if ('task' in pending) {
              const started = receipt(signals[position], ['start_child']);
              const task = tasks[pending.task] as Task;
              if (started.processId !== undefined) {
                tasks[pending.task] = { ...task, start: { processId: started.processId } };
              } else {
                tasks[pending.task] = { ...task, start: { failure: started.failure ?? refusal('collaboration.task.start_failed', 'the start failed').failure } };
                unseen += 1;
              }
            } else if ('control' in pending) {
              const control = controls[pending.control] as ControlReceipt;
              const operation = control.control.signal !== undefined ? 'signal_child' : 'cancel_child';
              const settled = receipt(signals[position], [operation]);
              controls[pending.control] = { ...control, result: settled.failure === undefined ? { status: 'succeeded' } : { status: 'failed', failure: settled.failure } };
            } else {
              protocol('a cancel receipt outside completion');
            }
          });
          return afterActions({ ...state, tasks, controls, unseen, pending: [] }, state.pending.length);
        }
        case 'completing': {
          for (let position = 0; position < state.pending.length; position += 1) receipt(signals[position], ['cancel_child']);
          return { state, transition: Transition.complete(state.pending.length, Payload.encode(state.output)) };
        }
      }
    },
  });
}
