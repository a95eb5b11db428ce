import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsCjs from 'ajv-formats';
import { nodeFromValue, parseJson, valueFromNode, writeCanonical, type JsonNode } from './canonical-json.js';
import { Digest } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { Payload } from './payload.js';
import { RawJson, type WireValue } from './wire.js';

const addFormats = addFormatsCjs as unknown as typeof addFormatsCjs.default;

/** One schema violation, in the vocabulary of Ajv (and of fastify's route validation errors). */
export interface SchemaViolation {
  /** JSON Pointer (RFC 6901) of the offending value in the instance; `''` is the whole instance. */
  readonly pointer: string;
  /** The JSON Schema keyword that failed (`type`, `required`, `false schema`, ...). */
  readonly keyword: string;
  readonly message: string;
}

/**
 * A payload rejected by a schema (`schema_validation_failed`). The message lists every violation as
 * `pointer keyword message`; `details` carries the same violations as data.
 */
export class SchemaValidationError extends KernelError {
  readonly details: readonly SchemaViolation[];
  /** In a batch (signal delivery): the 0-based index of the entry whose payload failed. */
  readonly batchIndex: number | undefined;

  constructor(what: string, details: readonly SchemaViolation[], batchIndex?: number) {
    const listed = details.map((v) => `${v.pointer === '' ? '/' : v.pointer} ${v.keyword} ${v.message}`).join('; ');
    super(ErrorCode.schemaValidationFailed, `${what} does not satisfy its schema: ${listed}`);
    this.name = 'SchemaValidationError';
    this.details = Object.freeze(details.map((v) => Object.freeze({ ...v })));
    this.batchIndex = batchIndex;
  }

  /** The same violations, located at entry `index` of a batch (so a client can point at it). */
  atBatchIndex(index: number): SchemaValidationError {
    const error = new SchemaValidationError('', this.details, index);
    error.message = this.message;
    return error;
  }
}

/**
 * An immutable JSON Schema (draft 2020-12) used by Descriptor input, output and Signal contracts.
 *
 * Construction meta-validates the schema and compiles it in Ajv's strict mode, so a schema that is
 * not a 2020-12 schema, uses an unknown keyword or format, or holds an unresolvable `$ref` (remote
 * references are never fetched) is rejected with `invalid_schema`. A schema is a JSON object or a
 * boolean; `false` ({@link Schema.rejectAll}) rejects every instance.
 *
 * The schema's identity is its canonical JSON text (`json()`) and `digest()` over it; equal schemas
 * written differently (member order, whitespace) have one identity.
 *
 * Validation runs against the payload's decoded JS value: numbers are validated as IEEE-754
 * doubles, so a literal beyond double precision (e.g. `9007199254740993`) is checked as the nearest
 * double. Strategies needing exact big integers should carry them as strings.
 */
export class Schema {
  readonly #text: string;
  readonly #node: JsonNode;
  readonly #digest: Digest;
  readonly #validate: ValidateFunction;

  static #rejectAll: Schema | undefined;

  private constructor(node: JsonNode) {
    if (node.kind !== 'object' && node.kind !== 'boolean') {
      throw new KernelError(ErrorCode.invalidSchema, 'invalid schema: a JSON Schema must be an object or a boolean');
    }
    const proto = protoMemberPath(node);
    if (proto !== undefined) {
      throw new KernelError(
        ErrorCode.invalidSchema,
        `invalid schema: member name "__proto__" at ${proto} is not supported (the validator would ignore it)`,
      );
    }
    this.#node = node;
    this.#text = writeCanonical(node);
    this.#digest = Digest.of(this.#text);
    this.#validate = compiledValidator(this.#digest.toString(), node);
    Object.freeze(this);
  }

  /** Parses schema text (or bytes, or a Payload holding one) and resolves it. */
  static parse(input: string | Uint8Array | Payload): Schema {
    if (input instanceof Payload) return new Schema(input.node());
    return new Schema(parseJson(input, { code: ErrorCode.invalidSchema, what: 'schema' }));
  }

  /** A schema from a plain JS value (a schema literal). */
  static of(value: unknown): Schema {
    let node: JsonNode;
    try {
      node = nodeFromValue(value);
    } catch (error) {
      if (error instanceof KernelError) throw new KernelError(ErrorCode.invalidSchema, error.message, { cause: error });
      throw error;
    }
    return new Schema(node);
  }

  /** A parsed JSON node (e.g. a record member) as a schema. */
  static fromNode(node: JsonNode): Schema {
    return new Schema(node);
  }

  /** The boolean `false` schema: every instance is rejected (the default Signal contract). */
  static get rejectAll(): Schema {
    Schema.#rejectAll ??= new Schema({ kind: 'boolean', value: false });
    return Schema.#rejectAll;
  }

  /** True for the `false` schema. */
  get rejectsAll(): boolean {
    return this.#node.kind === 'boolean' && !this.#node.value;
  }

  /** The canonical schema text. */
  json(): string {
    return this.#text;
  }

  node(): JsonNode {
    return this.#node;
  }

  digest(): Digest {
    return this.#digest;
  }

