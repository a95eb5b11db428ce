/**
 * Host-owned gates check answers with their own Ajv instance (src/server/gates/answer-schema.ts: an
 * LRU of validators, so callers' schemas cannot grow memory), written with the kernel's settings
 * (src/kernel/schema.ts). The settings are written out twice; this test keeps them the same: for each
 * setting that decides anything, a schema or an answer on which it does, and the kernel's Schema and
 * the gate's check must decide alike (`allowUnionTypes` decides nothing while `strictTypes` is off).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Payload, Schema } from '../../src/kernel/index.js';
import { answerSchemaProblems, checkAnswer } from '../../src/server/gates/answer-schema.js';

function kernelTakesSchema(schema: unknown): boolean {
  try {
    Schema.of(schema);
    return true;
  } catch {
    return false;
  }
}

function gateTakesSchema(schema: unknown): boolean {
  return answerSchemaProblems(schema).length === 0;
}

function kernelAccepts(schema: unknown, instance: unknown): boolean {
  return Schema.of(schema).accepts(Payload.encode(instance as never));
}

function gateAccepts(schema: unknown, instance: unknown): boolean {
  try {
    checkAnswer(JSON.stringify(schema), instance);
    return true;
  } catch {
    return false;
  }
}

const schemas: readonly { readonly setting: string; readonly schema: unknown; readonly taken: boolean }[] = [
  { setting: 'strict: an unknown keyword', schema: { type: 'object', colour: 'red' }, taken: false },
  { setting: 'strict: an unknown format', schema: { type: 'string', format: 'shoe-size' }, taken: false },
  { setting: 'union types', schema: { type: ['string', 'number'] }, taken: true },
  { setting: 'strictRequired off: required without properties', schema: { type: 'object', required: ['a'] }, taken: true },
  { setting: 'strictTypes off: a keyword without its type', schema: { properties: { a: { minimum: 1 } } }, taken: true },
  { setting: 'strictTuples off: prefixItems without items', schema: { type: 'array', prefixItems: [{ type: 'string' }] }, taken: true },
  { setting: 'an unresolvable $ref', schema: { $ref: 'https://example.com/elsewhere.json' }, taken: false },
];

test('answer schemas: the gate takes exactly the schemas the kernel takes', () => {
  for (const { setting, schema, taken } of schemas) {
    assert.equal(kernelTakesSchema(schema), taken, `kernel, ${setting}`);
    assert.equal(gateTakesSchema(schema), taken, `gate, ${setting}`);
  }
});

const answers: readonly { readonly setting: string; readonly schema: unknown; readonly instance: unknown; readonly accepted: boolean }[] = [
  { setting: 'ownProperties: an inherited name is not present', schema: { type: 'object', required: ['toString'] }, instance: {}, accepted: false },
  { setting: 'coerceTypes off', schema: { type: 'number' }, instance: '1', accepted: false },
  { setting: 'formats', schema: { type: 'string', format: 'email' }, instance: 'not an address', accepted: false },
  { setting: 'formats', schema: { type: 'string', format: 'date-time' }, instance: '2026-12-07T06:00:00Z', accepted: true },
  { setting: 'union types', schema: { type: ['string', 'number'] }, instance: 7, accepted: true },
];

test('answer schemas: the gate accepts exactly the answers the kernel accepts', () => {
  for (const { setting, schema, instance, accepted } of answers) {
    assert.equal(kernelAccepts(schema, instance), accepted, `kernel, ${setting}`);
    assert.equal(gateAccepts(schema, instance), accepted, `gate, ${setting}`);
  }
});

test('answer schemas: checking never rewrites the answer (no defaults, no removal, no coercion)', () => {
  const schema = { type: 'object', properties: { a: { type: 'number', default: 1 }, b: { type: 'number' } }, additionalProperties: false };
  const answer = { b: 2 };
  checkAnswer(JSON.stringify(schema), answer);
  assert.deepEqual(answer, { b: 2 });
  const extra = { b: 2, c: 3 };
  assert.equal(gateAccepts(schema, extra), false);
  assert.deepEqual(extra, { b: 2, c: 3 });
  assert.equal(kernelAccepts(schema, { b: 2, c: 3 }), false);
});

test('answer schemas: a schema $id is no global name; two schemas with one $id both compile (addUsedSchema off)', () => {
  const first = { $id: 'https://example.com/answer.json', type: 'string' };
  const second = { $id: 'https://example.com/answer.json', type: 'number' };
  assert.equal(kernelTakesSchema(first) && kernelTakesSchema(second), true);
  assert.equal(gateTakesSchema(first) && gateTakesSchema(second), true);
  assert.equal(gateAccepts(second, 3), true);
  assert.equal(kernelAccepts(second, 3), true);
});
