import { Budget } from '../kernel/budget.js';
import { CapabilitySet } from '../kernel/capability.js';
import type { Deployment } from '../kernel/deployment.js';
import { Descriptor } from '../kernel/descriptor.js';
import { ChildSpec, ChildWaitCondition, ChildWaitSpec, Effect } from '../kernel/effect.js';
import { Failure } from '../kernel/failure.js';
import { ChildKey, ProcessId, WaitId, WaitKey } from '../kernel/identity.js';
import { Payload } from '../kernel/payload.js';
import { Quota } from '../kernel/quota.js';
import { Schema } from '../kernel/schema.js';
import type { Signal } from '../kernel/signal.js';
import { SignalRequest } from '../kernel/signal.js';
import { Transition } from '../kernel/transition.js';
import { MachineDefinition, oneOf, stateRecord, text } from './example-definitions.js';

/**
 * The process trees of the committer conformance suite's child cases (kernel-contract §5.2):
 *
 * - the **crash tree**: a root that starts one `worker` child, waits for its terminal result and
 *   completes; the worker (the wait example on key `external_input`) waits for a Host answer;
 * - the **control tree**: a parent that starts one child that pauses at once, pauses itself until
 *   the harness resumes it (the cue), then declares one named child control and, once its receipts
 *   are adopted, pauses again.
 *
 * Both are pure state machines (see example-definitions.ts): every Step is a function of the state
 * and the delivered window.
 */

/** The crash tree's worker grant: exactly what the worker spends (3 Steps, 1 wait Effect, 2 Signals). */
export const crashWorkerBudget: Budget = Budget.of({ steps: Quota.of(3), effects: Quota.of(1), signals: Quota.of(2) });
/** The worker's input: the wait example on the key the crash cases answer. */
export const crashWorkerInput: Payload = Payload.encode({ key: 'external_input' });

/** The control tree child's grant. */
export const controlledChildBudget: Budget = Budget.of({ steps: Quota.of(10), effects: Quota.of(10), signals: Quota.of(10) });

/** The controls the control tree's parent can declare, by their §5.3 case names. */
export const childControls = ['signal', 'duplicate signal', 'full mailbox', 'unowned signal', 'unowned cancel', 'cancel'] as const;
export type ChildControlName = (typeof childControls)[number];

/** The signal every signal control sends. */
export const frameworkControlSignal: SignalRequest = SignalRequest.create({
  id: 'signal:framework-control',
  payload: Payload.encode({ instruction: 'retain exactly once' }),
});
/** A process no parent of the control tree owns. */
export const outsideControlledTree: ProcessId = ProcessId.parse('process:outside-controlled-tree');
export const controlCancelReason = 'conformance child cancellation';
/** The pause reason of the control parent while it waits for the harness's cue (a resume). */
export const awaitingCueReason = 'awaiting the control cue';

const anyObject = Schema.of({ type: 'object' });
const anyValue = Schema.of(true);

/** A start_child settlement: `{"operation":"start_child","process_id"}` or `{…,"failure"}`. */
function startedChild(signal: Signal | undefined): ProcessId | Failure {
  const result = signal?.payload.decode<{ process_id?: string; failure?: { code?: string } }>();
  if (result?.process_id !== undefined) return ProcessId.parse(result.process_id);
  return Failure.create('execution', 'conformance.child.start_failed', `the child did not start: ${result?.failure?.code ?? 'no start result'}`);
}

// ---------------------------------------------------------------------------------------------
// The crash tree

type CrashRootPhase = 'ready' | 'starting' | 'opening' | 'waiting' | 'completed';
const crashRootPhases: readonly CrashRootPhase[] = ['ready', 'starting', 'opening', 'waiting', 'completed'];

interface CrashRootState {
  readonly phase: CrashRootPhase;
  readonly child_id?: string;
  readonly wait_id?: string;
}

const crashRootKind = 'conformance.crash_tree.root';

