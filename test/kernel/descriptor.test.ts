import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { Descriptor, type DescriptorConfig } from '../../src/kernel/descriptor.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema, SchemaValidationError } from '../../src/kernel/schema.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const invalidDescriptor = code(ErrorCode.invalidDescriptor);
const failedValidation = code(ErrorCode.schemaValidationFailed);

const stringSchema = Schema.of({ type: 'string' });

const echoConfig: DescriptorConfig = {
  name: 'example.echo',
  description: 'Echoes a value.',
  inputSchema: stringSchema,
  outputSchema: stringSchema,
};

const objectInput = Schema.of({
  type: 'object',
  properties: { value: { type: 'string' } },
  required: ['value'],
  additionalProperties: false,
});

test('create keeps the contract and defaults the signal schema to rejectAll', () => {
  const descriptor = Descriptor.create(echoConfig);
  assert.equal(descriptor.name, 'example.echo');
  assert.equal(descriptor.description, 'Echoes a value.');
  assert.ok(descriptor.inputSchema.equals(stringSchema));
  assert.ok(descriptor.outputSchema.equals(stringSchema));
  assert.equal(descriptor.signalSchema, Schema.rejectAll);
  assert.ok(Object.isFrozen(descriptor));
});

test('the wire form is canonical and the digest is sha256 of it (fixed vector)', () => {
  const descriptor = Descriptor.create(echoConfig);
  const expected =
    '{"description":"Echoes a value.","input_schema":{"type":"string"},"name":"example.echo",' +
    '"output_schema":{"type":"string"},"signal_schema":false}';
  assert.equal(descriptor.json(), expected);
  // Computed once with `printf '%s' "$expected" | sha256sum`.
  assert.equal(
    descriptor.digest().toString(),
    'sha256:ddab086a857b0e825a9f4c25dee1035bbf7a341a24c6790a33934a4c6182bf16',
  );
  assert.equal(descriptor.digest().hex, createHash('sha256').update(expected).digest('hex'));
});

test('the digest covers every member', () => {
  const base = Descriptor.create(echoConfig);
  const variants = [
    Descriptor.create({ ...echoConfig, name: 'example.other' }),
    Descriptor.create({ ...echoConfig, description: 'Echoes another value.' }),
    Descriptor.create({ ...echoConfig, inputSchema: objectInput }),
    Descriptor.create({ ...echoConfig, outputSchema: objectInput }),
    Descriptor.create({ ...echoConfig, signalSchema: Schema.of(true) }),
  ];
  for (const variant of variants) {
    assert.ok(!variant.digest().equals(base.digest()));
    assert.ok(!variant.equals(base));
  }
  assert.ok(Descriptor.create({ ...echoConfig, signalSchema: Schema.rejectAll }).equals(base));
});

test('parse round trips and restores the canonical order regardless of input order', () => {
  const descriptor = Descriptor.create({ ...echoConfig, inputSchema: objectInput, signalSchema: stringSchema });
  const again = Descriptor.parse(descriptor.json());
  assert.ok(again.equals(descriptor));
  assert.equal(again.json(), descriptor.json());

  const shuffled =
    '{ "signal_schema": false, "output_schema": {"type":"string"}, "name": "example.echo",' +
    ' "input_schema": {"type":"string"}, "description": "Echoes a value." }';
  const parsed = Descriptor.parse(shuffled);
  assert.equal(parsed.json(), Descriptor.create(echoConfig).json());
  assert.ok(parsed.digest().equals(Descriptor.create(echoConfig).digest()));
});

test('decoding rejects unknown and missing members', () => {
  const wire = JSON.parse(Descriptor.create(echoConfig).json()) as Record<string, unknown>;
  assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, extra: 1 })), invalidDescriptor);
  for (const member of ['name', 'description', 'input_schema', 'output_schema', 'signal_schema']) {
    const partial = { ...wire };
    delete partial[member];
    assert.throws(() => Descriptor.parse(JSON.stringify(partial)), invalidDescriptor, member);
  }
  assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, signal_schema: null })), invalidDescriptor);
  assert.throws(() => Descriptor.parse('[]'), invalidDescriptor);
  assert.throws(() => Descriptor.parse('{'), invalidDescriptor);
});

test('decoding reports an invalid embedded schema as invalid_descriptor with its path', () => {
  const wire = JSON.parse(Descriptor.create(echoConfig).json()) as Record<string, unknown>;
  assert.throws(
    () => Descriptor.parse(JSON.stringify({ ...wire, input_schema: { type: 'strng' } })),
    (error: unknown) => invalidDescriptor(error) && (error as Error).message.startsWith('/input_schema '),
  );
  assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, output_schema: 7 })), invalidDescriptor);
});

