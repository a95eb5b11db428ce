import { Budget } from '../kernel/budget.js';
import { CapabilitySet } from '../kernel/capability.js';
import { DeploymentRef } from '../kernel/deployment.js';
import { Digest, sha256Hex } from '../kernel/digest.js';
import { ChildSpec, Effect } from '../kernel/effect.js';
import { ExecutionState } from '../kernel/execution-state.js';
import { Failure } from '../kernel/failure.js';
import { ChildKey, EffectId, ProcessId, SignalId, TreeIncarnationId, WaitId, WaitKey } from '../kernel/identity.js';
import { Mailbox, MailboxRecord } from '../kernel/mailbox.js';
import { Payload } from '../kernel/payload.js';
import { PreparedStep, type PreparedEffectInput } from '../kernel/prepared-step.js';
import { ProcessSnapshot, type ProcessSnapshotCreateOptions } from '../kernel/process-snapshot.js';
import { ProcessRelation } from '../kernel/relation.js';
import { Settlement, type SettlementStatus } from '../kernel/settlement.js';
import { SignalRequest } from '../kernel/signal.js';
import type { Status } from '../kernel/status.js';
import { Termination } from '../kernel/termination.js';
import { TreeLimits } from '../kernel/tree-limits.js';
import { TreeSnapshot } from '../kernel/tree-snapshot.js';
import { Transition } from '../kernel/transition.js';

/**
 * Deterministic, valid TreeSnapshots built without an Engine, for kernel tests, the commit-protocol
 * conformance suite and third-party store authors. Every builder is a pure function of its
 * options: fixed timestamps, ids derived from labels, a fixed test DeploymentRef.
 */

/** The fixed start time of every fixture Process. */
export const fixtureStartedAt = '2025-01-01T00:00:00Z';
/** The fixed finish time of every terminal fixture Process. */
export const fixtureFinishedAt = '2025-01-01T00:01:00.5Z';

/** The fixed DeploymentRef of every fixture Process. */
export const testDeploymentRef: DeploymentRef = DeploymentRef.create({
  name: 'scope.test.fixture',
  contractDigest: Digest.of('scope-test-fixture-contract'),
  implementationDigest: Digest.of('scope-test-fixture-implementation'),
  configurationDigest: Digest.of('scope-test-fixture-configuration'),
  bindingsDigest: DeploymentRef.bindingsDigestOf([]),
});

/** The ExecutionState kind fixture states use. */
export const fixtureStateKind = 'scope.test.fixture-state';

/** A deterministic root ProcessId (`process:` + 32 hex) derived from `label`. */
export function fixtureProcessId(label = 'root'): ProcessId {
  return ProcessId.parse(`process:${sha256Hex(`scope-fixture-process\u0000${label}`).slice(0, 32)}`);
}

/** A deterministic TreeIncarnationId derived from `label`. */
export function fixtureIncarnationId(label = 'writer-1'): TreeIncarnationId {
  return TreeIncarnationId.parse(`incarnation:${sha256Hex(`scope-fixture-incarnation\u0000${label}`).slice(0, 32)}`);
}

/** A fixture Strategy state recording a step counter. */
export function fixtureState(step: number | bigint = 0): ExecutionState {
  return ExecutionState.encode(fixtureStateKind, { step: Number(step) });
}

/** The payload of the fixture's external input number `index` of `label`. */
export function fixtureSignalRequest(label: string, index: number, waitId?: WaitId): SignalRequest {
  return SignalRequest.create({ id: `signal:${label}:${index}`, waitId, payload: Payload.encode({ input: index, label }) });
}

/** The fixture's Dispatcher Effect (no required capabilities). */
export function fixtureDispatcherEffect(label = 'effect'): Effect {
  return Effect.dispatcher(Payload.encode({ call: label }));
}

/** The EffectId of effect `index` of the Step after `committedSteps`. */
export function fixtureEffectId(processId: ProcessId, committedSteps: bigint, index = 0): EffectId {
  return EffectId.derive(processId, committedSteps + 1n, index);
}

/** Common options of the root builders. */
export interface FixtureOptions {
  /** Default `fixtureProcessId('root')`. */
  readonly rootId?: ProcessId;
  /** Default `fixtureIncarnationId('writer-1')`. */
  readonly incarnationId?: TreeIncarnationId;
  /** Default `TreeLimits.defaults`. */
  readonly treeLimits?: TreeLimits;
  /** Default unlimited. */
  readonly budget?: Budget;
  /** Default empty. */
  readonly capabilities?: CapabilitySet;
  /** Committed Steps (default 0; the committed state records the same number). */
  readonly committedSteps?: bigint;
  /** External inputs already consumed (default 0). */
  readonly consumedSignals?: number;
  /** External inputs still pending (default 0). */
  readonly pendingSignals?: number;
  /** Prepared effects already charged before this cut (default 0). */
  readonly preparedEffects?: bigint;
}

