import type { Ajv2020, ValidateFunction } from 'ajv/dist/2020.js';
import { createHash } from 'node:crypto';
import { createSchemaAjv, SchemaValidationError, type SchemaViolation } from '../../kernel/index.js';

/**
 * The answer schemas of host-owned gates: any caller's JSON Schema (draft 2020-12), checked as a
 * schema before a gate is written, then used to check answers. The kernel's validator cache keeps
 * every schema it compiles for the process's life, which suits deployed contracts but not schemas
 * that callers send; here compiled validators are kept in a small LRU and removed from Ajv when
 * they leave it, so memory stays bounded however many gates are opened.
 */
const cacheSize = 128;
const compiled = new Map<string, { readonly schema: object | boolean; readonly validate: ValidateFunction }>();
let sharedAjv: Ajv2020 | undefined;

function ajv(): Ajv2020 {
  // The kernel's dialect, so an answer schema means what it would in a deployment's contract.
  sharedAjv ??= createSchemaAjv();
  return sharedAjv;
}

/**
 * Why `schema` is not a usable answer schema (pointers into the schema), or an empty list when it
 * is. A schema with `$ref`s that do not resolve locally, unknown keywords or formats is refused.
 */
export function answerSchemaProblems(schema: unknown): SchemaViolation[] {
  if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
    return [{ pointer: '', keyword: 'type', message: 'a JSON Schema is an object or a boolean' }];
  }
  try {
    validatorOf(JSON.stringify(schema));
    return [];
  } catch (error) {
    if (error instanceof SchemaProblems) return error.problems;
    throw error;
  }
}

/** Throws `schema_validation_failed` (pointers into the answer) when `answer` fails `schemaText`. */
export function checkAnswer(schemaText: string | null, answer: unknown): void {
  if (schemaText === null) return;
  const validate = validatorOf(schemaText);
  let valid: boolean;
  try {
    valid = validate(answer) === true;
  } catch (error) {
    throw new SchemaValidationError('answer', [{ pointer: '', keyword: 'evaluation', message: `the validator could not evaluate the answer (${error instanceof Error ? error.message : String(error)})` }]);
  }
  if (valid) return;
  const details = (validate.errors ?? []).map((error) => ({ pointer: error.instancePath, keyword: error.keyword, message: error.message ?? 'is invalid' }));
  throw new SchemaValidationError('answer', details.length > 0 ? details : [{ pointer: '', keyword: 'schema', message: 'validation failed' }]);
}

class SchemaProblems extends Error {
  constructor(readonly problems: SchemaViolation[]) {
    super(problems.map((problem) => `${problem.pointer || '/'} ${problem.message}`).join('; '));
  }
}

function validatorOf(schemaText: string): ValidateFunction {
  const digest = createHash('sha256').update(schemaText).digest('hex');
  const cached = compiled.get(digest);
  if (cached !== undefined) {
    // Most recently used last.
    compiled.delete(digest);
    compiled.set(digest, cached);
    return cached.validate;
  }
  const schema = JSON.parse(schemaText) as object | boolean;
  const instance = ajv();
  let valid: boolean;
  try {
    valid = instance.validateSchema(schema) === true;
  } catch (error) {
    throw new SchemaProblems([{ pointer: '', keyword: 'schema', message: error instanceof Error ? error.message : String(error) }]);
  }
  if (!valid) {
    throw new SchemaProblems((instance.errors ?? []).map((error) => ({ pointer: error.instancePath, keyword: error.keyword, message: error.message ?? 'is invalid' })));
  }
  let validate: ValidateFunction;
  try {
    validate = instance.compile(schema);
  } catch (error) {
    throw new SchemaProblems([{ pointer: '', keyword: 'schema', message: error instanceof Error ? error.message : String(error) }]);
  }
  compiled.set(digest, { schema, validate });
  while (compiled.size > cacheSize) {
    const [oldest, entry] = compiled.entries().next().value as [string, { schema: object | boolean }];
    compiled.delete(oldest);
    if (typeof entry.schema === 'object') instance.removeSchema(entry.schema);
  }
  return validate;
}
