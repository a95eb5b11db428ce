import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema, SchemaValidationError } from '../../src/kernel/schema.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const invalidSchema = code(ErrorCode.invalidSchema);
const failedValidation = code(ErrorCode.schemaValidationFailed);

const objectSchema = {
  type: 'object',
  properties: { value: { type: 'string' }, count: { type: 'integer', minimum: 0 } },
  required: ['value'],
  additionalProperties: false,
};

test('a schema has one canonical text and digest, whatever its input spelling', () => {
  const a = Schema.parse('{ "type": "object", "required": ["value"], "properties": { "value": { "type": "string" } } }');
  const b = Schema.parse(new TextEncoder().encode('{"properties":{"value":{"type":"string"}},"required":["value"],"type":"object"}'));
  const c = Schema.of({ required: ['value'], type: 'object', properties: { value: { type: 'string' } } });
  const d = Schema.parse(Payload.parse('{"type":"object","properties":{"value":{"type":"string"}},"required":["value"]}'));
  assert.equal(a.json(), '{"properties":{"value":{"type":"string"}},"required":["value"],"type":"object"}');
  for (const other of [b, c, d]) {
    assert.equal(other.json(), a.json());
    assert.ok(other.digest().equals(a.digest()));
    assert.ok(other.equals(a));
  }
  assert.ok(Object.isFrozen(a));
  assert.equal(a.digest().toString().length, 'sha256:'.length + 64);
  assert.ok(!a.equals(Schema.of({ type: 'string' })));
});

test('boolean schemas are schemas; Schema.rejectAll is false and rejects every instance', () => {
  const all = Schema.of(true);
  assert.equal(all.json(), 'true');
  all.validate(Payload.parse('{"anything":[1,2,3]}'));
  assert.equal(all.rejectsAll, false);

  const none = Schema.rejectAll;
  assert.equal(none.json(), 'false');
  assert.equal(none.rejectsAll, true);
  assert.ok(none.equals(Schema.parse('false')));
  assert.equal(Schema.rejectAll, none, 'rejectAll is one shared value');
  for (const text of ['{}', 'null', '0', '"x"', '[]']) {
    assert.throws(() => none.validate(Payload.parse(text)), failedValidation);
    assert.equal(none.accepts(Payload.parse(text)), false);
  }
  assert.throws(
    () => none.validate(Payload.parse('{}')),
    (error: unknown) =>
      error instanceof SchemaValidationError &&
      error.details.length === 1 &&
      error.details[0]?.keyword === 'false schema',
  );
});

test('validation passes for conforming payloads and lists every violation otherwise', () => {
  const schema = Schema.of(objectSchema);
  schema.validate(Payload.encode({ value: 'x', count: 2 }));
  assert.equal(schema.accepts(Payload.encode({ value: 'x' })), true);
  assert.equal(schema.accepts(Payload.encode({ value: 1 })), false);

  let caught: unknown;
  try {
    schema.validate(Payload.encode({ value: 'x', count: -1 }), 'example input');
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof SchemaValidationError);
  assert.ok(caught instanceof KernelError);
  assert.equal(caught.code, ErrorCode.schemaValidationFailed);
  assert.deepEqual(caught.details, [{ pointer: '/count', keyword: 'minimum', message: 'must be >= 0' }]);
  assert.equal(caught.message, 'example input does not satisfy its schema: /count minimum must be >= 0');
  assert.ok(Object.isFrozen(caught.details));
});

test('a violation at the instance root is rendered as "/" in the message and "" as pointer', () => {
  const schema = Schema.of(objectSchema);
  assert.throws(
    () => schema.validate(Payload.encode({})),
    (error: unknown) =>
      error instanceof SchemaValidationError &&
      error.message === "payload does not satisfy its schema: / required must have required property 'value'" &&
      error.details[0]?.pointer === '' &&
      error.details[0]?.keyword === 'required',
  );
  assert.throws(
    () => schema.validate(Payload.encode({ value: 'x', extra: 1 })),
    (error: unknown) => error instanceof SchemaValidationError && error.details[0]?.keyword === 'additionalProperties',
  );
});

test('nested instance paths are reported as JSON pointers', () => {
  const schema = Schema.of({ type: 'object', properties: { items: { type: 'array', items: { type: 'integer' } } } });
  assert.throws(
    () => schema.validate(Payload.parse('{"items":[1,"two",3]}')),
    (error: unknown) =>
      error instanceof SchemaValidationError &&
      error.details[0]?.pointer === '/items/1' &&
      error.details[0]?.keyword === 'type' &&
      error.message.includes('/items/1 type must be integer'),
  );
});

test('draft 2020-12 features work: $defs/$ref, prefixItems, items:false, unevaluatedProperties, formats', () => {
  const refs = Schema.of({ $defs: { name: { type: 'string', minLength: 1 } }, type: 'array', items: { $ref: '#/$defs/name' } });
  refs.validate(Payload.parse('["a","b"]'));
  assert.throws(() => refs.validate(Payload.parse('["a",""]')), failedValidation);

  const tuple = Schema.of({ type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false });
  tuple.validate(Payload.parse('["a",1]'));
  assert.throws(() => tuple.validate(Payload.parse('["a",1,true]')), failedValidation);

  const closed = Schema.of({ type: 'object', properties: { a: {} }, unevaluatedProperties: false });
  closed.validate(Payload.parse('{"a":1}'));
  assert.throws(() => closed.validate(Payload.parse('{"b":1}')), failedValidation);

  const email = Schema.of({ type: 'string', format: 'email' });
  email.validate(Payload.parse('"someone@example.com"'));
  assert.throws(() => email.validate(Payload.parse('"not an email"')), failedValidation);

  const dialect = Schema.of({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'string' });
  dialect.validate(Payload.parse('"x"'));
});

