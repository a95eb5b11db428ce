import type { Budget } from './budget.js';
import type { ChildSpec } from './effect.js';
import type { Deployment } from './deployment.js';
import type { ExecutionState } from './execution-state.js';
import { Failure, normalizeDiagnostic } from './failure.js';
import type { ProcessId } from './identity.js';
import type { PreparedStep } from './prepared-step.js';
import type { ProcessSnapshot, ResourceAmounts } from './process-snapshot.js';
import type { ProcessRelation } from './relation.js';
import type { TreeLimits } from './tree-limits.js';

/**
 * The two halves of a `start_child` (kernel-contract §4.15). The owner checks run inside the owner
 * lane against the acknowledged tree, because limits, budgets and keys are tree state; the admission
 * job (deployment, input, admitter, initialisation) runs outside it, because it calls host and
 * strategy code. Either half refuses with a Failure that becomes a definite failed settlement of the
 * parent's Effect: a child start is never Unknown, since nothing external has happened yet.
 */

/** What the owner knows about the tree when a `start_child` reaches the frontier. */
export interface ChildOwnerView {
  readonly parent: ProcessSnapshot;
  /** The parent's prepared batch as the frontier sees it (possibly still private). */
  readonly prepared: PreparedStep;
  readonly childId: ProcessId;
  readonly spec: ChildSpec;
  readonly treeLimits: TreeLimits;
  /** Every captured Process of the tree (terminal ones count against lifetime limits). */
  readonly processCount: number;
  /** The parent's captured direct children. */
  readonly children: readonly ProcessSnapshot[];
  readonly exists: (id: ProcessId) => boolean;
}

const dimensions = ['steps', 'effects', 'signals'] as const;

/** The owner-side refusal of a child start, or undefined when the start may proceed to admission. */
export function childOwnerProblem(view: ChildOwnerView): Failure | undefined {
  const { parent, spec, treeLimits: limits } = view;
  if (view.exists(view.childId) || view.children.some((child) => child.relation.childKey?.equals(spec.key) === true)) {
    return Failure.create('contract', 'engine.child.identity_conflict', `child key ${spec.key.toString()} is already used by this process`);
  }
  if (parent.relation.depth + 1 > limits.maxDepth) {
    return treeLimit(`a child would be at depth ${parent.relation.depth + 1}, beyond max_depth ${limits.maxDepth}`);
  }
  if (!limits.maxChildren.admits(BigInt(view.children.length) + 1n)) {
    return treeLimit(`the process already has ${view.children.length} children (max_children ${limits.maxChildren.toString()})`);
  }
  if (view.children.filter((child) => !child.isTerminal).length + 1 > limits.maxActiveChildren) {
    return treeLimit(`the process already has ${limits.maxActiveChildren} active children`);
  }
  if (!limits.maxTreeProcesses.admits(BigInt(view.processCount) + 1n)) {
    return treeLimit(`the tree already holds ${view.processCount} processes (max_tree_processes ${limits.maxTreeProcesses.toString()})`);
  }
  if (!parent.capabilities.allows(spec.capabilities)) {
    return Failure.create('contract', 'engine.child.capability_escalation', 'the child asks for capabilities its parent does not hold');
  }
  const used = parentUsage(parent, view.prepared);
  for (const dimension of dimensions) {
    const quota = parent.budget[dimension];
    if (quota.unlimited) continue;
    const grant = spec.budget[dimension].maximum;
    if (grant === undefined) {
      return budgetExhausted(`a finite parent cannot grant an unlimited ${dimension} budget`);
    }
    if (!quota.admits(used[dimension] + parent.allocatedResources[dimension] + grant)) {
      return budgetExhausted(`the parent's remaining ${dimension} budget cannot cover a grant of ${grant}`);
    }
  }
  return undefined;
}

/**
 * What the parent has spent or reserved in each dimension while this batch is in flight: the Step
 * being prepared, every Effect identity prepared so far, and one settlement Signal per Effect of
 * the batch on top of the accepted mailbox records. A child grant may only come from the rest.
 */
function parentUsage(parent: ProcessSnapshot, prepared: PreparedStep): ResourceAmounts {
  return {
    steps: prepared.stepSequence,
    effects: parent.counters.preparedEffects,
    signals: BigInt(parent.mailbox.length) + BigInt(prepared.effectCount),
  };
}

/** The parent's allocation after publishing a child with `budget` (finite dimensions only). */
export function allocateChild(parent: ProcessSnapshot, budget: Budget): ResourceAmounts {
  const allocated = { ...parent.allocatedResources };
  for (const dimension of dimensions) {
    if (parent.budget[dimension].unlimited) continue;
    allocated[dimension] += budget[dimension].maximum ?? 0n;
  }
  return allocated;
}

function treeLimit(message: string): Failure {
  return Failure.create('execution', 'engine.child.tree_limit', message);
}

function budgetExhausted(message: string): Failure {
  return Failure.create('execution', 'engine.child.budget_exhausted', message);
}

/** The admission job's input: everything it needs without touching the owner's state. */
export interface ChildAdmissionRequest {
  readonly parentDeployment: Deployment;
  readonly childId: ProcessId;
  readonly relation: ProcessRelation;
  readonly spec: ChildSpec;
}

/** The admission job's outcome; it never throws. */
export type ChildAdmissionOutcome =
  | { readonly kind: 'admitted'; readonly deployment: Deployment; readonly state: ExecutionState; readonly startedAt: string }
  | { readonly kind: 'failed'; readonly failure: Failure };

/** Runs the admission job of one child (implemented by the Engine, which owns the host callbacks). */
export type ChildAdmitter = (request: ChildAdmissionRequest) => Promise<ChildAdmissionOutcome>;

/** A refusal carrying a host or strategy error's message, bounded like every diagnostic. */
export function admissionFailure(kind: 'contract' | 'execution' | 'external' | 'panic', code: string, fallback: string, error?: unknown): Failure {
  let detail: string;
  try {
    detail = error instanceof Error && error.message.trim() !== '' ? `${fallback}: ${error.message}` : fallback;
  } catch {
    // Reading the error panicked (a throwing getter): the refusal stands, as a panic.
    return Failure.create('panic', code, `${fallback}: interpreting the error panicked`);
  }
  return Failure.create(kind, code, normalizeDiagnostic(detail));
}
