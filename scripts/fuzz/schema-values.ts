/**
 * fast-check arbitraries from JSON Schemas: `validValue` stays inside the schema (so the request
 * gets past validation and reaches the Host), `mutantValue` steps outside it one way at a time (a
 * missing or unknown member, a wrong type, a bound crossed, a hostile string, a prototype key).
 */
import fc from 'fast-check';
import type { JsonSchema } from './openapi-spec.js';

type Schema = Readonly<Record<string, unknown>>;

/** Strings that have broken parsers, loggers and key schemes elsewhere. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\r\n',
    'a\rb',
    'a\nb',
    '\r\nX-Injected: 1',
    '../../etc/passwd',
    '%00',
    '%0d%0a',
    '%zz',
    '\u202eevil',
    '\ud800',
    '\udfff\ud800',
    '😀',
    'é',
    'e\u0301',
    '\ufeff',
    '{}',
    '[]',
    'null',
    '__proto__',
    'constructor',
    'prototype',
    '${jndi:x}',
    '%s%s%n',
    "' OR 1=1 --",
    '*',
    '{scope}',
    'scope:tree:{x}',
    '0',
    '-1',
    '18446744073709551616',
    '1e400',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.integer({ min: 257, max: 5000 }).map((length) => 'a'.repeat(length)),
);

/** A JSON value of any shape (small). */
export const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 });

const cap = 24;

export function validValue(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
  if (schema === true || (typeof schema === 'object' && Object.keys(schema).filter((key) => !isAnnotation(key)).length === 0)) return anyJson;
  if (schema === false) return anyJson;
  const s = schema as Schema;
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if ('const' in s) return fc.constant(s.const);
  const alternatives = (s.anyOf ?? s.oneOf) as JsonSchema[] | undefined;
  if (alternatives !== undefined) return fc.oneof(...alternatives.map((alternative) => validValue(alternative, depth)));
  switch (s.type) {
    case 'string':
      return stringValue(s);
    case 'integer':
      return fc.integer({ min: num(s.minimum, -1_000_000), max: num(s.maximum, 1_000_000) });
    case 'number':
      return fc.double({ min: num(s.minimum, -1e6), max: num(s.maximum, 1e6), noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = (s.items ?? true) as JsonSchema;
      const minLength = num(s.minItems, 0);
      const maxLength = Math.min(num(s.maxItems, 4), Math.max(minLength, 4));
      const item = depth > 4 ? anyJson : validValue(items, depth + 1);
      return s.uniqueItems === true
        ? fc.uniqueArray(item, { minLength, maxLength, selector: (value) => JSON.stringify(value) })
        : fc.array(item, { minLength, maxLength });
    }
    case 'object':
    default: {
      const properties = (s.properties ?? {}) as Record<string, JsonSchema>;
      const required = (s.required ?? []) as string[];
      if (Object.keys(properties).length === 0) return s.type === 'object' ? fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 3 }) : anyJson;
      const members: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, property] of Object.entries(properties)) members[name] = depth > 4 ? anyJson : validValue(property, depth + 1);
      return fc.record(members, { requiredKeys: required.filter((name) => name in members) });
    }
  }
}

function stringValue(s: Schema): fc.Arbitrary<string> {
  const minLength = num(s.minLength, 0);
  const maxLength = Math.min(num(s.maxLength, cap), cap * 4);
  if (typeof s.pattern === 'string') {
    return fc.stringMatching(new RegExp(s.pattern)).filter((text) => text.length >= minLength && text.length <= num(s.maxLength, Infinity));
  }
  return fc.string({ minLength, maxLength: Math.max(minLength, maxLength), unit: 'grapheme-composite' });
}

