import type { Descriptor } from './descriptor.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { maxDescriptionBytes, validDescription } from './failure.js';
import { WaitId, WaitKey } from './identity.js';
import type { ProcessSnapshot } from './process-snapshot.js';
import { Schema } from './schema.js';

/**
 * The answer contract of an external wait: what shape of Host answer it admits and how it is
 * presented. It comes from one of two places, never both:
 *
 * - **static**, per WaitKey, in the Descriptor ({@link WaitDeclaration}): part of the contract
 *   digest, so a DeploymentRef pins it;
 * - **run time**, carried by the `wait` Effect ({@link WaitOptions}) and committed with the wait's
 *   opening record, for waits whose shape is decided while running (tool inputs, human gates).
 *
 * A wait Effect for a statically declared key that also carries an answer schema is an invalid
 * Effect (a contract failure of the Process: `execution.effect.invalid`); it may still carry a
 * prompt. A wait with no schema from either place admits any JSON answer.
 */

/** The members of a {@link WaitDeclaration}. */
export interface WaitDeclarationConfig {
  readonly key: WaitKey;
  /** What the wait asks for (non-empty, trimmed, ≤ 4096 UTF-8 bytes, like a descriptor's description). */
  readonly description: string;
  /** The schema every answer addressed to a wait under this key must satisfy. */
  readonly answerSchema: Schema;
}

/**
 * A Descriptor's static declaration of the external waits a Definition opens under one WaitKey.
 * Wire (inside the descriptor's `waits` object, keyed by the WaitKey): `{"answer_schema","description"}`.
 */
export class WaitDeclaration {
  readonly #key: WaitKey;
  readonly #description: string;
  readonly #answerSchema: Schema;

  private constructor(key: WaitKey, description: string, answerSchema: Schema) {
    this.#key = key;
    this.#description = description;
    this.#answerSchema = answerSchema;
    Object.freeze(this);
  }

  /** Validates the members; rejections are `code` (default `invalid_descriptor`). */
  static create(config: WaitDeclarationConfig, code: string = ErrorCode.invalidDescriptor): WaitDeclaration {
    const fail = (message: string): never => {
      throw new KernelError(code, `invalid wait declaration: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected {key, description, answerSchema}, got ${describe(config)}`);
    if (!(config.key instanceof WaitKey)) fail(`key must be a WaitKey, got ${describe(config.key)}`);
    if (!validDescription(config.description)) {
      fail(`description of ${config.key.toString()} must be non-empty, trimmed, well-formed text of at most ${maxDescriptionBytes} UTF-8 bytes`);
    }
    if (!(config.answerSchema instanceof Schema)) fail(`answerSchema of ${config.key.toString()} must be a Schema`);
    return new WaitDeclaration(config.key, config.description, config.answerSchema);
  }

  get key(): WaitKey {
    return this.#key;
  }

  get description(): string {
    return this.#description;
  }

  get answerSchema(): Schema {
    return this.#answerSchema;
  }
}

/** What a `wait` Effect may carry for a wait whose answer contract is decided at run time. */
export interface WaitOptions {
  /** The schema the answer must satisfy (not allowed for a key the Descriptor declares). */
  readonly answerSchema?: Schema;
  /** What this wait asks, shown to whoever answers (non-empty, trimmed, ≤ 4096 UTF-8 bytes). */
  readonly prompt?: string;
}

/** Validates {@link WaitOptions}; rejections are `invalid_effect`. Returns a frozen copy. */
export function checkWaitOptions(options: unknown): WaitOptions {
  const fail = (message: string): never => {
    throw new KernelError(ErrorCode.invalidEffect, `invalid effect: ${message}`);
  };
  if (options === undefined) return emptyOptions;
  if (typeof options !== 'object' || options === null) fail(`wait options must be an object, got ${describe(options)}`);
  const { answerSchema, prompt } = options as WaitOptions;
  if (answerSchema !== undefined && !(answerSchema instanceof Schema)) fail('wait answerSchema must be a Schema');
  if (prompt !== undefined && !validDescription(prompt)) {
    fail(`wait prompt must be non-empty, trimmed, well-formed text of at most ${maxDescriptionBytes} UTF-8 bytes`);
  }
  return Object.freeze({ answerSchema, prompt });
}

const emptyOptions: WaitOptions = Object.freeze({});

/** Which party answers a wait: the Host (`external`) or the Engine, from child results (`children`). */
export type WaitKind = 'external' | 'children';

/** The members of a {@link CurrentWait}. */
export interface CurrentWaitConfig {
  readonly waitId: WaitId;
  readonly key: WaitKey;
  readonly kind: WaitKind;
  readonly answerSchema?: Schema;
  readonly prompt?: string;
  readonly description?: string;
}

/**
 * What a Host needs to present a Process's current wait: its identity (the `waitId` an answer is
 * addressed to), key and kind, the effective answer schema (the Descriptor's for a declared key,
 * else the Effect's; absent means any JSON answer), the run-time prompt and the static
 * description. A `children` wait is answered by the Engine only and has no answer contract.
 * Built by `ProcessSnapshot.currentWait(descriptor)`.
 */
export class CurrentWait {
  readonly #config: CurrentWaitConfig;