/**
 * Step 1 starts the worker (key `worker`, {@link crashWorkerBudget}); Step 2 opens a child wait on
 * it (key `child_completion`, `terminal_result`, all); Step 3 waits; Step 4 completes with the
 * answer. Usage when done: 4 Steps, 2 Effects, 3 Signals.
 */
export function crashTreeRootDefinition(worker: Deployment): MachineDefinition<CrashRootState> {
  return new MachineDefinition<CrashRootState>({
    descriptor: Descriptor.create({
      name: crashRootKind,
      description: 'Starts one worker child, waits for its terminal result and completes.',
      inputSchema: anyObject,
      outputSchema: anyValue,
    }),
    childDeployments: [worker],
    stateKind: crashRootKind,
    initial: () => ({ phase: 'ready' }),
    check(value) {
      const record = stateRecord(crashRootKind, value, ['phase'], ['child_id', 'wait_id']);
      return {
        phase: oneOf(crashRootKind, 'phase', record.phase, crashRootPhases),
        ...(record.child_id === undefined ? {} : { child_id: text(crashRootKind, 'child_id', record.child_id) }),
        ...(record.wait_id === undefined ? {} : { wait_id: text(crashRootKind, 'wait_id', record.wait_id) }),
      };
    },
    reduce(state, signals) {
      switch (state.phase) {
        case 'ready': {
          const spec = ChildSpec.create({
            key: ChildKey.parse('worker'),
            deploymentRef: worker.ref,
            input: crashWorkerInput,
            budget: crashWorkerBudget,
            capabilities: CapabilitySet.empty,
          });
          return { state: { phase: 'starting' }, transition: Transition.continue(0, [Effect.startChild(spec)]) };
        }
        case 'starting': {
          const child = startedChild(signals[0]);
          if (child instanceof Failure) return { state: { phase: 'completed' }, transition: Transition.fail(1, child) };
          const spec = ChildWaitSpec.create({ key: WaitKey.parse('child_completion'), children: [child], boundary: 'terminal_result', condition: ChildWaitCondition.all() });
          return { state: { phase: 'opening', child_id: child.toString() }, transition: Transition.continue(1, [Effect.waitChildren(spec)]) };
        }
        case 'opening': {
          const waitId = signals[0]?.waitId as WaitId;
          return { state: { ...state, phase: 'waiting', wait_id: waitId.toString() }, transition: Transition.wait(1, waitId) };
        }
        case 'waiting': {
          const waitId = WaitId.parse(state.wait_id);
          const position = signals.findIndex((signal) => waitId.equals(signal.waitId));
          if (position < 0) return { state, transition: Transition.wait(0, waitId) };
          return { state: { ...state, phase: 'completed' }, transition: Transition.complete(position + 1, (signals[position] as Signal).payload) };
        }
        case 'completed':
          throw new Error('the crash tree root has completed');
      }
    },
  });
}

// ---------------------------------------------------------------------------------------------
// The control tree

type ControlParentPhase = 'ready' | 'starting' | 'cued' | 'controlling' | 'controlled';
const controlParentPhases: readonly ControlParentPhase[] = ['ready', 'starting', 'cued', 'controlling', 'controlled'];

interface ControlParentState {
  readonly phase: ControlParentPhase;
  readonly control: ChildControlName;
  readonly child_id?: string;
}

const controlParentKind = 'conformance.control_tree.parent';
const controlChildKind = 'conformance.control_tree.child';

/** The control Effects `control` declares towards `child`, in batch order. */
export function controlEffects(control: ChildControlName, child: ProcessId): Effect[] {
  switch (control) {
    case 'signal':
    case 'full mailbox':
      return [Effect.signalChild(child, frameworkControlSignal)];
    case 'duplicate signal':
      return [Effect.signalChild(child, frameworkControlSignal), Effect.signalChild(child, frameworkControlSignal)];
    case 'unowned signal':
      return [Effect.signalChild(outsideControlledTree, frameworkControlSignal)];
    case 'unowned cancel':
      return [Effect.cancelChild(outsideControlledTree, controlCancelReason)];
    case 'cancel':
      return [Effect.cancelChild(child, controlCancelReason)];
  }
}

