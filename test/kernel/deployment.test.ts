import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import type { Definition, Dispatcher, Execution } from '../../src/kernel/definition.js';
import { Deployment, DeploymentRef, MapDeploymentResolver, type DeploymentConfig } from '../../src/kernel/deployment.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { Digest } from '../../src/kernel/digest.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { Schema } from '../../src/kernel/schema.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const invalidRef = code(ErrorCode.invalidDeploymentRef);
const invalidDeployment = code(ErrorCode.invalidDeployment);
const unavailable = code(ErrorCode.deploymentUnavailable);

const emptyBindings = 'sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945';

/** A fixed ref: each member digest is sha256 of a short ASCII word (see the vector test). */
function fixedRef(): DeploymentRef {
  return DeploymentRef.create({
    name: 'example.echo',
    contractDigest: Digest.of('contract'),
    implementationDigest: Digest.of('implementation'),
    configurationDigest: Digest.of('configuration'),
    bindingsDigest: DeploymentRef.bindingsDigestOf([]),
  });
}

const fixedRefJson =
  '{"bindings_digest":"sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",' +
  '"configuration_digest":"sha256:b7d64a9221007dfd5390f7df6cd5b8f3ea4f82faa1237141e35ebf161f5511a1",' +
  '"contract_digest":"sha256:cc8321d6375c494d043fdd0260f21bc0ec51dacc9f6abb7f909cdcd3041b78bf",' +
  '"digest":"sha256:547480f553b55843fb54f6228d7156e569af49f8c62b49dbf5b56a75c941da31",' +
  '"implementation_digest":"sha256:da31012c40330e7e21538e7dd57503b16e8a0839159e96137090cccc9910b171",' +
  '"name":"example.echo"}';

class CountingDefinition implements Definition {
  descriptorCalls = 0;
  childCalls = 0;

  constructor(
    readonly contract: Descriptor,
    readonly children: readonly Deployment[] = [],
  ) {}

  descriptor(): Descriptor {
    this.descriptorCalls += 1;
    return this.contract;
  }

  childDeployments(): readonly Deployment[] {
    this.childCalls += 1;
    return this.children;
  }

  start(): Execution {
    throw new Error('not used');
  }

  restore(): Execution {
    throw new Error('not used');
  }
}

const echoDescriptor = Descriptor.create({
  name: 'example.echo',
  description: 'Echoes a value.',
  inputSchema: Schema.of({ type: 'string' }),
  outputSchema: Schema.of({ type: 'string' }),
});

const childDescriptor = Descriptor.create({
  name: 'example.child',
  description: 'A child.',
  inputSchema: Schema.of(true),
  outputSchema: Schema.of(true),
});

const dispatcher: Dispatcher = {
  dispatch: () => Promise.reject(new Error('not used')),
  replayPolicy: () => 'never',
};

function deploy(definition: Definition, configuration = 'configuration', extra: Partial<DeploymentConfig> = {}): Deployment {
  return Deployment.create({
    definition,
    implementationDigest: Digest.of('implementation'),
    configurationDigest: Digest.of(configuration),
    ...extra,
  });
}

test('a DeploymentRef digest is sha256 of the canonical five members (fixed vector)', () => {
  const ref = fixedRef();
  const members =
    '{"bindings_digest":"sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",' +
    '"configuration_digest":"sha256:b7d64a9221007dfd5390f7df6cd5b8f3ea4f82faa1237141e35ebf161f5511a1",' +
    '"contract_digest":"sha256:cc8321d6375c494d043fdd0260f21bc0ec51dacc9f6abb7f909cdcd3041b78bf",' +
    '"implementation_digest":"sha256:da31012c40330e7e21538e7dd57503b16e8a0839159e96137090cccc9910b171",' +
    '"name":"example.echo"}';
  // Computed once with `printf '%s' "$members" | sha256sum`; the member digests are
  // `printf contract | sha256sum` etc., and the bindings digest is `printf '[]' | sha256sum`.
  assert.equal(ref.digest.toString(), 'sha256:547480f553b55843fb54f6228d7156e569af49f8c62b49dbf5b56a75c941da31');
  assert.equal(ref.digest.hex, createHash('sha256').update(members).digest('hex'));
  assert.equal(ref.json(), fixedRefJson);
  assert.equal(ref.toString(), 'example.echo+sha256:547480f553b55843fb54f6228d7156e569af49f8c62b49dbf5b56a75c941da31');
  assert.equal(ref.bindingsDigest.toString(), emptyBindings);
  assert.ok(Object.isFrozen(ref));
});