function defaults(options: FixtureOptions): Required<FixtureOptions> {
  return {
    rootId: options.rootId ?? fixtureProcessId('root'),
    incarnationId: options.incarnationId ?? fixtureIncarnationId('writer-1'),
    treeLimits: options.treeLimits ?? TreeLimits.defaults,
    budget: options.budget ?? Budget.unlimited(),
    capabilities: options.capabilities ?? CapabilitySet.empty,
    committedSteps: options.committedSteps ?? 0n,
    consumedSignals: options.consumedSignals ?? 0,
    pendingSignals: options.pendingSignals ?? 0,
    preparedEffects: options.preparedEffects ?? 0n,
  };
}

/** A mailbox of `consumed` consumed then `pending` pending external inputs labelled `label`. */
export function fixtureMailbox(label: string, consumed: number, pending: number): Mailbox {
  const records: MailboxRecord[] = [];
  for (let index = 0; index < consumed + pending; index += 1) {
    records.push(MailboxRecord.external(fixtureSignalRequest(label, index)));
  }
  return Mailbox.create(records, 0).consume(consumed);
}

/** The members of a running root Process built from `options`; override any for custom cases. */
export function rootProcessFields(options: FixtureOptions = {}): ProcessSnapshotCreateOptions {
  const o = defaults(options);
  return {
    relation: ProcessRelation.root(o.rootId),
    deploymentRef: testDeploymentRef,
    startedAt: fixtureStartedAt,
    status: 'running',
    committedSteps: o.committedSteps,
    budget: o.budget,
    capabilities: o.capabilities,
    counters: { preparedEffects: o.preparedEffects, droppedDeltas: 0n },
    committedExecutionState: fixtureState(o.committedSteps),
    mailbox: fixtureMailbox(o.rootId.toString(), o.consumedSignals, o.pendingSignals),
    treeLimits: o.treeLimits,
  };
}

/** Wraps validated Process snapshots into a tree with the options' incarnation and limits. */
export function treeOf(processes: Iterable<ProcessSnapshot>, options: FixtureOptions = {}): TreeSnapshot {
  const o = defaults(options);
  return TreeSnapshot.create({ incarnationId: o.incarnationId, treeLimits: o.treeLimits, processes });
}

/** One running root, nothing prepared: the shape of a `start` checkpoint. */
export function runningRootTree(options: FixtureOptions = {}): TreeSnapshot {
  return treeOf([ProcessSnapshot.create(rootProcessFields(options))], options);
}

/** Options of {@link parkedRootTree}. */
export interface ParkedOptions extends FixtureOptions {
  /** `waiting` on an external wait (default) or `paused` (keeping that wait current). */
  readonly parked?: 'waiting' | 'paused';
}

/**
 * A root parked on an external wait opened by its last committed Step (whose opening it
 * consumed): `waiting`, or `paused` with the same current wait. Committed steps are at least 1.
 */
export function parkedRootTree(options: ParkedOptions = {}): TreeSnapshot {
  const o = defaults(options);
  const committedSteps = o.committedSteps < 1n ? 1n : o.committedSteps;
  const waitId = WaitId.derive(EffectId.derive(o.rootId, committedSteps, 0));
  const base = fixtureMailbox(o.rootId.toString(), o.consumedSignals, 0);
  const opened = base.append(MailboxRecord.waitOpening(waitId, { kind: 'external', key: WaitKey.parse('fixture-wait') }));
  let mailbox = opened.consume(1);
  for (let index = 0; index < o.pendingSignals; index += 1) {
    mailbox = mailbox.append(MailboxRecord.external(fixtureSignalRequest(`${o.rootId.toString()}:late`, index)));
  }
  const parked = options.parked ?? 'waiting';
  const fields = rootProcessFields({ ...options, committedSteps });
  return treeOf(
    [
      ProcessSnapshot.create({
        ...fields,
        status: parked,
        counters: { preparedEffects: o.preparedEffects + 1n, droppedDeltas: 0n },
        mailbox,
        currentWaitId: waitId,
        pauseReason: parked === 'paused' ? 'paused by the fixture' : undefined,
      }),
    ],
    options,
  );
}