test('decoding validates the name and description', () => {
  const wire = JSON.parse(Descriptor.create(echoConfig).json()) as Record<string, unknown>;
  for (const name of ['', 'Example', '1example', 'example echo', 'a'.repeat(129), 7]) {
    assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, name })), invalidDescriptor, String(name));
  }
  for (const description of ['', ' padded', 'padded\n', 'x'.repeat(4097), null]) {
    assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, description })), invalidDescriptor);
  }
  Descriptor.parse(JSON.stringify({ ...wire, description: 'x'.repeat(4096) }));
  // The bound is in UTF-8 bytes: 2049 two-byte characters are 4098 bytes (but only 2049 UTF-16 units).
  assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, description: 'é'.repeat(2049) })), invalidDescriptor);
});

test('create rejects an invalid configuration with invalid_descriptor', () => {
  assert.throws(() => Descriptor.create({ ...echoConfig, name: 'Not.Qualified' }), invalidDescriptor);
  assert.throws(() => Descriptor.create({ ...echoConfig, description: '' }), invalidDescriptor);
  assert.throws(() => Descriptor.create({ ...echoConfig, description: 'trailing ' }), invalidDescriptor);
  assert.throws(() => Descriptor.create({ ...echoConfig, description: 'x'.repeat(4097) }), invalidDescriptor);
  const notASchema = { type: 'string' } as unknown as Schema;
  assert.throws(() => Descriptor.create({ ...echoConfig, inputSchema: notASchema }), invalidDescriptor);
  assert.throws(() => Descriptor.create({ ...echoConfig, outputSchema: notASchema }), invalidDescriptor);
  assert.throws(() => Descriptor.create({ ...echoConfig, signalSchema: notASchema }), invalidDescriptor);
  assert.throws(() => Descriptor.create(null as unknown as DescriptorConfig), invalidDescriptor);
});

test('validateInput, validateOutput and validateSignal use their own schemas', () => {
  const descriptor = Descriptor.create({
    name: 'example.typed',
    description: 'Typed example.',
    inputSchema: objectInput,
    outputSchema: stringSchema,
    signalSchema: Schema.of({ type: 'integer' }),
  });
  descriptor.validateInput(Payload.parse('{"value":"x"}'));
  descriptor.validateOutput(Payload.parse('"done"'));
  descriptor.validateSignal(Payload.parse('3'));
  assert.throws(() => descriptor.validateInput(Payload.parse('"x"')), failedValidation);
  assert.throws(() => descriptor.validateOutput(Payload.parse('{"value":"x"}')), failedValidation);
  assert.throws(() => descriptor.validateSignal(Payload.parse('"x"')), failedValidation);
  assert.throws(
    () => descriptor.validateInput(Payload.parse('{}')),
    (error: unknown) => error instanceof SchemaValidationError && error.message.startsWith('example.typed input '),
  );
});

test('without a signal schema every unaddressed signal is rejected', () => {
  const descriptor = Descriptor.create(echoConfig);
  for (const text of ['{}', '"x"', 'null']) {
    assert.throws(() => descriptor.validateSignal(Payload.parse(text)), failedValidation);
  }
});

test('encodeInput encodes and validates; decodeOutput validates and decodes', () => {
  const descriptor = Descriptor.create({ ...echoConfig, inputSchema: objectInput, outputSchema: objectInput });
  const input = descriptor.encodeInput({ value: 'hello' });
  assert.equal(input.json(), '{"value":"hello"}');
  assert.throws(() => descriptor.encodeInput({ value: 1 }), failedValidation);
  assert.throws(() => descriptor.encodeInput({ value: () => 1 }), code(ErrorCode.invalidPayload));

  const output = descriptor.decodeOutput<{ value: string }>(Payload.parse('{"value":"world"}'));
  assert.deepEqual(output, { value: 'world' });
  assert.throws(() => descriptor.decodeOutput(Payload.parse('{"value":"x","extra":true}')), failedValidation);
});

const approvalAnswer = Schema.of({
  type: 'object',
  properties: { approved: { type: 'boolean' } },
  required: ['approved'],
  additionalProperties: false,
});
const waitsConfig: DescriptorConfig = {
  ...echoConfig,
  waits: [
    { key: WaitKey.parse('second'), description: 'The second gate.', answerSchema: stringSchema },
    { key: WaitKey.parse('approval'), description: 'Approve the echo.', answerSchema: approvalAnswer },
  ],
};

