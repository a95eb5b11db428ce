import type { DeploymentRef, TreeSnapshot } from '../kernel/index.js';
import { codedError, HostErrorCode } from '../errors.js';

/**
 * Deployment drift (docs/deployment-versions.md): a stored tree whose root DeploymentRef no version
 * in this node's catalog matches. The kernel restores a tree only under its exact ref, so such a tree
 * is refused (`deployment_drift`, naming the ref members that differ from the current version of its
 * name); an admin may move it on explicitly, and then the current version's {@link RestoreDecider}
 * decides whether a successor tree may continue from the old head's state (the seed's fail-secure
 * restore: no decider, no move).
 */

/** The five identity members of a DeploymentRef, as the API names them. */
export type RefMember = 'name' | 'contractDigest' | 'implementationDigest' | 'configurationDigest' | 'bindingsDigest';

const refMembers: readonly RefMember[] = ['name', 'contractDigest', 'implementationDigest', 'configurationDigest', 'bindingsDigest'];

/** A DeploymentRef as JSON: its display form and each member. */
export interface RefView {
  readonly deploymentRef: string;
  readonly name: string;
  readonly contractDigest: string;
  readonly implementationDigest: string;
  readonly configurationDigest: string;
  readonly bindingsDigest: string;
}

export function refView(ref: DeploymentRef): RefView {
  return {
    deploymentRef: ref.toString(),
    name: ref.name,
    contractDigest: ref.contractDigest.toString(),
    implementationDigest: ref.implementationDigest.toString(),
    configurationDigest: ref.configurationDigest.toString(),
    bindingsDigest: ref.bindingsDigest.toString(),
  };
}

/** The members in which `stored` differs from `current` (every member when there is no current version). */
export function differingMembers(stored: DeploymentRef, current: DeploymentRef | undefined): RefMember[] {
  if (current === undefined) return [...refMembers];
  const a = refView(stored);
  const b = refView(current);
  return refMembers.filter((member) => a[member] !== b[member]);
}

/** What a decider is shown: the drifted tree's root and both refs. */
export interface DriftAssessment {
  readonly rootId: string;
  /** The digest of the stored head the assessment was made from (a head that moves on voids it). */
  readonly headDigest: string;
  readonly stored: RefView;
  readonly current: RefView;
  readonly differs: readonly RefMember[];
  /** The root's status in the stored head. */
  readonly status: string;
  /** The root's committed execution state: its Strategy kind and decoded value. */
  readonly state: { readonly kind: string; readonly value: unknown };
  /** How many processes the stored tree holds (children are not carried over; the decider may refuse for them). */
  readonly processes: number;
}

/**
 * The decider's answer. Accepting names the successor's start input (the current version's input
 * schema applies): that is how the old state reaches the new version, which starts from it.
 */
export type RestoreDecision = { readonly accept: true; readonly reason: string; readonly input: unknown } | { readonly accept: false; readonly reason: string };

/** Exported by a version (its module entry's `restoreDecider`); pure, deterministic, may be async. */
export type RestoreDecider = (assessment: DriftAssessment) => RestoreDecision | Promise<RestoreDecision>;

/** What drift a stored head shows against `current` (undefined: this node holds its root ref). */
export interface Drift {
  readonly stored: DeploymentRef;
  readonly current: DeploymentRef | undefined;
  readonly differs: readonly RefMember[];
}

export function assessmentOf(head: TreeSnapshot, drift: Drift & { readonly current: DeploymentRef }): DriftAssessment {
  const root = head.root;
  const state = root.committedExecutionState;
  return {
    rootId: head.rootId.toString(),
    headDigest: head.digest.toString(),
    stored: refView(drift.stored),
    current: refView(drift.current),
    differs: drift.differs,
    status: root.status,
    state: { kind: state.kind, value: state.payload.decode() },
    processes: head.size,
  };
}

/** 409 `deployment_drift`: the tree's version is held by no node here; the detail names what differs. */
export function driftRefusal(root: string, drift: Drift): Error {
  const current = drift.current === undefined ? `no version of ${drift.stored.name} is registered here` : `the current version is ${drift.current.toString()}`;
  return codedError(
    HostErrorCode.deploymentDrift,
    `tree ${root} runs ${drift.stored.toString()}, which this node does not hold; ${current} (differs in ${drift.differs.join(', ')}). ` +
      `Reads still work; an admin may move it on to the current version: POST /v1/trees/${root}/restore {"allowDrift":true}`,
  );
}
