import { test } from 'node:test';
import { CallbackPanicError } from '../kernel/callback-panic-error.js';
import type { DeploymentResolver } from '../kernel/definition.js';
import { Deployment, DeploymentRef } from '../kernel/deployment.js';
import { describe, Digest } from '../kernel/digest.js';
import { ErrorCode, KernelError } from '../kernel/errors.js';
import { ConformanceFailure } from './committer-conformance.js';

/**
 * The DeploymentResolver conformance suite (kernel-contract §5.6): exact-reference lookup, no
 * fallback by name, stable answers across repeated, interleaved and concurrent lookups.
 *
 * The only accepted rejection is a KernelError `deployment_unavailable` (the interface's
 * contract). A resolver that throws anything else has panicked: the suite surfaces it as a
 * CallbackPanicError (`DeploymentResolver.resolve`) with the thrown value as cause.
 */
export interface DeploymentResolverConformanceConfig {
  readonly resolver: DeploymentResolver;
  /** Deployments the resolver must return for their exact refs (at least one, distinct refs). */
  readonly resolvable: readonly Deployment[];
  /** Refs the resolver must reject (distinct, none of them resolvable). */
  readonly unresolvable: readonly DeploymentRef[];
}

export interface DeploymentResolverConformanceCase {
  readonly name: string;
  run(): Promise<void>;
}

/** Validates `config` (throws ConformanceFailure), then registers every case as `<prefix> <case name>`. */
export function runDeploymentResolverConformance(prefix: string, config: DeploymentResolverConformanceConfig): void {
  for (const conformanceCase of deploymentResolverConformanceCases(config)) {
    test(`${prefix} ${conformanceCase.name}`, async () => {
      await runDeploymentResolverCase(conformanceCase);
    });
  }
}

/** Runs one case; throws ConformanceFailure on a contract violation and CallbackPanicError on a panic. */
export async function runDeploymentResolverCase(conformanceCase: DeploymentResolverConformanceCase): Promise<void> {
  await conformanceCase.run();
}

/** How many times each reference is looked up by `concurrent lookups agree`. */
const concurrentLookupsPerRef = 16;

/**
 * The suite's cases for `config`, in order: `exact references resolve to their binding`, `a name
 * collision does not resolve`, `unknown references are rejected`, `repeated and interleaved lookups
 * agree`, `concurrent lookups agree`. An invalid config throws ConformanceFailure first.
 */
export function deploymentResolverConformanceCases(config: DeploymentResolverConformanceConfig): DeploymentResolverConformanceCase[] {
  validateDeploymentResolverConformanceConfig(config);
  const { resolver } = config;
  const resolvable = [...config.resolvable];
  const unresolvable = [...config.unresolvable, syntheticUnknownRef(resolvable)];
  return [
    {
      name: 'exact references resolve to their binding',
      async run() {
        for (const deployment of resolvable) expectBinding(lookup(resolver, deployment.ref), deployment, 'an exact lookup');
      },
    },
    {
      name: 'a name collision does not resolve',
      async run() {
        for (const deployment of resolvable) {
          const collision = collidingDeployment(deployment);
          // A collision that is itself configured as resolvable is not a collision (vanishingly unlikely).
          if (resolvable.some((known) => known.ref.equals(collision.ref))) continue;
          const outcome = lookup(resolver, collision.ref);
          if (outcome.resolved !== undefined) {
            throw new ConformanceFailure(
              `a name collision resolved: ${collision.ref.toString()} (same name, definition and implementation, ` +
                `another configuration digest) returned ${describeDeployment(outcome.resolved)}; a resolver must never fall back by name`,
            );
          }
        }
      },
    },
    {
      name: 'unknown references are rejected',
      async run() {
        for (const ref of unresolvable) expectRejected(lookup(resolver, ref), ref, 'an unknown reference');
      },
    },
    {
      name: 'repeated and interleaved lookups agree',
      async run() {
        for (const round of [1, 2]) {
          const order = round === 1 ? resolvable : [...resolvable].reverse();
          const unknown = round === 1 ? unresolvable : [...unresolvable].reverse();
          const length = Math.max(order.length, unknown.length);
          for (let index = 0; index < length; index += 1) {
            const deployment = order[index];
            if (deployment !== undefined) {
              expectBinding(lookup(resolver, deployment.ref), deployment, `lookup round ${round}`);
            }
            const ref = unknown[index];
            if (ref !== undefined) expectRejected(lookup(resolver, ref), ref, `lookup round ${round}`);
          }
        }
      },
    },
    {
      name: 'concurrent lookups agree',
      async run() {
        type Probe = { readonly deployment: Deployment; readonly ref?: undefined } | { readonly deployment?: undefined; readonly ref: DeploymentRef };
        const probes: Probe[] = [];
        for (let copy = 0; copy < concurrentLookupsPerRef; copy += 1) {
          for (const deployment of resolvable) probes.push({ deployment });
          for (const ref of unresolvable) probes.push({ ref });
        }
        // Each lookup starts on its own turn of the microtask queue, interleaved with the others.
        const outcomes = await Promise.all(
          probes.map(async (probe) => {
            await Promise.resolve();
            return lookup(resolver, probe.deployment?.ref ?? (probe.ref as DeploymentRef));
          }),
        );
        for (const [index, probe] of probes.entries()) {
          const outcome = outcomes[index] as Lookup;
          if (probe.deployment !== undefined) expectBinding(outcome, probe.deployment, `concurrent lookup ${index}`);
          else expectRejected(outcome, probe.ref, `concurrent lookup ${index}`);
        }
      },
    },
  ];
}

