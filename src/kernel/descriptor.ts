import { parseJson, type JsonNode } from './canonical-json.js';
import { describe, Digest } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { maxDescriptionBytes, validDescription } from './failure.js';
import { isIdentityText, isQualifiedName, WaitKey } from './identity.js';
import { Payload } from './payload.js';
import { Schema } from './schema.js';
import { WaitDeclaration, type WaitDeclarationConfig } from './wait.js';
import { encodeWire, WireRecord, type WireValue } from './wire.js';

/** The complete static contract of a Definition (no executable behaviour, no Deployment configuration). */
export interface DescriptorConfig {
  /** A stable lowercase qualified Definition name. */
  readonly name: string;
  /** The Definition's behaviour for human and model-facing discovery (non-empty, trimmed, ≤ 4096 UTF-8 bytes). */
  readonly description: string;
  readonly inputSchema: Schema;
  readonly outputSchema: Schema;
  /**
   * Unaddressed Host input. Absent means {@link Schema.rejectAll}: unaddressed Signals are
   * rejected. Addressed replies belong to their external wait, and Engine-owned protocol frames
   * never pass through this schema.
   */
  readonly signalSchema?: Schema;
  /**
   * The external waits this Definition opens, each under its own WaitKey, with the schema every
   * answer must satisfy (checked at signal admission). Keys must be distinct. A key decided at run
   * time carries its contract on the `wait` Effect instead (see `wait.ts`).
   */
  readonly waits?: readonly WaitDeclarationConfig[];
}

/**
 * The immutable, portable contract of a Definition: name, description, the input, output and
 * unaddressed-Signal schemas, and the declared external waits. Its digest is the DeploymentRef's
 * `contract_digest`.
 *
 * Wire: `{"description","input_schema","name","output_schema","signal_schema","waits"?}` (canonical
 * order); the schemas are embedded as their canonical JSON. `waits` maps each declared WaitKey to
 * `{"answer_schema","description"}`; it is omitted when nothing is declared (an empty object is
 * rejected), so a descriptor without waits keeps the bytes and digest it had before waits existed.
 */
export class Descriptor {
  readonly #name: string;
  readonly #description: string;
  readonly #inputSchema: Schema;
  readonly #outputSchema: Schema;
  readonly #signalSchema: Schema;
  /** Declarations by WaitKey text, in key order. */
  readonly #waits: ReadonlyMap<string, WaitDeclaration>;
  readonly #json: string;
  readonly #digest: Digest;

  private constructor(
    name: string,
    description: string,
    input: Schema,
    output: Schema,
    signal: Schema,
    waits: readonly WaitDeclaration[],
  ) {
    this.#name = name;
    this.#description = description;
    this.#inputSchema = input;
    this.#outputSchema = output;
    this.#signalSchema = signal;
    const sorted = [...waits].sort((a, b) => a.key.compare(b.key));
    this.#waits = new Map(sorted.map((declaration) => [declaration.key.toString(), declaration]));
    this.#json = encodeWire(this.toWire());
    this.#digest = Digest.of(this.#json);
    Object.freeze(this);
  }