test('invalid JSON text or a non-schema JSON value is invalid_schema', () => {
  for (const text of ['', '{', '{"type":}', '{"a":1,"a":2}', '3', '"string"', '[]', 'null']) {
    assert.throws(() => Schema.parse(text), invalidSchema, text);
  }
  assert.throws(() => Schema.of(() => 1), invalidSchema);
  assert.throws(() => Schema.of(undefined), invalidSchema);
  assert.throws(() => Schema.of(new Map()), invalidSchema);
});

test('a schema failing meta-validation is invalid_schema', () => {
  assert.throws(() => Schema.of({ type: 'strng' }), invalidSchema);
  assert.throws(() => Schema.of({ minLength: -1 }), invalidSchema);
  assert.throws(() => Schema.of({ required: 'value' }), invalidSchema);
  assert.throws(() => Schema.of({ properties: { a: 3 } }), invalidSchema);
});

test('strict mode rejects unknown keywords and unknown formats', () => {
  assert.throws(() => Schema.of({ type: 'string', maxLenght: 3 }), invalidSchema);
  assert.throws(() => Schema.of({ type: 'string', format: 'no-such-format' }), invalidSchema);
});

test('an unresolvable $ref (local or remote) or an unknown $schema dialect is invalid_schema', () => {
  assert.throws(() => Schema.of({ $ref: '#/$defs/missing' }), invalidSchema);
  assert.throws(() => Schema.of({ $ref: 'https://example.com/remote.json' }), invalidSchema);
  assert.throws(() => Schema.of({ $schema: 'http://json-schema.org/draft-07/schema#' }), invalidSchema);
});

test('a member named __proto__ is rejected, because the validator would silently ignore it', () => {
  assert.throws(
    () => Schema.parse('{"type":"object","properties":{"__proto__":{"type":"string"}},"required":["__proto__"]}'),
    (error: unknown) => invalidSchema(error) && (error as Error).message.includes('/properties/__proto__'),
  );
});

test('an instance member named __proto__ is validated as an ordinary member', () => {
  const schema = Schema.of({ type: 'object', properties: { a: {} }, additionalProperties: false });
  assert.throws(() => schema.validate(Payload.parse('{"__proto__":1}')), failedValidation);
});

test('inherited names such as toString do not satisfy required', () => {
  const schema = Schema.of({ type: 'object', required: ['toString'] });
  assert.throws(() => schema.validate(Payload.parse('{}')), failedValidation);
  schema.validate(Payload.parse('{"toString":1}'));
});

test('a payload the validator cannot evaluate is rejected (fails closed), not a raw TypeError', () => {
  const schema = Schema.of({ const: { valueOf: 1 } });
  assert.throws(
    () => schema.validate(Payload.parse('{"valueOf":1}')),
    (error: unknown) => error instanceof SchemaValidationError && error.details[0]?.keyword === 'evaluation',
  );
  assert.equal(schema.accepts(Payload.parse('{"valueOf":1}')), false);
});

test('nested $id registrations do not leak between schemas', () => {
  Schema.of({ $defs: { shared: { $id: 'https://example.com/leak-check.json', type: 'string' } } });
  // Without isolation Ajv would remember the id as "#/$defs/shared" and resolve it in this schema.
  assert.throws(
    () => Schema.of({ $ref: 'https://example.com/leak-check.json', $defs: { shared: { type: 'number' } } }),
    invalidSchema,
  );
  assert.throws(() => Schema.of({ $ref: 'https://example.com/leak-check.json' }), invalidSchema);
});

test('two different schemas may declare the same root $id', () => {
  const strings = Schema.of({ $id: 'https://example.com/same-root.json', type: 'string' });
  const numbers = Schema.of({ $id: 'https://example.com/same-root.json', type: 'number' });
  strings.validate(Payload.parse('"x"'));
  numbers.validate(Payload.parse('1'));
  assert.throws(() => strings.validate(Payload.parse('1')), failedValidation);
  assert.throws(() => numbers.validate(Payload.parse('"x"')), failedValidation);
});

test('an equal schema built again reuses its validator and behaves identically', () => {
  const first = Schema.of(objectSchema);
  const second = Schema.parse(first.json());
  assert.ok(first.equals(second));
  assert.equal(second.accepts(Payload.encode({ value: 'x' })), true);
  assert.equal(second.accepts(Payload.encode({ value: 2 })), false);
});

test('numbers beyond double precision are validated as doubles (documented behaviour)', () => {
  const schema = Schema.of({ type: 'integer', maximum: 9007199254740992 });
  // 9007199254740993 rounds to 9007199254740992 as a double, so it passes `maximum`.
  schema.validate(Payload.parse('9007199254740993'));
  assert.throws(() => schema.validate(Payload.parse('9007199254740994')), failedValidation);
});

test('toWire embeds the canonical schema text verbatim', () => {
  const schema = Schema.parse('{ "type" : "string" }');
  const wire = schema.toWire() as { text: string };
  assert.equal(wire.text, '{"type":"string"}');
  assert.equal(String(schema), '{"type":"string"}');
});