/** Validates a config without calling the resolver; throws ConformanceFailure naming the first problem. */
export function validateDeploymentResolverConformanceConfig(config: DeploymentResolverConformanceConfig): void {
  const fail = (problem: string): never => {
    throw new ConformanceFailure(`invalid deployment resolver conformance config: ${problem}`);
  };
  if (typeof config !== 'object' || config === null) fail(`expected a config object, got ${describe(config)}`);
  const resolver = config.resolver as unknown;
  if (
    (typeof resolver !== 'object' && typeof resolver !== 'function') ||
    resolver === null ||
    typeof (resolver as { resolve?: unknown }).resolve !== 'function'
  ) {
    fail('resolver must implement resolve');
  }
  if (!Array.isArray(config.resolvable) || config.resolvable.length === 0) fail('resolvable must list at least one Deployment');
  if (!Array.isArray(config.unresolvable)) fail('unresolvable must be an array of DeploymentRefs');
  const known = new Map<string, string>();
  for (const [index, deployment] of config.resolvable.entries()) {
    if (!(deployment instanceof Deployment)) fail(`resolvable[${index}] is not a Deployment`);
    const key = deployment.ref.digest.toString();
    if (known.has(key)) fail(`resolvable[${index}] repeats the ref of ${known.get(key)} (${deployment.ref.toString()})`);
    known.set(key, `resolvable[${index}]`);
  }
  for (const [index, ref] of config.unresolvable.entries()) {
    if (!(ref instanceof DeploymentRef)) fail(`unresolvable[${index}] is not a DeploymentRef`);
    const key = ref.digest.toString();
    if (known.has(key)) {
      const other = known.get(key) as string;
      fail(
        other.startsWith('resolvable')
          ? `unresolvable[${index}] is the ref of ${other} (${ref.toString()}); the two lists must be disjoint`
          : `unresolvable[${index}] repeats ${other} (${ref.toString()})`,
      );
    }
    known.set(key, `unresolvable[${index}]`);
  }
}

// ---------------------------------------------------------------------------------------------

interface Lookup {
  readonly resolved?: Deployment;
  readonly rejection?: KernelError;
}

/** One guarded `resolve`: a Deployment or the `deployment_unavailable` rejection; anything else panics. */
function lookup(resolver: DeploymentResolver, ref: DeploymentRef): Lookup {
  let result: unknown;
  try {
    result = resolver.resolve(ref);
  } catch (error) {
    if (error instanceof KernelError && error.code === ErrorCode.deploymentUnavailable) return { rejection: error };
    throw new CallbackPanicError('DeploymentResolver.resolve', error);
  }
  if (!(result instanceof Deployment)) {
    throw new ConformanceFailure(`DeploymentResolver.resolve(${ref.toString()}) returned ${describe(result)}, not a Deployment`);
  }
  return { resolved: result };
}

function expectBinding(outcome: Lookup, deployment: Deployment, what: string): void {
  const ref = deployment.ref;
  if (outcome.resolved === undefined) {
    throw new ConformanceFailure(`${what}: exact reference ${ref.toString()} was rejected: ${outcome.rejection?.message ?? 'no result'}`);
  }
  const resolved = outcome.resolved;
  if (!resolved.ref.equals(ref)) {
    throw new ConformanceFailure(`${what}: ${ref.toString()} resolved to a different deployment, ${describeDeployment(resolved)}`);
  }
  if (resolved.definition !== deployment.definition || resolved.dispatcher !== deployment.dispatcher) {
    throw new ConformanceFailure(`${what}: ${ref.toString()} resolved to a binding with another definition or dispatcher`);
  }
}

function expectRejected(outcome: Lookup, ref: DeploymentRef, what: string): void {
  if (outcome.resolved !== undefined) {
    throw new ConformanceFailure(`${what}: unknown reference ${ref.toString()} resolved to ${describeDeployment(outcome.resolved)}`);
  }
}

function describeDeployment(deployment: Deployment): string {
  return deployment.ref.toString();
}

/**
 * The same Definition, Dispatcher and implementation digest under another configuration digest:
 * the same name, hence a name collision, but a different ref.
 */
function collidingDeployment(deployment: Deployment): Deployment {
  const ref = deployment.ref;
  try {
    return Deployment.create({
      definition: deployment.definition,
      dispatcher: deployment.dispatcher,
      implementationDigest: ref.implementationDigest,
      configurationDigest: Digest.of(`scope.conformance.name-collision\u0000${ref.configurationDigest.toString()}`),
    });
  } catch (error) {
    throw new ConformanceFailure(
      `cannot derive a name collision for ${ref.toString()}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** A deterministic ref no configuration can name by accident: fresh digests under a reserved name. */
function syntheticUnknownRef(resolvable: readonly Deployment[]): DeploymentRef {
  const seed = resolvable.map((deployment) => deployment.ref.digest.toString()).join(',');
  const digest = (part: string): Digest => Digest.of(`scope.conformance.unknown-ref\u0000${part}\u0000${seed}`);
  return DeploymentRef.create({
    name: 'scope.conformance.unknown',
    contractDigest: digest('contract'),
    implementationDigest: digest('implementation'),
    configurationDigest: digest('configuration'),
    bindingsDigest: digest('bindings'),
  });
}
