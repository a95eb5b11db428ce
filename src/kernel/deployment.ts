import { parseJson, type JsonNode } from './canonical-json.js';
import type { Definition, DeploymentResolver, Dispatcher } from './definition.js';
import { describe, Digest } from './digest.js';
import { Descriptor } from './descriptor.js';
import { ErrorCode, KernelError } from './errors.js';
import { isQualifiedName } from './identity.js';
import { encodeWire, RawJson, WireRecord, type WireValue } from './wire.js';

/** The five identity members of a DeploymentRef; its `digest` is derived from them. */
export interface DeploymentRefParts {
  /** The Descriptor name (a qualified name). */
  readonly name: string;
  /** The Descriptor digest. */
  readonly contractDigest: Digest;
  readonly implementationDigest: Digest;
  readonly configurationDigest: Digest;
  /** See {@link DeploymentRef.bindingsDigestOf}. */
  readonly bindingsDigest: Digest;
}

/**
 * The immutable value identity of one exact Definition implementation and frozen configuration.
 * It holds no registry pointer and is sufficient to reject a restore against a different Deployment.
 *
 * Wire: `{"bindings_digest","configuration_digest","contract_digest","digest","implementation_digest","name"}`
 * where `digest` = sha256 of the canonical JSON of the other five members; decoding recomputes it
 * and rejects a mismatch, so a stored ref can never claim another ref's identity.
 */
export class DeploymentRef {
  readonly #name: string;
  readonly #contractDigest: Digest;
  readonly #implementationDigest: Digest;
  readonly #configurationDigest: Digest;
  readonly #bindingsDigest: Digest;
  readonly #digest: Digest;
  #wire: RawJson | undefined;

  private constructor(parts: DeploymentRefParts) {
    this.#name = parts.name;
    this.#contractDigest = parts.contractDigest;
    this.#implementationDigest = parts.implementationDigest;
    this.#configurationDigest = parts.configurationDigest;
    this.#bindingsDigest = parts.bindingsDigest;
    this.#digest = Digest.of(
      encodeWire({
        name: parts.name,
        contract_digest: parts.contractDigest.toString(),
        implementation_digest: parts.implementationDigest.toString(),
        configuration_digest: parts.configurationDigest.toString(),
        bindings_digest: parts.bindingsDigest.toString(),
      }),
    );
    Object.freeze(this);
  }

  /** Derives the ref of five identity members; every rejection is `invalid_deployment_ref`. */
  static create(parts: DeploymentRefParts): DeploymentRef {
    const fail = (message: string): never => {
      throw new KernelError(ErrorCode.invalidDeploymentRef, `invalid deployment ref: ${message}`);
    };
    if (typeof parts !== 'object' || parts === null) fail(`expected the ref members, got ${describe(parts)}`);
    if (!isQualifiedName(parts.name)) fail(`name ${describe(parts.name)} is not a qualified name`);
    for (const member of ['contractDigest', 'implementationDigest', 'configurationDigest', 'bindingsDigest'] as const) {
      if (!(parts[member] instanceof Digest)) fail(`${member} must be a Digest`);
    }
    return new DeploymentRef(parts);
  }

  /**
   * The `bindings_digest` of a definition's child Deployments: sha256 of the canonical JSON array
   * of their ref digest strings, sorted ascending and deduplicated (`[]` when there are none).
   */
  static bindingsDigestOf(children: Iterable<DeploymentRef>): Digest {
    const digests = new Set<string>();
    for (const child of children) {
      if (!(child instanceof DeploymentRef)) {
        throw new KernelError(ErrorCode.invalidDeploymentRef, 'invalid deployment ref: a child binding is not a DeploymentRef');
      }
      digests.add(child.#digest.toString());
    }
    return Digest.of(encodeWire([...digests].sort()));
  }

  /** Strict decode that re-verifies `digest` against the other members. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidDeploymentRef): DeploymentRef {
    const record: WireRecord = new WireRecord(node, path, code);
    const name = record.string('name');
    if (!isQualifiedName(name)) record.fail('must be a qualified name', 'name');
    const ref = new DeploymentRef({
      name,
      contractDigest: readDigest(record, 'contract_digest'),
      implementationDigest: readDigest(record, 'implementation_digest'),
      configurationDigest: readDigest(record, 'configuration_digest'),
      bindingsDigest: readDigest(record, 'bindings_digest'),
    });
    const claimed = readDigest(record, 'digest');
    record.finish();
    if (!claimed.equals(ref.#digest)) {
      record.fail(`${claimed.toString()} does not match the ref's members (expected ${ref.#digest.toString()})`, 'digest');
    }
    return ref;
  }

  static parse(input: string | Uint8Array): DeploymentRef {
    return DeploymentRef.fromWire(parseJson(input, { code: ErrorCode.invalidDeploymentRef, what: 'deployment ref' }));
  }

  get name(): string {
    return this.#name;
  }

  get contractDigest(): Digest {
    return this.#contractDigest;
  }

  get implementationDigest(): Digest {
    return this.#implementationDigest;
  }

  /** Frozen behaviour-affecting configuration, dispatcher configuration included. */
  get configurationDigest(): Digest {
    return this.#configurationDigest;
  }

  /** Identifies the child Deployments the definition binds (`Definition.childDeployments`). */
  get bindingsDigest(): Digest {
    return this.#bindingsDigest;
  }

  /** The ref's own identity, derived from the five members above. */
  get digest(): Digest {
    return this.#digest;
  }

  /** Exact value equality: all six members (the digest covers the other five). */
  equals(other: DeploymentRef | undefined): boolean {
    return (
      other instanceof DeploymentRef &&
      other.#digest.equals(this.#digest) &&
      other.#name === this.#name &&
      other.#contractDigest.equals(this.#contractDigest) &&
      other.#implementationDigest.equals(this.#implementationDigest) &&
      other.#configurationDigest.equals(this.#configurationDigest) &&
      other.#bindingsDigest.equals(this.#bindingsDigest)
    );
  }

  /** `<name>+sha256:<hex>` — a display form; the wire form is the JSON object. */
  toString(): string {
    return `${this.#name}+${this.#digest.toString()}`;
  }

  toWire(): WireValue {
    return {
      name: this.#name,
      contract_digest: this.#contractDigest.toString(),
      implementation_digest: this.#implementationDigest.toString(),
      configuration_digest: this.#configurationDigest.toString(),
      bindings_digest: this.#bindingsDigest.toString(),
      digest: this.#digest.toString(),
    };
  }

  json(): string {
    return this.wire().text;
  }

  /**
   * The canonical JSON as a wire value to splice into the records that carry the ref (every Event,
   * Effect and ProcessSnapshot of a Deployment carries the same one), encoded once.
   */
  wire(): RawJson {
    this.#wire ??= new RawJson(encodeWire(this.toWire()));
    return this.#wire;
  }
}