test('the bindings digest hashes the sorted, deduplicated child ref digests (fixed vector)', () => {
  const a = fixedRef();
  const b = DeploymentRef.create({
    name: 'example.child',
    contractDigest: Digest.of('c2'),
    implementationDigest: Digest.of('i2'),
    configurationDigest: Digest.of('g2'),
    bindingsDigest: DeploymentRef.bindingsDigestOf([]),
  });
  assert.equal(b.digest.toString(), 'sha256:4ff4cdc000cd0bdc8865fddc5b2f738be6e10264fa652ab69e0c543ccc3ef1c5');
  // sha256 of '["sha256:4ff4…c1c5","sha256:5474…da31"]' (ascending), computed once with sha256sum.
  const expected = 'sha256:438a2b85673282dc295dcd2811a0d57aded44c91827a6131b3ebb89d94bc57b6';
  assert.equal(DeploymentRef.bindingsDigestOf([a, b]).toString(), expected);
  assert.equal(DeploymentRef.bindingsDigestOf([b, a]).toString(), expected);
  assert.equal(DeploymentRef.bindingsDigestOf([a, b, a, b]).toString(), expected);
  assert.equal(
    DeploymentRef.bindingsDigestOf([a, b]).hex,
    createHash('sha256').update(JSON.stringify([b.digest.toString(), a.digest.toString()])).digest('hex'),
  );
  assert.equal(DeploymentRef.bindingsDigestOf([]).toString(), emptyBindings);
  assert.throws(() => DeploymentRef.bindingsDigestOf(['x' as unknown as DeploymentRef]), invalidRef);
});

test('a DeploymentRef round trips and decodes from any member order', () => {
  const ref = fixedRef();
  const parsed = DeploymentRef.parse(ref.json());
  assert.ok(parsed.equals(ref));
  assert.equal(parsed.json(), ref.json());
  const shuffled = JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(fixedRefJson) as object).reverse()));
  assert.ok(DeploymentRef.parse(shuffled).equals(ref));
});

test('decoding re-verifies the digest', () => {
  const wire = JSON.parse(fixedRefJson) as Record<string, string>;
  const other = Digest.of('something else').toString();
  assert.throws(() => DeploymentRef.parse(JSON.stringify({ ...wire, digest: other })), invalidRef);
  // Changing any identity member without recomputing the digest is caught.
  for (const member of ['contract_digest', 'implementation_digest', 'configuration_digest', 'bindings_digest']) {
    assert.throws(() => DeploymentRef.parse(JSON.stringify({ ...wire, [member]: other })), invalidRef, member);
  }
  assert.throws(() => DeploymentRef.parse(JSON.stringify({ ...wire, name: 'example.other' })), invalidRef);
});

test('decoding rejects unknown, missing and malformed members', () => {
  const wire = JSON.parse(fixedRefJson) as Record<string, unknown>;
  assert.throws(() => DeploymentRef.parse(JSON.stringify({ ...wire, extra: true })), invalidRef);
  for (const member of Object.keys(wire)) {
    const partial = { ...wire };
    delete partial[member];
    assert.throws(() => DeploymentRef.parse(JSON.stringify(partial)), invalidRef, member);
  }
  assert.throws(
    () => DeploymentRef.parse(JSON.stringify({ ...wire, digest: String(wire.digest).toUpperCase() })),
    invalidRef,
  );
  assert.throws(() => DeploymentRef.parse(JSON.stringify({ ...wire, contract_digest: 'sha256:abc' })), invalidRef);
  assert.throws(() => DeploymentRef.parse(JSON.stringify({ ...wire, name: 'Bad Name' })), invalidRef);
  assert.throws(() => DeploymentRef.parse(JSON.stringify({ ...wire, name: null })), invalidRef);
  assert.throws(() => DeploymentRef.parse('"example.echo+sha256:00"'), invalidRef);
});