  /** The schema embedded verbatim in a parent record. */
  toWire(): WireValue {
    return new RawJson(this.#text);
  }

  equals(other: Schema | undefined): boolean {
    return other !== undefined && other.#text === this.#text;
  }

  /** Whether `payload` satisfies this schema (see the class note on number precision). */
  accepts(payload: Payload): boolean {
    return evaluate(this.#validate, payload) === undefined;
  }

  /**
   * Throws a {@link SchemaValidationError} (`schema_validation_failed`) listing the violations when
   * `payload` does not satisfy this schema. `what` names the payload in the message.
   */
  validate(payload: Payload, what = 'payload'): void {
    const problems = evaluate(this.#validate, payload);
    if (problems !== undefined) throw new SchemaValidationError(what, problems);
  }

  toString(): string {
    return this.#text;
  }
}

/**
 * Runs a validator; undefined means valid. A validator that cannot evaluate the instance (Ajv's
 * deep equality, used by `const`, `enum` and `uniqueItems`, calls `valueOf`/`toString` found on
 * the data, so members with those names can make it throw) fails closed: the payload is rejected.
 */
function evaluate(validate: ValidateFunction, payload: Payload): SchemaViolation[] | undefined {
  try {
    if (validate(payload.decode())) return undefined;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return [{ pointer: '', keyword: 'evaluation', message: `the validator could not evaluate the payload (${reason})` }];
  }
  return violations(validate.errors);
}

function violations(errors: readonly ErrorObject[] | null | undefined): SchemaViolation[] {
  if (errors === null || errors === undefined || errors.length === 0) {
    return [{ pointer: '', keyword: 'schema', message: 'validation failed' }];
  }
  return errors.map((error) => ({
    pointer: error.instancePath,
    keyword: error.keyword,
    message: error.message ?? 'is invalid',
  }));
}

/* ------------------------------------------------------------------------------------------------
 * The shared Ajv instance and its validator cache.
 * ---------------------------------------------------------------------------------------------- */

let sharedAjv: Ajv2020 | undefined;

/**
 * Compiled validators by canonical schema digest: equal schemas compile once. Compiled code is
 * retained for the process lifetime (Ajv's own code scope keeps it too), which suits a bounded set
 * of deployed contracts; hosts compiling unbounded distinct schemas should bound that themselves.
 */
const validators = new Map<string, ValidateFunction>();

/**
 * A new Ajv with the kernel's JSON Schema dialect (draft 2020-12, formats): strict about the schema,
 * never coercing, defaulting or removing, and only own properties count. A host that validates
 * other JSON the way deployment schemas do (gate answers) builds its own instance with this.
 */
export function createSchemaAjv(): Ajv2020 {
  const instance = new Ajv2020({
    strict: true,
    strictTuples: false,
    strictTypes: false,
    strictRequired: false,
    allowUnionTypes: true,
    // Inherited names (`toString`, `constructor`) must not satisfy `required` and friends.
    ownProperties: true,
    // A compiled schema's `$id` must not become a global name other schemas could resolve.
    addUsedSchema: false,
    // Validation never rewrites the instance.
    coerceTypes: false,
    useDefaults: false,
    removeAdditional: false,
  });
  addFormats(instance);
  return instance;
}

function ajv(): Ajv2020 {
  sharedAjv ??= createSchemaAjv();
  return sharedAjv;
}

function compiledValidator(digest: string, node: JsonNode): ValidateFunction {
  const cached = validators.get(digest);
  if (cached !== undefined) return cached;
  const validate = compile(valueFromNode(node) as object | boolean);
  validators.set(digest, validate);
  return validate;
}

/**
 * Meta-validates and compiles one schema. Ajv registers nested `$id`s in instance-wide tables;
 * they are rolled back afterwards so that whether a schema resolves never depends on which other
 * schemas were compiled before it (the compiled function keeps its own resolved references).
 */
function compile(schema: object | boolean): ValidateFunction {
  const instance = ajv();
  let valid: boolean;
  try {
    // Throws rather than answers for an unknown `$schema` dialect.
    valid = instance.validateSchema(schema) === true;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new KernelError(ErrorCode.invalidSchema, `invalid schema: ${message}`, { cause: error });
  }
  if (!valid) {
    const listed = (instance.errors ?? [])
      .map((error) => `${error.instancePath === '' ? '/' : error.instancePath} ${error.message ?? 'is invalid'}`)
      .join('; ');
    throw new KernelError(ErrorCode.invalidSchema, `invalid schema: ${listed || 'meta-validation failed'}`);
  }
  const refs = instance.refs as Record<string, unknown>;
  const schemas = instance.schemas as Record<string, unknown>;
  const savedRefs = { ...refs };
  const savedSchemas = { ...schemas };
  try {
    return instance.compile(schema);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new KernelError(ErrorCode.invalidSchema, `invalid schema: ${message}`, { cause: error });
  } finally {
    restore(refs, savedRefs);
    restore(schemas, savedSchemas);
  }
}

function restore(table: Record<string, unknown>, saved: Record<string, unknown>): void {
  for (const key of Object.keys(table)) {
    if (!Object.hasOwn(saved, key)) delete table[key];
  }
  for (const [key, value] of Object.entries(saved)) table[key] = value;
}

/** The JSON path of the first `__proto__` member name anywhere in `node`, if any. */
function protoMemberPath(node: JsonNode): string | undefined {
  const work: Array<[JsonNode, string]> = [[node, '']];
  for (let task = work.pop(); task !== undefined; task = work.pop()) {
    const [current, path] = task;
    if (current.kind === 'object') {
      for (const [name, child] of current.members) {
        if (name === '__proto__') return `${path}/__proto__`;
        work.push([child, `${path}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`]);
      }
    } else if (current.kind === 'array') {
      current.items.forEach((item, index) => work.push([item, `${path}/${index}`]));
    }
  }
  return undefined;
}