function readDigest(record: WireRecord, member: string): Digest {
  const text = record.string(member);
  try {
    return Digest.parse(text);
  } catch (error) {
    throw new KernelError(record.code, `${record.childPath(member)} is not a canonical sha256 digest`, { cause: error });
  }
}

/** The complete behaviour binding of one Deployment. */
export interface DeploymentConfig {
  readonly definition: Definition;
  /**
   * Interprets the definition's dispatcher-target Effects. Absent binds a definition that uses only
   * Framework Effects; a dispatcher Effect then fails admission before any Effect of its Step runs.
   */
  readonly dispatcher?: Dispatcher;
  /** Identifies the exact code artifact. */
  readonly implementationDigest: Digest;
  /**
   * Identifies all frozen behaviour-affecting Definition and Dispatcher configuration. Child
   * bindings are not restated here: they are folded in from `definition.childDeployments()`.
   */
  readonly configurationDigest: Digest;
}

/**
 * An immutable binding of one Definition, its optional Dispatcher and the exact DeploymentRef that
 * Process snapshots name, so recovery resolves the exact behaviour a snapshot recorded rather than
 * whatever now shares its name.
 */
export class Deployment {
  readonly #definition: Definition;
  readonly #dispatcher: Dispatcher | undefined;
  readonly #descriptor: Descriptor;
  readonly #children: readonly Deployment[];
  readonly #ref: DeploymentRef;

  private constructor(
    definition: Definition,
    dispatcher: Dispatcher | undefined,
    descriptor: Descriptor,
    children: readonly Deployment[],
    ref: DeploymentRef,
  ) {
    this.#definition = definition;
    this.#dispatcher = dispatcher;
    this.#descriptor = descriptor;
    this.#children = children;
    this.#ref = ref;
    Object.freeze(this);
  }