  /** Validates a configuration; every rejection is `invalid_descriptor`. */
  static create(config: DescriptorConfig): Descriptor {
    const fail = (message: string): never => {
      throw new KernelError(ErrorCode.invalidDescriptor, `invalid descriptor: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected a configuration, got ${describe(config)}`);
    if (!isQualifiedName(config.name)) fail(`name ${describe(config.name)} is not a qualified name`);
    if (!validDescription(config.description)) {
      fail(`description must be non-empty, trimmed, well-formed text of at most ${maxDescriptionBytes} UTF-8 bytes`);
    }
    if (!(config.inputSchema instanceof Schema)) fail('inputSchema must be a Schema');
    if (!(config.outputSchema instanceof Schema)) fail('outputSchema must be a Schema');
    if (config.signalSchema !== undefined && !(config.signalSchema instanceof Schema)) {
      fail('signalSchema must be a Schema when present');
    }
    if (config.waits !== undefined && !Array.isArray(config.waits)) fail('waits must be an array of wait declarations');
    const waits = (config.waits ?? []).map((wait) => WaitDeclaration.create(wait));
    const keys = new Set<string>();
    for (const wait of waits) {
      if (keys.has(wait.key.toString())) fail(`wait key ${wait.key.toString()} is declared twice`);
      keys.add(wait.key.toString());
    }
    return new Descriptor(
      config.name,
      config.description,
      config.inputSchema,
      config.outputSchema,
      config.signalSchema ?? Schema.rejectAll,
      waits,
    );
  }

  /** Strict decode; an invalid member (schemas included) is reported with `code` and its path. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidDescriptor): Descriptor {
    const record: WireRecord = new WireRecord(node, path, code);
    const name = record.string('name');
    if (!isQualifiedName(name)) record.fail('must be a qualified name', 'name');
    const description = record.string('description');
    if (!validDescription(description)) {
      record.fail(
        `must be non-empty, trimmed, well-formed text of at most ${maxDescriptionBytes} UTF-8 bytes`,
        'description',
      );
    }
    const input = readSchema(record, 'input_schema');
    const output = readSchema(record, 'output_schema');
    const signal = readSchema(record, 'signal_schema');
    const waitsNode = record.optional('waits');
    record.finish();
    const waits = waitsNode === undefined ? [] : readWaits(record, waitsNode);
    return new Descriptor(name, description, input, output, signal, waits);
  }

  static parse(input: string | Uint8Array): Descriptor {
    return Descriptor.fromWire(parseJson(input, { code: ErrorCode.invalidDescriptor, what: 'descriptor' }));
  }

  get name(): string {
    return this.#name;
  }

  get description(): string {
    return this.#description;
  }

  get inputSchema(): Schema {
    return this.#inputSchema;
  }

  get outputSchema(): Schema {
    return this.#outputSchema;
  }

  /** The unaddressed-input contract; {@link Schema.rejectAll} when none was declared. */
  get signalSchema(): Schema {
    return this.#signalSchema;
  }

  /** The declared external waits, in WaitKey order. */
  waits(): WaitDeclaration[] {
    return [...this.#waits.values()];
  }

  /** The static declaration of `key`, if this Descriptor declares one. */
  wait(key: WaitKey): WaitDeclaration | undefined {
    return this.#waits.get(key.toString());
  }

  /** sha256 of the canonical wire JSON: the contract identity folded into a DeploymentRef. */
  digest(): Digest {
    return this.#digest;
  }

  /** Throws `schema_validation_failed` unless `input` satisfies the input schema. */
  validateInput(input: Payload): void {
    this.#inputSchema.validate(input, `${this.#name} input`);
  }

  /** Throws `schema_validation_failed` unless `output` satisfies the output schema. */
  validateOutput(output: Payload): void {
    this.#outputSchema.validate(output, `${this.#name} output`);
  }

  /** Checks unaddressed Host input before mailbox admission (`schema_validation_failed`). */
  validateSignal(payload: Payload): void {
    this.#signalSchema.validate(payload, `${this.#name} signal`);
  }

  /** Encodes `value` as a Payload (`invalid_payload` if it is not JSON) and validates it as input. */
  encodeInput(value: unknown): Payload {
    const payload = Payload.encode(value);
    this.validateInput(payload);
    return payload;
  }

  /** Validates `output` against the output schema, then decodes it (no further runtime type check). */
  decodeOutput<T>(output: Payload): T {
    this.validateOutput(output);
    return output.decode<T>();
  }

  toWire(): WireValue {
    return {
      name: this.#name,
      description: this.#description,
      input_schema: this.#inputSchema.toWire(),
      output_schema: this.#outputSchema.toWire(),
      signal_schema: this.#signalSchema.toWire(),
      // fromEntries defines own members, so a key such as `__proto__` stays an ordinary member.
      waits:
        this.#waits.size === 0
          ? undefined
          : Object.fromEntries(
              [...this.#waits].map(([key, wait]) => [key, { answer_schema: wait.answerSchema.toWire(), description: wait.description }]),
            ),
    };
  }

  json(): string {
    return this.#json;
  }

  equals(other: Descriptor | undefined): boolean {
    return other instanceof Descriptor && other.#json === this.#json;
  }
}

function readSchema(record: WireRecord, member: string): Schema {
  const node = record.present(member);
  try {
    return Schema.fromNode(node);
  } catch (error) {
    if (error instanceof KernelError) {
      throw new KernelError(record.code, `${record.childPath(member)} ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/** Reads `{"<wait key>":{"answer_schema","description"},…}` (non-empty; keys are WaitKeys). */
function readWaits(record: WireRecord, node: JsonNode): WaitDeclaration[] {
  const path = record.childPath('waits');
  if (node.kind !== 'object') record.fail('must be an object', 'waits');
  if (node.members.length === 0) record.fail('is omitted when no wait is declared, never written empty', 'waits');
  return node.members.map(([key, value]) => {
    const memberPath = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (!isIdentityText(key)) throw new KernelError(record.code, `${memberPath} is not a wait key`);
    const member: WireRecord = new WireRecord(value, memberPath, record.code);
    const description = member.string('description');
    if (!validDescription(description)) {
      member.fail(`must be non-empty, trimmed, well-formed text of at most ${maxDescriptionBytes} UTF-8 bytes`, 'description');
    }
    const answerSchema = readSchema(member, 'answer_schema');
    member.finish();
    return WaitDeclaration.create({ key: WaitKey.parse(key), description, answerSchema }, record.code);
  });
}