/** A value just outside `schema` (or, for a schema admitting anything, a pathological one). */
export function mutantValue(schema: JsonSchema): fc.Arbitrary<unknown> {
  const wrongType = fc.oneof(anyJson, hostileString, fc.constantFrom(null, true, 0, -1, 1.5, 2 ** 64, [], {}, '1'));
  if (typeof schema !== 'object') return fc.oneof(wrongType, pathologicalJson);
  const s = schema as Schema;
  const choices: fc.Arbitrary<unknown>[] = [wrongType];
  if (Array.isArray(s.enum)) choices.push(hostileString, fc.constant(String((s.enum as unknown[])[0]).toUpperCase()));
  switch (s.type) {
    case 'string':
      choices.push(hostileString, fc.constant('x'.repeat(num(s.maxLength, 4096) + 1)));
      break;
    case 'integer':
    case 'number':
      choices.push(
        fc.constantFrom(num(s.minimum, 0) - 1, num(s.maximum, 2 ** 53) + 1, 0.5, -0, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2),
        fc.integer().map(String),
      );
      break;
    case 'array': {
      const items = (s.items ?? true) as JsonSchema;
      choices.push(fc.constant([]), fc.array(mutantValue(items), { minLength: 1, maxLength: 3 }));
      if (typeof s.maxItems === 'number' && s.maxItems <= 2000) choices.push(validValue(items).map((item) => Array.from({ length: (s.maxItems as number) + 1 }, () => item)));
      if (s.uniqueItems === true) choices.push(validValue(items).map((item) => [item, item]));
      break;
    }
    case 'object':
      choices.push(...objectMutants(s));
      break;
    default:
      if (Object.keys(s).filter((key) => !isAnnotation(key)).length === 0) choices.push(pathologicalJson, hostileString);
  }
  return fc.oneof(...choices);
}

function objectMutants(s: Schema): fc.Arbitrary<unknown>[] {
  const properties = (s.properties ?? {}) as Record<string, JsonSchema>;
  const required = (s.required ?? []) as string[];
  const valid = validValue(s) as fc.Arbitrary<Record<string, unknown>>;
  const mutants: fc.Arbitrary<unknown>[] = [
    fc.tuple(valid, fc.string({ minLength: 1, maxLength: 12 }), anyJson).map(([value, key, member]) => ({ ...value, [key in properties ? `${key}_` : key]: member })),
    fc.tuple(valid, pollutionKey, anyJson).map(([value, key, member]) => withOwnMember(value, key, member)),
    fc.constant([]),
  ];
  if (required.length > 0) mutants.push(fc.tuple(valid, fc.constantFrom(...required)).map(([value, key]) => without(value, key)));
  const names = Object.keys(properties);
  if (names.length > 0) {
    mutants.push(
      fc.constantFrom(...names).chain((name) => fc.tuple(valid, mutantValue(properties[name]!)).map(([value, member]) => withOwnMember(value, name, member))),
    );
  }
  return mutants;
}

/** Member names the server refuses as prototype pollution, and their neighbours it must not. */
export const pollutionKey = fc.constantFrom('__proto__', 'constructor', 'prototype', '__defineGetter__', 'hasOwnProperty', 'toString', 'valueOf');

/** `value` plus an own member `key` (JSON.parse makes `__proto__` an own member, not the prototype). */
export function withOwnMember(value: Record<string, unknown>, key: string, member: unknown): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
  Object.defineProperty(copy, key, { value: key === 'constructor' ? { prototype: member } : member, enumerable: true, writable: true, configurable: true });
  return copy;
}

function without(value: Record<string, unknown>, key: string): Record<string, unknown> {
  const copy = { ...value };
  delete copy[key];
  return copy;
}

/**
 * Deep, wide or odd JSON values (still JSON). A deep one is a stand-in (`{"@deep": {depth, shape}}`)
 * expanded only when the body text is written ({@link expandDeep}): a value thousands of levels
 * deep would overflow the fuzzer's own recursion (JSON.stringify, fast-check's shrinking).
 */
export const pathologicalJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.record({ '@deep': fc.record({ depth: fc.integer({ min: 100, max: 12_000 }), shape: fc.constantFrom('array', 'object') }) }),
  fc.integer({ min: 1000, max: 20_000 }).map((width) => Array.from({ length: width }, (_, index) => index)),
  fc.integer({ min: 100, max: 5000 }).map((width) => Object.fromEntries(Array.from({ length: width }, (_, index) => [`k${index}`, index]))),
  fc.constantFrom(1e308, -0, 5e-324, Number.MAX_SAFE_INTEGER + 2, '\u0000', '\ud800'),
);

/** JSON text with every deep stand-in replaced by the nesting it stands for. */
export function expandDeep(json: string): string {
  return json.replace(/\{"@deep":\{"depth":(\d+),"shape":"(array|object)"\}\}/g, (_match, depthText: string, shape: string) => {
    const depth = Number(depthText);
    return shape === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  });
}

function num(value: unknown, fallback: number): number {
  return typeof value === 'number' ? value : fallback;
}

function isAnnotation(keyword: string): boolean {
  return keyword === 'description' || keyword === 'example' || keyword === 'examples' || keyword === 'title';
}