/**
 * Input `{"control": name}`. Step 1 starts the child (key `controlled`, {@link controlledChildBudget});
 * Step 2 consumes the start result and pauses ({@link awaitingCueReason}); the Step after the resume
 * declares {@link controlEffects}; the next consumes their receipts and pauses again.
 */
export function controlParentDefinition(child: Deployment): MachineDefinition<ControlParentState> {
  return new MachineDefinition<ControlParentState>({
    descriptor: Descriptor.create({
      name: controlParentKind,
      description: 'Starts one child, waits for a cue, then sends it one framework control.',
      inputSchema: Schema.of({
        type: 'object',
        properties: { control: { enum: [...childControls] } },
        required: ['control'],
        additionalProperties: false,
      }),
      outputSchema: anyValue,
    }),
    childDeployments: [child],
    stateKind: controlParentKind,
    initial: (input) => ({ phase: 'ready', control: input.decode<{ control: ChildControlName }>().control }),
    check(value) {
      const record = stateRecord(controlParentKind, value, ['phase', 'control'], ['child_id']);
      return {
        phase: oneOf(controlParentKind, 'phase', record.phase, controlParentPhases),
        control: oneOf(controlParentKind, 'control', record.control, childControls),
        ...(record.child_id === undefined ? {} : { child_id: text(controlParentKind, 'child_id', record.child_id) }),
      };
    },
    reduce(state, signals) {
      switch (state.phase) {
        case 'ready': {
          const spec = ChildSpec.create({
            key: ChildKey.parse('controlled'),
            deploymentRef: child.ref,
            input: Payload.emptyObject,
            budget: controlledChildBudget,
            capabilities: CapabilitySet.empty,
          });
          return { state: { ...state, phase: 'starting' }, transition: Transition.continue(0, [Effect.startChild(spec)]) };
        }
        case 'starting': {
          const started = startedChild(signals[0]);
          if (started instanceof Failure) return { state: { ...state, phase: 'controlled' }, transition: Transition.fail(1, started) };
          return { state: { ...state, phase: 'cued', child_id: started.toString() }, transition: Transition.pause(1, awaitingCueReason) };
        }
        case 'cued': {
          const effects = controlEffects(state.control, ProcessId.parse(state.child_id));
          return { state: { ...state, phase: 'controlling' }, transition: Transition.continue(0, effects) };
        }
        case 'controlling':
        case 'controlled':
          return { state: { ...state, phase: 'controlled' }, transition: Transition.pause(signals.length, 'controls adopted') };
      }
    },
  });
}

type ControlChildPhase = 'parked' | 'completed';

/** Pauses on its first Step; the Step after a resume consumes every Signal and completes with their payloads. */
export const controlChildDefinition: MachineDefinition<{ readonly phase: ControlChildPhase }> = new MachineDefinition({
  descriptor: Descriptor.create({
    name: controlChildKind,
    description: 'Pauses at once; after a resume, completes with every signal it received.',
    inputSchema: anyObject,
    outputSchema: anyValue,
    signalSchema: anyValue,
  }),
  stateKind: controlChildKind,
  initial: () => ({ phase: 'parked' }),
  check(value) {
    const record = stateRecord(controlChildKind, value, ['phase']);
    return { phase: oneOf<ControlChildPhase>(controlChildKind, 'phase', record.phase, ['parked', 'completed']) };
  },
  reduce(state, signals) {
    if (state.phase === 'completed') throw new Error('the controlled child has completed');
    if (signals.length === 0) return { state, transition: Transition.pause(0, 'the controlled child is parked') };
    const received = signals.map((signal) => signal.payload.decode());
    return { state: { phase: 'completed' }, transition: Transition.complete(signals.length, Payload.encode({ received })) };
  },
});