test('DeploymentRef.create validates its members', () => {
  const parts = {
    name: 'example.echo',
    contractDigest: Digest.of('contract'),
    implementationDigest: Digest.of('implementation'),
    configurationDigest: Digest.of('configuration'),
    bindingsDigest: DeploymentRef.bindingsDigestOf([]),
  };
  assert.throws(() => DeploymentRef.create({ ...parts, name: 'Example' }), invalidRef);
  assert.throws(
    () => DeploymentRef.create({ ...parts, contractDigest: 'sha256:00' as unknown as Digest }),
    invalidRef,
  );
});

test('Deployment.create asks the definition once, freezes the binding and derives the ref', () => {
  const definition = new CountingDefinition(echoDescriptor);
  const deployment = deploy(definition, 'configuration', { dispatcher });
  assert.equal(definition.descriptorCalls, 1);
  assert.equal(definition.childCalls, 1);
  assert.equal(deployment.definition, definition);
  assert.equal(deployment.dispatcher, dispatcher);
  assert.equal(deployment.descriptor, echoDescriptor);
  assert.ok(Object.isFrozen(deployment));
  deployment.descriptor;
  deployment.ref;
  assert.equal(definition.descriptorCalls, 1, 'accessors do not call the definition again');

  const ref = deployment.ref;
  assert.equal(ref.name, 'example.echo');
  assert.ok(ref.contractDigest.equals(echoDescriptor.digest()));
  assert.ok(ref.implementationDigest.equals(Digest.of('implementation')));
  assert.ok(ref.configurationDigest.equals(Digest.of('configuration')));
  assert.equal(ref.bindingsDigest.toString(), emptyBindings);
  assert.deepEqual(deployment.childDeployments(), []);
});

test('a deployment without a dispatcher has none', () => {
  assert.equal(deploy(new CountingDefinition(echoDescriptor)).dispatcher, undefined);
});

test('child bindings are folded into the ref; different children give a different ref', () => {
  const childA = deploy(new CountingDefinition(childDescriptor), 'child-a');
  const childB = deploy(new CountingDefinition(childDescriptor), 'child-b');
  const leaf = deploy(new CountingDefinition(echoDescriptor));
  const withA = deploy(new CountingDefinition(echoDescriptor, [childA]));
  const withB = deploy(new CountingDefinition(echoDescriptor, [childB]));
  const withBoth = deploy(new CountingDefinition(echoDescriptor, [childB, childA, childB]));

  assert.ok(withA.ref.bindingsDigest.equals(DeploymentRef.bindingsDigestOf([childA.ref])));
  assert.ok(withBoth.ref.bindingsDigest.equals(DeploymentRef.bindingsDigestOf([childA.ref, childB.ref])));
  assert.ok(!withA.ref.equals(leaf.ref));
  assert.ok(!withA.ref.equals(withB.ref));
  assert.ok(!withA.ref.equals(withBoth.ref));

  // Distinct children, in the order first reported; a copy is returned.
  const children = withBoth.childDeployments();
  assert.deepEqual(children, [childB, childA]);
  children.pop();
  assert.equal(withBoth.childDeployments().length, 2);
  assert.equal(withBoth.childDeployment(childA.ref), childA);
  assert.equal(withBoth.childDeployment(leaf.ref), undefined);
});

