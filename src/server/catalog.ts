import { Deployment, type DeploymentRef, type DeploymentResolver, ErrorCode, KernelError } from '../kernel/index.js';
import { codedError, HostErrorCode } from '../errors.js';
import { differingMembers, type Drift, type RestoreDecider } from './drift.js';
import { assertPoliciesBound, type GatePolicy } from './gates/gate-policies.js';

/**
 * One version of a deployment as a deployments module registers it: an exact DeploymentRef, whether
 * it is the version new starts use, and (optionally) the decider that may move a drifted tree of an
 * older version on to this one (docs/deployment-versions.md).
 */
export interface DeploymentVersion {
  readonly deployment: Deployment;
  /** Pins this version as the one new starts of its name use (default: the last registered is). */
  readonly current?: boolean;
  /** Answers whether a tree of another version of this name may continue as a successor on this one. */
  readonly restoreDecider?: RestoreDecider;
  /** Gate policies of this version (gates/gate-policies.ts): build it with `withGatePolicies`, so they are in its ref. */
  readonly policies?: readonly GatePolicy[];
}

/** What a catalog entry may be given as: a bare Deployment, or a version with its options. */
export type DeploymentEntry = Deployment | DeploymentVersion;

/** The Deployment of an entry. */
export function deploymentOf(entry: DeploymentEntry): Deployment {
  return entry instanceof Deployment ? entry : entry.deployment;
}

/** The entry with its Deployment replaced by `bind(deployment)` (same ref: the transport's binding). */
export function rebindEntry(entry: DeploymentEntry, bind: (deployment: Deployment) => Deployment): DeploymentEntry {
  return entry instanceof Deployment ? bind(entry) : { ...entry, deployment: bind(entry.deployment) };
}

/** One registered version, as the catalog reports it. */
export interface RegisteredVersion {
  readonly deployment: Deployment;
  readonly current: boolean;
  readonly restoreDecider: RestoreDecider | undefined;
}

/**
 * The deployment catalog: exact DeploymentRef → Deployment (the Engine's DeploymentResolver, so a
 * restored tree binds exactly the behaviour it ran with) and name → the version new starts use.
 * Several versions of one name may be registered; every one stays resolvable, so a tree keeps running
 * on its own version for as long as this node holds it. The current version of a name is the one
 * registered with `current: true` (at most one per name), else the last one registered.
 */
export class DeploymentCatalog implements DeploymentResolver {
  readonly #byRef = new Map<string, Deployment>();
  readonly #byName = new Map<string, Deployment>();
  /** Names whose current version was pinned explicitly (a later registration does not replace it). */
  readonly #pinned = new Set<string>();
  /** Every version of each name, in registration order. */
  readonly #versions = new Map<string, Deployment[]>();
  readonly #deciders = new Map<string, RestoreDecider>();
  readonly #policies = new Map<string, readonly GatePolicy[]>();

  constructor(deployments: Iterable<DeploymentEntry> = []) {
    for (const deployment of deployments) this.register(deployment);
  }

  /** Adds a version; it becomes the one new starts of its name use unless another was pinned `current`. */
  register(entry: DeploymentEntry): void {
    const deployment = deploymentOf(entry);
    const options: Partial<DeploymentVersion> = entry instanceof Deployment ? {} : entry;
    if (!(deployment instanceof Deployment)) throw new KernelError(ErrorCode.invalidDeployment, 'the catalog holds Deployments');
    if (options.restoreDecider !== undefined && typeof options.restoreDecider !== 'function') {
      throw new KernelError(ErrorCode.invalidDeployment, `the restoreDecider of ${deployment.ref.toString()} must be a function`);
    }
    if (options.policies !== undefined) assertPoliciesBound(deployment, options.policies);
    const key = deployment.ref.digest.toString();
    const name = deployment.ref.name;
    const existing = this.#byRef.get(key);
    if (existing !== undefined && existing !== deployment) {
      throw new KernelError(ErrorCode.invalidDeployment, `two different deployments share the ref ${deployment.ref.toString()}`);
    }
    if (options.current === true && this.#pinned.has(name) && this.#byName.get(name) !== deployment) {
      throw new KernelError(ErrorCode.invalidDeployment, `two versions of ${name} are marked current`);
    }
    this.#byRef.set(key, deployment);
    const versions = this.#versions.get(name) ?? [];
    if (existing === undefined) versions.push(deployment);
    this.#versions.set(name, versions);
    if (options.restoreDecider !== undefined) this.#deciders.set(key, options.restoreDecider);
    if (options.policies !== undefined && options.policies.length > 0) this.#policies.set(key, options.policies);
    if (options.current === true) this.#pinned.add(name);
    if (options.current === true || !this.#pinned.has(name)) {
      this.#byName.delete(name);
      this.#byName.set(name, deployment);
    }
  }

  /** The current deployment of `name` (`deployment_not_found`). */
  byName(name: string): Deployment {
    const deployment = this.#byName.get(name);
    if (deployment === undefined) throw codedError(HostErrorCode.deploymentNotFound, `no deployment named ${JSON.stringify(name)}`);
    return deployment;
  }

  /** The current deployment of `name`, or undefined. */
  currentOf(name: string): Deployment | undefined {
    return this.#byName.get(name);
  }

  /** Every version of `name` registered here, in registration order (empty when none). */
  versions(name: string): RegisteredVersion[] {
    const current = this.#byName.get(name);
    return (this.#versions.get(name) ?? []).map((deployment) => ({
      deployment,
      current: deployment === current,
      restoreDecider: this.#deciders.get(deployment.ref.digest.toString()),
    }));
  }

  /** The restore decider registered with exactly `ref`, or undefined. */
  restoreDecider(ref: DeploymentRef): RestoreDecider | undefined {
    return this.holds(ref) ? this.#deciders.get(ref.digest.toString()) : undefined;
  }

  /** The gate policies registered with exactly `ref` (empty when none). */
  policies(ref: DeploymentRef): readonly GatePolicy[] {
    return this.holds(ref) ? (this.#policies.get(ref.digest.toString()) ?? []) : [];
  }

  /** How `ref` drifted from the current version of its name, or undefined when this catalog holds it. */
  driftOf(ref: DeploymentRef): Drift | undefined {
    if (this.holds(ref)) return undefined;
    const current = this.#byName.get(ref.name)?.ref;
    return { stored: ref, current, differs: differingMembers(ref, current) };
  }

  /** Exactly `ref` (`deployment_unavailable` otherwise, never a fallback by name). */
  resolve(ref: DeploymentRef): Deployment {
    const deployment = this.#byRef.get(ref.digest.toString());
    if (deployment === undefined || !deployment.ref.equals(ref)) {
      throw new KernelError(ErrorCode.deploymentUnavailable, `no deployment is registered for ${ref.toString()}`);
    }
    return deployment;
  }

  /** Whether exactly `ref` is registered (what a takeover needs of every process of a tree). */
  holds(ref: DeploymentRef): boolean {
    return this.#byRef.get(ref.digest.toString())?.ref.equals(ref) === true;
  }

  /** Every registered ref, as text (`<name>+sha256:<hex>`): what a node advertises it can restore. */
  refs(): string[] {
    return [...this.#byRef.values()].map((deployment) => deployment.ref.toString());
  }

  /** The deployments new starts use, in registration order of their names. */
  current(): Deployment[] {
    return [...this.#byName.values()];
  }
}