  private constructor(config: CurrentWaitConfig) {
    this.#config = Object.freeze({ ...config });
    Object.freeze(this);
  }

  /** Validates the members (a children wait has no answer contract); rejections are `invalid_snapshot`. */
  static create(config: CurrentWaitConfig): CurrentWait {
    const fail = (message: string): never => {
      throw new KernelError(ErrorCode.invalidSnapshot, `invalid current wait: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected the wait members, got ${describe(config)}`);
    const { waitId, key, kind, answerSchema, prompt, description } = config;
    if (!(waitId instanceof WaitId)) fail('waitId must be a WaitId');
    if (!(key instanceof WaitKey)) fail('key must be a WaitKey');
    if (kind !== 'external' && kind !== 'children') fail(`kind must be external or children, got ${describe(kind)}`);
    if (answerSchema !== undefined && !(answerSchema instanceof Schema)) fail('answerSchema must be a Schema');
    for (const [name, text] of [['prompt', prompt], ['description', description]] as const) {
      if (text !== undefined && !validDescription(text)) fail(`${name} must be valid descriptive text`);
    }
    if (kind === 'children' && (answerSchema !== undefined || prompt !== undefined || description !== undefined)) {
      fail('a children wait is answered by the Engine and has no answer contract');
    }
    return new CurrentWait({ waitId, key, kind, answerSchema, prompt, description });
  }

  get waitId(): WaitId {
    return this.#config.waitId;
  }

  get key(): WaitKey {
    return this.#config.key;
  }

  get kind(): WaitKind {
    return this.#config.kind;
  }

  /** The schema an answer must satisfy; undefined when any JSON answer is admitted (or for a children wait). */
  get answerSchema(): Schema | undefined {
    return this.#config.answerSchema;
  }

  /** The run-time prompt the wait Effect carried, if any. */
  get prompt(): string | undefined {
    return this.#config.prompt;
  }

  /** The Descriptor's description of this wait key, if it declares one. */
  get description(): string | undefined {
    return this.#config.description;
  }
}

/* ================================================================================================
 * The effective contract (used by admission, inspection and restore validation)
 * ============================================================================================== */

/** The wait facts the effective contract depends on (a mailbox `WaitRecord`). */
export interface WaitFacts {
  readonly kind: WaitKind;
  readonly key: WaitKey;
  readonly answerSchema: Schema | undefined;
}

/**
 * The schema an answer to `wait` must satisfy: the Descriptor's for a declared key, else the one
 * its Effect carried; undefined admits any JSON answer. Children waits have none (the Engine answers).
 */
export function answerSchemaOf(descriptor: Descriptor, wait: WaitFacts): Schema | undefined {
  if (wait.kind !== 'external') return undefined;
  return descriptor.wait(wait.key)?.answerSchema ?? wait.answerSchema;
}

/** Why a `wait` Effect for `key` carrying `answerSchema` is invalid under `descriptor`, if it is. */
export function waitEffectProblem(descriptor: Descriptor, key: WaitKey, answerSchema: Schema | undefined): string | undefined {
  if (answerSchema === undefined || descriptor.wait(key) === undefined) return undefined;
  return `wait key ${key.toString()} is declared by the descriptor, so its wait effect cannot carry another answer schema`;
}

/**
 * Restore validation: why `snapshot`'s waits contradict the answer contracts of `descriptor` (its
 * deployment's), if they do — a wait or prepared wait Effect carrying a schema for a declared key,
 * or a pending answer the declared schema rejects. Run-time schemas are checked by the mailbox.
 */
export function waitContractProblem(descriptor: Descriptor, snapshot: ProcessSnapshot): string | undefined {
  for (const wait of snapshot.mailbox.waits()) {
    if (wait.kind !== 'external') continue;
    const invalid = waitEffectProblem(descriptor, wait.key, wait.answerSchema);
    if (invalid !== undefined) return `${wait.waitId.toString()}: ${invalid}`;
    const declared = descriptor.wait(wait.key);
    if (declared === undefined || wait.answerIndex === undefined || wait.answerIndex < snapshot.mailbox.cursor) continue;
    const payload = snapshot.mailbox.record(wait.answerIndex)?.payload;
    if (payload === undefined) continue;
    try {
      declared.answerSchema.validate(payload, `the pending answer to ${wait.waitId.toString()}`);
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }
  for (const effect of snapshot.prepared?.effects() ?? []) {
    if (!effect.effect.isFramework) continue;
    const operation = effect.effect.frameworkOperation();
    if (operation.operation !== 'wait') continue;
    const invalid = waitEffectProblem(descriptor, operation.key, operation.answerSchema);
    if (invalid !== undefined) return `prepared effect ${effect.id.toString()}: ${invalid}`;
  }
  return undefined;
}