/** Options of {@link terminalRootTree}. */
export interface TerminalOptions extends FixtureOptions {
  /** Default `{"done":true}`. */
  readonly output?: Payload;
}

/** A completed root with its output. */
export function terminalRootTree(options: TerminalOptions = {}): TreeSnapshot {
  const fields = rootProcessFields({ ...options, committedSteps: options.committedSteps ?? 1n });
  return treeOf(
    [
      ProcessSnapshot.create({
        ...fields,
        status: 'completed',
        finishedAt: fixtureFinishedAt,
        output: options.output ?? Payload.encode({ done: true }),
        termination: Termination.completed(),
      }),
    ],
    options,
  );
}

/** The prepared Step of {@link rootWithPreparedEffect}: one Dispatcher Effect in `phase`. */
export function fixturePreparedStep(
  processId: ProcessId,
  committedSteps: bigint,
  phase: 'planned' | 'pending' | 'settled',
  settlementStatus: SettlementStatus = 'succeeded',
): PreparedStep {
  const effect = fixtureDispatcherEffect('prepared');
  const input: PreparedEffectInput =
    phase === 'settled'
      ? {
          effect,
          phase,
          settlement: Settlement.of(settlementStatus, Payload.encode({ status: settlementStatus })),
          diagnostic:
            settlementStatus === 'unknown'
              ? Failure.create('external', 'engine.dispatch.failed', 'dispatch outcome unknown')
              : undefined,
        }
      : { effect, phase };
  return PreparedStep.create({
    processId,
    stepSequence: committedSteps + 1n,
    candidateState: fixtureState(committedSteps + 1n),
    intent: Transition.continue(0, [effect]),
    effects: [input],
  });
}

/**
 * A running root whose prepared Step holds one Dispatcher Effect in `phase` (settled with
 * `settlementStatus`, default `succeeded`; an `unknown` one keeps a diagnostic). Its EffectId is
 * `fixtureEffectId(rootId, committedSteps)`.
 */
export function rootWithPreparedEffect(
  phase: 'planned' | 'pending' | 'settled',
  settlementStatus: SettlementStatus = 'succeeded',
  options: FixtureOptions = {},
): TreeSnapshot {
  const o = defaults(options);
  return treeOf(
    [
      ProcessSnapshot.create({
        ...rootProcessFields(options),
        counters: { preparedEffects: o.preparedEffects + 1n, droppedDeltas: 0n },
        prepared: fixturePreparedStep(o.rootId, o.committedSteps, phase, settlementStatus),
      }),
    ],
    options,
  );
}

/** Options of {@link interruptedRootTree}. */
export interface InterruptedOptions extends FixtureOptions {
  /** Default `killed`. */
  readonly status?: Extract<Status, 'killed' | 'canceled' | 'timed_out'>;
  /** Settlement of the retained Effect: `unknown` (default, left unresolved) or a definite one. */
  readonly settlementStatus?: SettlementStatus;
}

/**
 * A root terminated by a control intent while its prepared Effect was settled: the batch is kept
 * as evidence and an Unknown settlement is listed in `unresolved_effect_ids`.
 */
export function interruptedRootTree(options: InterruptedOptions = {}): TreeSnapshot {
  const o = defaults(options);
  const status = options.status ?? 'killed';
  const settlementStatus = options.settlementStatus ?? 'unknown';
  const prepared = fixturePreparedStep(o.rootId, o.committedSteps, 'settled', settlementStatus);
  const cause = status === 'killed' ? 'engine_kill' : status === 'canceled' ? 'host_cancellation' : 'host_deadline';
  return treeOf(
    [
      ProcessSnapshot.create({
        ...rootProcessFields(options),
        status,
        finishedAt: fixtureFinishedAt,
        counters: { preparedEffects: o.preparedEffects + 1n, droppedDeltas: 0n },
        prepared,
        termination: Termination.interrupted(cause, `${status} by the fixture`, prepared.unknownEffectIds()),
      }),
    ],
    options,
  );
}

/** Options of {@link childProcessFields}. */
export interface ChildFixtureOptions {
  /** The start-child Effect of the parent (default: the parent's Step 1, batch index `slot`). */
  readonly startEffect?: EffectId;
  /** Batch index used for the default start Effect and key (default 0). */
  readonly slot?: number;
  /** Default `child-<slot>`. */
  readonly key?: ChildKey;
  /** Default `{"child":<slot>}`. */
  readonly input?: Payload;
  /** Default unlimited. */
  readonly budget?: Budget;
  /** Default empty. */
  readonly capabilities?: CapabilitySet;
  /** Default `completed` (with output `{"child":<slot>,"done":true}`). */
  readonly status?: 'running' | 'completed';
  /** Consumed external inputs (default 0). */
  readonly consumedSignals?: number;
  readonly treeLimits?: TreeLimits;
}

