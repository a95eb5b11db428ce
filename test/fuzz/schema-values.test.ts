/** The fuzzer's value generators: valid values fit their schema, and deep values stay text until sent. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Ajv } from 'ajv';
import { loadSpec } from '../../scripts/fuzz/openapi-spec.js';
import { expandDeep, pathologicalJson, validValue } from '../../scripts/fuzz/schema-values.js';

test('valid values of every request body schema in openapi.yaml pass that schema', () => {
  const ajv = new Ajv({ strict: false, allErrors: true });
  for (const operation of loadSpec().operations) {
    if (operation.body === undefined) continue;
    const validate = ajv.compile(operation.body as object);
    for (const value of fc.sample(validValue(operation.body), { numRuns: 50, seed: 1 })) {
      assert.ok(validate(value), `${operation.operationId}: ${JSON.stringify(value)} ${JSON.stringify(validate.errors)}`);
    }
  }
});

test('a deep stand-in serialises without recursion and expands to the nesting it names', () => {
  const deep = fc.sample(pathologicalJson, { numRuns: 200, seed: 2 }).find((value) => typeof value === 'object' && value !== null && '@deep' in value);
  assert.ok(deep !== undefined);
  const { depth, shape } = (deep as { '@deep': { depth: number; shape: string } })['@deep'];
  const text = expandDeep(JSON.stringify({ input: deep }));
  assert.ok(text.startsWith(shape === 'array' ? `{"input":${'['.repeat(depth)}]` : `{"input":${'{"a":'.repeat(depth)}1}`));
  assert.equal(text.length, JSON.stringify({ input: null }).length - 4 + (shape === 'array' ? 2 * depth : 6 * depth + 1));
});
