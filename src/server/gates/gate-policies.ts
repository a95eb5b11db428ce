import { Deployment, type DeploymentConfig, Digest, ErrorCode, KernelError } from '../../kernel/index.js';
import type { Json } from '../host.js';
import type { GateKind, GatePrompt } from './gate-view.js';

/**
 * Gate policies (README "Gates", "Auto-decisions by policy"): pure rules a deployment registers for its
 * gates. One runs on the tree's owner once a gate is listed and races people for it through the same
 * answer path; it answers, or abstains and leaves the gate to people.
 *
 * A policy is part of the deployment's configuration digest, so changing it makes a new DeploymentRef
 * (a tree keeps the rules it started with, like the rest of its behaviour). A function cannot be
 * hashed reliably (the same source may close over other values, a bundler rewrites it), so what
 * enters the digest is what the author declares: each rule's name and `version`. Bump the version
 * whenever `decide` decides differently. {@link withGatePolicies} builds the Deployment with that
 * digest, and the catalog refuses policies registered on a Deployment not built that way.
 */
export interface GatePolicy {
  /** The rule's name, recorded with every answer it gives (`[A-Za-z0-9._:-]`, unique per deployment). */
  readonly rule: string;
  /** What the author bumps whenever `decide` changes: it is folded into the configuration digest. */
  readonly version: string;
  /** Pure: the gate's facts in, a decision out. A throw is a failure (the gate stays open). */
  decide(gate: PolicyGate): PolicyDecision | Promise<PolicyDecision>;
}

export type PolicyDecision = { readonly answer: Json } | 'abstain';

/** What a policy decides on: the facts of one head (the one its decision binds). */
export interface PolicyGate {
  readonly gateId: string;
  readonly kind: GateKind;
  readonly processId: string;
  readonly rootId: string;
  readonly deployment: string;
  /** The exact DeploymentRef (`<name>+sha256:<hex>`). */
  readonly deploymentRef: string;
  /** The wait as it opened (validated by the kernel when it was committed). */
  readonly wait: { readonly waitId: string; readonly key: string; readonly prompt: string | null; readonly answerSchema: Json | null };
  /** What a person sees (gate-view.ts), derived from the same facts. */
  readonly prompt: GatePrompt;
  /** The process's committed execution state (its strategy's `kind` and value). */
  readonly state: { readonly kind: string; readonly value: Json };
}

const ruleName = /^[A-Za-z0-9._:-]{1,128}$/;

/** Refs whose configuration digest folds in a policy set, with that set's digest. */
const boundRefs = new Map<string, string>();

/** The digest of a policy set: its rules' names and versions, in order. */
export function policySetDigest(policies: readonly GatePolicy[]): Digest {
  return Digest.ofParts(['gate-policies/v1', ...policies.map((policy) => `\n${policy.rule}\u0000${policy.version}`)]);
}

/** Checks a policy list's shape (`invalid_deployment` naming what is wrong). */
export function checkPolicies(name: string, policies: unknown): readonly GatePolicy[] {
  const fail = (message: string): never => {
    throw new KernelError(ErrorCode.invalidDeployment, `the policies of ${name}: ${message}`);
  };
  if (!Array.isArray(policies)) return fail('must be a list');
  const seen = new Set<string>();
  for (const policy of policies as unknown[]) {
    const candidate = policy as Partial<GatePolicy> | null;
    if (typeof candidate !== 'object' || candidate === null) return fail('each policy is {rule, version, decide}');
    if (typeof candidate.rule !== 'string' || !ruleName.test(candidate.rule)) return fail(`rule ${JSON.stringify(candidate.rule)} is not a name ([A-Za-z0-9._:-], at most 128)`);
    if (seen.has(candidate.rule)) return fail(`rule ${candidate.rule} is registered twice`);
    seen.add(candidate.rule);
    if (typeof candidate.version !== 'string' || candidate.version.length === 0 || candidate.version.length > 128) return fail(`rule ${candidate.rule} needs a version (1..128 characters)`);
    if (typeof candidate.decide !== 'function') return fail(`rule ${candidate.rule} needs a decide function`);
  }
  return Object.freeze([...(policies as GatePolicy[])]);
}

/**
 * A deployment version with gate policies: the Deployment is built with its configuration digest
 * folding in the policy set's digest (so another rule, or another version of one, is another ref).
 */
export function withGatePolicies(config: DeploymentConfig, policies: readonly GatePolicy[]): { readonly deployment: Deployment; readonly policies: readonly GatePolicy[] } {
  const name = config.definition?.descriptor?.()?.name ?? 'a deployment';
  const checked = checkPolicies(name, policies);
  const set = policySetDigest(checked);
  const configurationDigest = Digest.ofParts(['configuration+gate-policies/v1\n', config.configurationDigest.toString(), '\n', set.toString()]);
  const deployment = Deployment.create({ ...config, configurationDigest });
  boundRefs.set(deployment.ref.digest.toString(), set.toString());
  return { deployment, policies: checked };
}

/** Refuses policies whose rules and versions are not folded into the deployment's configuration digest. */
export function assertPoliciesBound(deployment: Deployment, policies: readonly GatePolicy[]): void {
  const checked = checkPolicies(deployment.ref.name, policies);
  if (checked.length === 0) return;
  if (boundRefs.get(deployment.ref.digest.toString()) !== policySetDigest(checked).toString()) {
    throw new KernelError(
      ErrorCode.invalidDeployment,
      `the policies of ${deployment.ref.toString()} are not part of its configuration digest: build the version with withGatePolicies(config, policies)`,
    );
  }
}