test('declared waits are on the wire in key order, round trip, and change the digest', () => {
  const descriptor = Descriptor.create(waitsConfig);
  const expected =
    '{"description":"Echoes a value.","input_schema":{"type":"string"},"name":"example.echo",' +
    '"output_schema":{"type":"string"},"signal_schema":false,"waits":{' +
    '"approval":{"answer_schema":{"additionalProperties":false,"properties":{"approved":{"type":"boolean"}},"required":["approved"],"type":"object"},"description":"Approve the echo."},' +
    '"second":{"answer_schema":{"type":"string"},"description":"The second gate."}}}';
  assert.equal(descriptor.json(), expected);
  assert.equal(descriptor.digest().hex, createHash('sha256').update(expected).digest('hex'));
  assert.ok(!descriptor.digest().equals(Descriptor.create(echoConfig).digest()));
  assert.deepEqual(
    descriptor.waits().map((wait) => wait.key.toString()),
    ['approval', 'second'],
  );
  const approval = descriptor.wait(WaitKey.parse('approval'));
  assert.ok(approval !== undefined && Object.isFrozen(approval));
  assert.equal(approval.description, 'Approve the echo.');
  assert.ok(approval.answerSchema.equals(approvalAnswer));
  assert.equal(descriptor.wait(WaitKey.parse('other')), undefined);
  const again = Descriptor.parse(descriptor.json());
  assert.ok(again.equals(descriptor));
  assert.ok(again.digest().equals(descriptor.digest()));
  // Each declared member is covered by the digest.
  const variants = [
    { ...waitsConfig, waits: [{ key: WaitKey.parse('approval'), description: 'Approve the echo.', answerSchema: approvalAnswer }] },
    { ...waitsConfig, waits: [{ key: WaitKey.parse('approval'), description: 'Approve it.', answerSchema: approvalAnswer }, waitsConfig.waits![0]!] },
    { ...waitsConfig, waits: [{ key: WaitKey.parse('approval'), description: 'Approve the echo.', answerSchema: stringSchema }, waitsConfig.waits![0]!] },
  ];
  for (const variant of variants) assert.ok(!Descriptor.create(variant).digest().equals(descriptor.digest()));
  // An empty declaration list is no declaration: the bytes of a descriptor without waits.
  assert.equal(Descriptor.create({ ...echoConfig, waits: [] }).json(), Descriptor.create(echoConfig).json());
});

test('wait declarations are validated when created and decoded', () => {
  const wait = { key: WaitKey.parse('approval'), description: 'Approve.', answerSchema: approvalAnswer };
  assert.throws(() => Descriptor.create({ ...echoConfig, waits: [wait, { ...wait, description: 'Again.' }] }), invalidDescriptor);
  assert.throws(() => Descriptor.create({ ...echoConfig, waits: [{ ...wait, key: 'approval' as unknown as WaitKey }] }), invalidDescriptor);
  assert.throws(() => Descriptor.create({ ...echoConfig, waits: [{ ...wait, description: ' padded' }] }), invalidDescriptor);
  assert.throws(() => Descriptor.create({ ...echoConfig, waits: [{ ...wait, description: 'x'.repeat(4097) }] }), invalidDescriptor);
  assert.throws(() => Descriptor.create({ ...echoConfig, waits: [{ ...wait, answerSchema: {} as Schema }] }), invalidDescriptor);
  assert.throws(() => Descriptor.create({ ...echoConfig, waits: {} as never }), invalidDescriptor);

  const wire = JSON.parse(Descriptor.create(waitsConfig).json()) as Record<string, unknown>;
  const entry = { answer_schema: true, description: 'Answer.' };
  assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, waits: {} })), invalidDescriptor);
  assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, waits: [] })), invalidDescriptor);
  assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, waits: { 'not a key': entry } })), invalidDescriptor);
  assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, waits: { k: { ...entry, extra: 1 } } })), invalidDescriptor);
  assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, waits: { k: { description: 'Answer.' } } })), invalidDescriptor);
  assert.throws(() => Descriptor.parse(JSON.stringify({ ...wire, waits: { k: { ...entry, description: '' } } })), invalidDescriptor);
  assert.throws(
    () => Descriptor.parse(JSON.stringify({ ...wire, waits: { k: { ...entry, answer_schema: { type: 'strng' } } } })),
    (error: unknown) => invalidDescriptor(error) && (error as Error).message.startsWith('/waits/k/answer_schema '),
  );
  // `__proto__` is a valid WaitKey and stays an ordinary member.
  const proto = Descriptor.parse(JSON.stringify({ ...wire, waits: { placeholder: entry } }).replace('"placeholder"', '"__proto__"'));
  assert.equal(proto.wait(WaitKey.parse('__proto__'))?.description, 'Answer.');
  assert.ok(Descriptor.parse(proto.json()).equals(proto));
});