test('a name collision (same name and implementation, different configuration) is a different ref', () => {
  const definition = new CountingDefinition(echoDescriptor);
  const first = deploy(definition, 'configuration-1');
  const second = deploy(definition, 'configuration-2');
  assert.equal(first.ref.name, second.ref.name);
  assert.ok(first.ref.implementationDigest.equals(second.ref.implementationDigest));
  assert.ok(!first.ref.digest.equals(second.ref.digest));
  assert.ok(!first.ref.equals(second.ref));
  assert.notEqual(first.ref.toString(), second.ref.toString());
  const resolver = new MapDeploymentResolver([first]);
  assert.equal(resolver.resolve(first.ref), first);
  assert.throws(() => resolver.resolve(second.ref), unavailable);
});

test('Deployment.create rejects an invalid configuration with invalid_deployment', () => {
  const definition = new CountingDefinition(echoDescriptor);
  const base: DeploymentConfig = {
    definition,
    implementationDigest: Digest.of('implementation'),
    configurationDigest: Digest.of('configuration'),
  };
  assert.throws(() => Deployment.create({ ...base, implementationDigest: 'sha256:00' as unknown as Digest }), invalidDeployment);
  assert.throws(() => Deployment.create({ ...base, configurationDigest: undefined as unknown as Digest }), invalidDeployment);
  assert.throws(() => Deployment.create({ ...base, definition: {} as Definition }), invalidDeployment);
  assert.throws(() => Deployment.create({ ...base, definition: null as unknown as Definition }), invalidDeployment);
  assert.throws(
    () => Deployment.create({ ...base, dispatcher: { dispatch: dispatcher.dispatch } as unknown as Dispatcher }),
    invalidDeployment,
  );
  assert.throws(() => Deployment.create(undefined as unknown as DeploymentConfig), invalidDeployment);

  const wrongDescriptor = new CountingDefinition({ name: 'example.echo' } as unknown as Descriptor);
  assert.throws(() => Deployment.create({ ...base, definition: wrongDescriptor }), invalidDeployment);
  const wrongChildren = new CountingDefinition(echoDescriptor, [fixedRef() as unknown as Deployment]);
  assert.throws(() => Deployment.create({ ...base, definition: wrongChildren }), invalidDeployment);
  const notArray = new CountingDefinition(echoDescriptor, null as unknown as Deployment[]);
  assert.throws(() => Deployment.create({ ...base, definition: notArray }), invalidDeployment);
});

test('errors thrown by the definition itself propagate unchanged', () => {
  const failure = new Error('descriptor unavailable');
  const definition = new CountingDefinition(echoDescriptor);
  definition.descriptor = () => {
    throw failure;
  };
  assert.throws(() => deploy(definition), (error: unknown) => error === failure);
});

test('MapDeploymentResolver resolves exact refs only', () => {
  const echo = deploy(new CountingDefinition(echoDescriptor));
  const child = deploy(new CountingDefinition(childDescriptor));
  const resolver = new MapDeploymentResolver([echo, child, echo]);
  assert.equal(resolver.size, 2);
  assert.equal(resolver.resolve(echo.ref), echo);
  assert.equal(resolver.resolve(child.ref), child);
  // A ref decoded from storage is a different object with the same value.
  assert.equal(resolver.resolve(DeploymentRef.parse(echo.ref.json())), echo);
  assert.deepEqual(
    resolver.refs().map((ref) => ref.toString()),
    [echo.ref.toString(), child.ref.toString()],
  );

  assert.throws(() => resolver.resolve(fixedRef()), unavailable);
  assert.throws(() => new MapDeploymentResolver([]).resolve(echo.ref), unavailable);
  assert.throws(() => resolver.resolve('example.echo' as unknown as DeploymentRef), unavailable);
});

test('MapDeploymentResolver rejects two different deployments under one ref', () => {
  const definition = new CountingDefinition(echoDescriptor);
  const first = deploy(definition);
  const twin = deploy(definition);
  assert.ok(first.ref.equals(twin.ref));
  assert.throws(() => new MapDeploymentResolver([first, twin]), invalidDeployment);
  assert.throws(() => new MapDeploymentResolver([{} as Deployment]), invalidDeployment);
});