  /**
   * Freezes a binding: calls `definition.descriptor()` and `definition.childDeployments()` exactly
   * once and derives the DeploymentRef. Invalid configuration is `invalid_deployment`; errors thrown
   * by the definition itself propagate unchanged.
   */
  static create(config: DeploymentConfig): Deployment {
    const fail = (message: string): never => {
      throw new KernelError(ErrorCode.invalidDeployment, `invalid deployment: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected a configuration, got ${describe(config)}`);
    const { definition, dispatcher } = config;
    if (!hasMethods(definition, ['descriptor', 'childDeployments', 'start', 'restore'])) {
      fail('definition must implement descriptor, childDeployments, start and restore');
    }
    if (dispatcher !== undefined && !hasMethods(dispatcher, ['dispatch', 'replayPolicy'])) {
      fail('dispatcher must implement dispatch and replayPolicy');
    }
    if (!(config.implementationDigest instanceof Digest)) fail('implementationDigest must be a Digest');
    if (!(config.configurationDigest instanceof Digest)) fail('configurationDigest must be a Digest');

    const descriptor = definition.descriptor();
    if (!(descriptor instanceof Descriptor)) fail('definition.descriptor() must return a Descriptor');
    const reported: unknown = definition.childDeployments();
    if (!Array.isArray(reported)) fail('definition.childDeployments() must return an array');
    const children: Deployment[] = [];
    const seen = new Set<string>();
    for (const [index, child] of (reported as unknown[]).entries()) {
      if (!(child instanceof Deployment)) fail(`definition.childDeployments()[${index}] is not a Deployment`);
      const key = (child as Deployment).#ref.digest.toString();
      if (seen.has(key)) continue;
      seen.add(key);
      children.push(child as Deployment);
    }
    const ref = DeploymentRef.create({
      name: descriptor.name,
      contractDigest: descriptor.digest(),
      implementationDigest: config.implementationDigest,
      configurationDigest: config.configurationDigest,
      bindingsDigest: DeploymentRef.bindingsDigestOf(children.map((child) => child.#ref)),
    });
    return new Deployment(definition, dispatcher, descriptor, Object.freeze(children), ref);
  }

  get definition(): Definition {
    return this.#definition;
  }

  /** The bound Dispatcher, or undefined for a Framework-effects-only Deployment. */
  get dispatcher(): Dispatcher | undefined {
    return this.#dispatcher;
  }

  /** The descriptor captured at creation (the definition is not asked again). */
  get descriptor(): Descriptor {
    return this.#descriptor;
  }

  get ref(): DeploymentRef {
    return this.#ref;
  }

  /** The distinct child bindings captured at creation, in the order first reported. */
  childDeployments(): Deployment[] {
    return [...this.#children];
  }

  /** The static child binding with exactly `ref`, if this Deployment binds one. */
  childDeployment(ref: DeploymentRef): Deployment | undefined {
    return this.#children.find((child) => child.#ref.equals(ref));
  }
}

function hasMethods(value: unknown, names: readonly string[]): boolean {
  if (typeof value !== 'object' && typeof value !== 'function') return false;
  if (value === null) return false;
  const record = value as Record<string, unknown>;
  return names.every((name) => typeof record[name] === 'function');
}

/**
 * A DeploymentResolver over a fixed set of Deployments: exact-ref lookup, no fallback by name.
 * Safe for concurrent use (immutable after construction).
 */
export class MapDeploymentResolver implements DeploymentResolver {
  readonly #byDigest: ReadonlyMap<string, Deployment>;

  /** Two different Deployment objects under one ref are rejected (`invalid_deployment`). */
  constructor(deployments: Iterable<Deployment>) {
    const byDigest = new Map<string, Deployment>();
    for (const deployment of deployments) {
      if (!(deployment instanceof Deployment)) {
        throw new KernelError(ErrorCode.invalidDeployment, 'invalid deployment: resolver entries must be Deployments');
      }
      const key = deployment.ref.digest.toString();
      const existing = byDigest.get(key);
      if (existing !== undefined && existing !== deployment) {
        throw new KernelError(
          ErrorCode.invalidDeployment,
          `invalid deployment: two different deployments share the ref ${deployment.ref.toString()}`,
        );
      }
      byDigest.set(key, deployment);
    }
    this.#byDigest = byDigest;
    Object.freeze(this);
  }

  /** Throws `deployment_unavailable` unless a Deployment with exactly `ref` is registered. */
  resolve(ref: DeploymentRef): Deployment {
    const deployment = ref instanceof DeploymentRef ? this.#byDigest.get(ref.digest.toString()) : undefined;
    if (deployment === undefined || !deployment.ref.equals(ref)) {
      throw new KernelError(
        ErrorCode.deploymentUnavailable,
        `deployment unavailable: no deployment is registered for ${ref instanceof DeploymentRef ? ref.toString() : describe(ref)}`,
      );
    }
    return deployment;
  }

  /** The registered refs, in registration order. */
  refs(): DeploymentRef[] {
    return [...this.#byDigest.values()].map((deployment) => deployment.ref);
  }

  get size(): number {
    return this.#byDigest.size;
  }
}
