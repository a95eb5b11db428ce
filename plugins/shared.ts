/**
 * Schema building blocks shared by every resource plugin: closed objects, `$ref`s to named
 * components, the kernel's identity and name syntax, and the exact conversion of query-string text
 * to the integers and booleans a route declares.
 */
import {
  Type,
  type ObjectOptions,
  type Static,
  type StringOptions,
  type TObject,
  type TProperties,
  type TSchema,
  type TUnion,
  type TNull,
  type TUnsafe,
} from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';

/**
 * An object schema that rejects unknown members. Fastify's Ajv runs with `removeAdditional: false`
 * (stack.md §1), so an unknown field is a 400 `invalid_request`, never silently dropped.
 */
export function closedObject<T extends TProperties>(properties: T, options: ObjectOptions = {}): TObject<T> {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

/**
 * A `$ref` to a named component (added with `addSchema`), keeping its static type. The generated
 * document then says `$ref: '#/components/schemas/<Name>'` instead of inlining the schema.
 */
export function ref<T extends TSchema>(schema: T): TUnsafe<Static<T>> {
  if (typeof schema.$id !== 'string') throw new Error('ref() needs a schema with an $id');
  return Type.Unsafe<Static<T>>({ $ref: `${schema.$id}#` });
}

export function nullable<T extends TSchema>(schema: T): TUnion<[T, TNull]> {
  return Type.Union([schema, Type.Null()]);
}

/**
 * A string whose documented values are `values` (clients get a union type) while the server side
 * stays typed as `string`: the Host's views carry these as plain strings.
 */
export function stringEnum(values: readonly string[], options: StringOptions = {}): TUnsafe<string> {
  return Type.Unsafe<string>({ type: 'string', enum: [...values], ...options });
}

/** The kernel's generic identity text (`src/kernel/identity.ts`): 1–256 of `[A-Za-z0-9._:-]`. */
export const identityPattern = '^[A-Za-z0-9._:-]+$';

export function identity(description: string, example: string): ReturnType<typeof Type.String> {
  return Type.String({ minLength: 1, maxLength: 256, pattern: identityPattern, description, example });
}

/** Qualified names (deployment names, capabilities): a lowercase letter, then `[a-z0-9._-]`, ≤ 128. */
export const qualifiedNamePattern = '^[a-z][a-z0-9._-]{0,127}$';

export function qualifiedName(description: string, example: string): ReturnType<typeof Type.String> {
  return Type.String({ pattern: qualifiedNamePattern, description, example });
}

/** An RFC 3339 UTC timestamp as the kernel writes it. */
export function timestamp(description: string): ReturnType<typeof Type.String> {
  return Type.String({ description, example: '2025-01-01T00:00:00.000Z' });
}

/** Any JSON value (a payload, an output, a JSON Schema document). */
export function anyJson(description: string): ReturnType<typeof Type.Unknown> {
  return Type.Unknown({ description });
}

/**
 * The query of a route that takes no query parameters: like unknown body members, unknown
 * parameters are rejected (400 `invalid_request`) rather than ignored.
 */
export const NoQuery = closedObject({});

/** Path parameters naming one process. */
export const ProcessParams = closedObject({
  id: identity('The process id (URL-encoded where it appears in the path).', 'process:0123456789abcdef0123456789abcdef'),
});

/** Path parameters naming one tree by its root process id. */
export const TreeParams = closedObject({
  rootId: identity('The root process id of the tree.', 'process:0123456789abcdef0123456789abcdef'),
});

const integerText = /^-?(?:0|[1-9][0-9]*)$/;
const numberText = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/**
 * Query-string values are text by nature, and Fastify's Ajv does not coerce (stack.md §1). This
 * `preValidation` hook converts, for the parameters a route declares as integer, number or
 * boolean, exactly the texts that spell such a value (`"250"`, `"true"`); anything else stays text
 * and fails validation as 400 `invalid_request`. Nothing else is ever coerced.
 */
export async function convertQueryText(request: FastifyRequest): Promise<void> {
  const schema = request.routeOptions.schema?.querystring as { properties?: Record<string, { type?: unknown }> } | undefined;
  const properties = schema?.properties;
  const query = request.query as Record<string, unknown> | undefined;
  if (properties === undefined || query === undefined || query === null) return;
  for (const [name, property] of Object.entries(properties)) {
    const text = query[name];
    if (typeof text !== 'string') continue;
    const type = property.type;
    if (type === 'integer' && integerText.test(text)) query[name] = Number(text);
    else if (type === 'number' && numberText.test(text)) query[name] = Number(text);
    else if (type === 'boolean' && (text === 'true' || text === 'false')) query[name] = text === 'true';
  }
}

type Mutable<T> = T extends readonly (infer U)[]
  ? Mutable<U>[]
  : T extends (...args: never[]) => unknown
    ? T
    : T extends object
      ? { -readonly [K in keyof T]: Mutable<T[K]> }
      : T;

/**
 * The Host's views are deeply readonly; TypeBox statics are mutable. This is a type-level view
 * (no copy): the compiler still checks every field of the view against the response schema.
 */
export function wire<T>(value: T): Mutable<T> {
  return value as Mutable<T>;
}

/** The path of a process resource, its id URL-encoded. */
export function processPath(processId: string): string {
  return `/v1/processes/${encodeURIComponent(processId)}`;
}

/** One JSON Pointer reference token (RFC 6901): `~` and `/` escaped. */
export function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/**
 * The members of a parsed JSON document that pollute prototypes once code merges the value into an
 * object: `__proto__`, and a `constructor` holding a `prototype` (the two rules of secure-json-parse,
 * which Fastify's default parser enforces but answers only with "not valid JSON"). Returned as JSON
 * Pointers under `base`, in document order. Iterative, so no depth of nesting overflows the stack.
 */
export function prototypePollutionPointers(value: unknown, base = ''): string[] {
  const found: string[] = [];
  const pending: Array<[unknown, string]> = [[value, base]];
  while (pending.length > 0) {
    const [node, pointer] = pending.pop()!;
    if (node === null || typeof node !== 'object') continue;
    const members = Array.isArray(node) ? node.map((item, index) => [String(index), item] as const) : Object.entries(node);
    for (const [key, member] of members) {
      const here = `${pointer}/${escapePointerToken(key)}`;
      if (!Array.isArray(node) && key === '__proto__') found.push(here);
      else if (!Array.isArray(node) && key === 'constructor' && member !== null && typeof member === 'object' && Object.hasOwn(member, 'prototype')) {
        found.push(`${here}/prototype`);
      }
    }
    for (let index = members.length - 1; index >= 0; index -= 1) {
      const [key, member] = members[index]!;
      pending.push([member, `${pointer}/${escapePointerToken(key)}`]);
    }
  }
  return found;
}
