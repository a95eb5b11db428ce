import { Deployment, type DeploymentRef, type DeploymentResolver, ErrorCode, KernelError } from '../kernel/index.js';
import { codedError, HostErrorCode } from '../errors.js';

/**
 * The deployment catalog: exact DeploymentRef → Deployment (the Engine's DeploymentResolver, so a
 * restored tree binds exactly the behaviour it ran with) and name → the Deployment new starts use
 * (the last one registered under that name). Older refs of a name stay resolvable for restores.
 */
export class DeploymentCatalog implements DeploymentResolver {
  readonly #byRef = new Map<string, Deployment>();
  readonly #byName = new Map<string, Deployment>();

  constructor(deployments: Iterable<Deployment> = []) {
    for (const deployment of deployments) this.register(deployment);
  }

  /** Adds a deployment; it becomes the one new starts of its name use. */
  register(deployment: Deployment): void {
    if (!(deployment instanceof Deployment)) throw new KernelError(ErrorCode.invalidDeployment, 'the catalog holds Deployments');
    const key = deployment.ref.digest.toString();
    const existing = this.#byRef.get(key);
    if (existing !== undefined && existing !== deployment) {
      throw new KernelError(ErrorCode.invalidDeployment, `two different deployments share the ref ${deployment.ref.toString()}`);
    }
    this.#byRef.set(key, deployment);
    this.#byName.delete(deployment.ref.name);
    this.#byName.set(deployment.ref.name, deployment);
  }

  /** The current deployment of `name` (`deployment_not_found`). */
  byName(name: string): Deployment {
    const deployment = this.#byName.get(name);
    if (deployment === undefined) throw codedError(HostErrorCode.deploymentNotFound, `no deployment named ${JSON.stringify(name)}`);
    return deployment;
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