/** The ChildSpec a {@link childProcessFields} child was started with. */
export function fixtureChildSpec(options: ChildFixtureOptions = {}): ChildSpec {
  const slot = options.slot ?? 0;
  return ChildSpec.create({
    key: options.key ?? ChildKey.parse(`child-${slot}`),
    deploymentRef: testDeploymentRef,
    input: options.input ?? Payload.encode({ child: slot }),
    budget: options.budget ?? Budget.unlimited(),
    capabilities: options.capabilities ?? CapabilitySet.empty,
  });
}

/**
 * The members of a child of `parent` started by `startEffect` (its id is
 * `ProcessId.child(startEffect)`, its `child_request_digest` the digest of {@link fixtureChildSpec}).
 */
export function childProcessFields(parent: ProcessRelation, options: ChildFixtureOptions = {}): ProcessSnapshotCreateOptions {
  const slot = options.slot ?? 0;
  const spec = fixtureChildSpec(options);
  const startEffect = options.startEffect ?? EffectId.derive(parent.processId, 1n, slot);
  const id = ProcessId.child(startEffect);
  const completed = (options.status ?? 'completed') === 'completed';
  return {
    relation: ProcessRelation.child(id, parent, spec.key),
    childRequestDigest: spec.digest(),
    deploymentRef: spec.deploymentRef,
    startedAt: fixtureStartedAt,
    finishedAt: completed ? fixtureFinishedAt : undefined,
    status: completed ? 'completed' : 'running',
    committedSteps: completed ? 1n : 0n,
    budget: spec.budget,
    capabilities: spec.capabilities,
    committedExecutionState: fixtureState(completed ? 1 : 0),
    mailbox: fixtureMailbox(id.toString(), options.consumedSignals ?? 0, 0),
    output: completed ? Payload.encode({ child: slot, done: true }) : undefined,
    termination: completed ? Termination.completed() : undefined,
    treeLimits: options.treeLimits,
  };
}

/** Options of {@link treeWithChildren}. */
export interface ChildrenOptions extends FixtureOptions {
  /** Total Processes including the root (default 4). */
  readonly processes?: number;
  /** Children per parent, breadth first (default 3). */
  readonly fanout?: number;
  /** Status of every non-root Process (default `completed`; `running` needs fanout ≤ max_active_children). */
  readonly childStatus?: 'running' | 'completed';
  /** External inputs (consumed) kept by every child (default 0). */
  readonly childSignals?: number;
}

/**
 * A root with a breadth-first tree of children (`fanout` per parent) started by earlier Steps:
 * deterministic child ids (derived from start-child EffectIds), unlimited budgets, and each
 * child's `child_request_digest` covering its request.
 */
export function treeWithChildren(options: ChildrenOptions = {}): TreeSnapshot {
  const o = defaults(options);
  const total = options.processes ?? 4;
  const fanout = options.fanout ?? 3;
  const childStatus = options.childStatus ?? 'completed';
  const childSignals = options.childSignals ?? 0;
  const root = ProcessSnapshot.create(rootProcessFields({ ...options, committedSteps: o.committedSteps < 1n ? 1n : o.committedSteps }));
  const processes: ProcessSnapshot[] = [root];
  for (let parentIndex = 0; processes.length < total; parentIndex += 1) {
    const parent = processes[parentIndex] as ProcessSnapshot;
    for (let slot = 0; slot < fanout && processes.length < total; slot += 1) {
      processes.push(
        ProcessSnapshot.create(
          childProcessFields(parent.relation, { slot, status: childStatus, consumedSignals: childSignals, treeLimits: o.treeLimits }),
        ),
      );
    }
  }
  return treeOf(processes, options);
}

/** A root (with `signals` consumed external inputs) of roughly the size of a `processes`-member tree. */
export function largeMailboxRootTree(signals: number, options: FixtureOptions = {}): TreeSnapshot {
  return runningRootTree({ ...options, consumedSignals: signals, pendingSignals: 0 });
}

/** The settlement SignalId of a fixture effect (convenience for receipt assertions). */
export function fixtureSettlementSignalId(processId: ProcessId, committedSteps: bigint, index = 0): SignalId {
  return SignalId.settlement(fixtureEffectId(processId, committedSteps, index));
}
