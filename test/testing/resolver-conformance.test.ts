import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CallbackPanicError } from '../../src/kernel/callback-panic-error.js';
import type { Definition, DeploymentResolver } from '../../src/kernel/definition.js';
import { Deployment, DeploymentRef, MapDeploymentResolver } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { ConformanceFailure } from '../../src/testing/committer-conformance.js';
import {
  counterDefinition,
  echoDefinition,
  echoDispatcher,
  waitDefinition,
} from '../../src/testing/example-definitions.js';
import {
  deploymentResolverConformanceCases,
  runDeploymentResolverCase,
  runDeploymentResolverConformance,
  type DeploymentResolverConformanceConfig,
} from '../../src/testing/resolver-conformance.js';

const echo = Deployment.create({
  definition: echoDefinition,
  dispatcher: echoDispatcher,
  implementationDigest: Digest.of('echo implementation'),
  configurationDigest: Digest.of('echo configuration'),
});
const counter = Deployment.create({
  definition: counterDefinition,
  implementationDigest: Digest.of('counter implementation'),
  configurationDigest: Digest.of('counter configuration'),
});
/** Registered nowhere: the same echo behaviour under another configuration (a name collision). */
const echoElsewhere = Deployment.create({
  definition: echoDefinition,
  dispatcher: echoDispatcher,
  implementationDigest: Digest.of('echo implementation'),
  configurationDigest: Digest.of('echo configuration, staging'),
});
const wait = Deployment.create({
  definition: waitDefinition,
  implementationDigest: Digest.of('wait implementation'),
  configurationDigest: Digest.of('wait configuration'),
});

function config(resolver: DeploymentResolver): DeploymentResolverConformanceConfig {
  return { resolver, resolvable: [echo, counter], unresolvable: [wait.ref] };
}

runDeploymentResolverConformance('MapDeploymentResolver', config(new MapDeploymentResolver([echo, counter])));

async function failures(conformanceConfig: DeploymentResolverConformanceConfig): Promise<Map<string, unknown>> {
  const failed = new Map<string, unknown>();
  for (const conformanceCase of deploymentResolverConformanceCases(conformanceConfig)) {
    try {
      await runDeploymentResolverCase(conformanceCase);
    } catch (error) {
      failed.set(conformanceCase.name, error);
    }
  }
  return failed;
}

function messages(failed: Map<string, unknown>): string {
  return JSON.stringify([...failed].map(([name, error]) => [name, error instanceof Error ? error.message : String(error)]));
}

async function assertDetected(resolver: DeploymentResolver, caseName: string, message: RegExp): Promise<void> {
  const failed = await failures(config(resolver));
  const error = failed.get(caseName);
  assert.ok(error instanceof ConformanceFailure, `case "${caseName}" should fail; failures: ${messages(failed)}`);
  assert.match(error.message, message);
}

const unavailable = (ref: DeploymentRef): KernelError =>
  new KernelError(ErrorCode.deploymentUnavailable, `deployment unavailable: ${ref.toString()}`);

test('self-test: the reference MapDeploymentResolver fails no case', async () => {
  const cases = deploymentResolverConformanceCases(config(new MapDeploymentResolver([echo, counter])));
  assert.deepEqual(
    cases.map((conformanceCase) => conformanceCase.name),
    [
      'exact references resolve to their binding',
      'a name collision does not resolve',
      'unknown references are rejected',
      'repeated and interleaved lookups agree',
      'concurrent lookups agree',
    ],
  );
  assert.equal(messages(await failures(config(new MapDeploymentResolver([echo, counter])))), '[]');
});

test('self-test: a resolver that falls back by name', async () => {
  const known = [echo, counter];
  const byName: DeploymentResolver = {
    resolve(ref) {
      const found = known.find((deployment) => deployment.ref.equals(ref)) ?? known.find((deployment) => deployment.ref.name === ref.name);
      if (found === undefined) throw unavailable(ref);
      return found;
    },
  };
  await assertDetected(byName, 'a name collision does not resolve', /a name collision resolved: example\.echo\+sha256:[0-9a-f]{64} .*must never fall back by name/);
  // The configured collision is rejected too once it is listed as unresolvable.
  const failed = await failures({ ...config(byName), unresolvable: [echoElsewhere.ref] });
  assert.match(
    (failed.get('unknown references are rejected') as Error).message,
    /unknown reference example\.echo\+sha256:[0-9a-f]{64} resolved to example\.echo\+/,
  );
});

test('self-test: a resolver that returns a different deployment', async () => {
  const inner = new MapDeploymentResolver([echo, counter]);
  const swapped: DeploymentResolver = {
    resolve: (ref) => (ref.equals(counter.ref) ? echo : inner.resolve(ref)),
  };
  await assertDetected(swapped, 'exact references resolve to their binding', /example\.counter\+sha256:[0-9a-f]{64} resolved to a different deployment, example\.echo\+/);
  await assertDetected(swapped, 'repeated and interleaved lookups agree', /lookup round 1: example\.counter\+.* resolved to a different deployment/);
  await assertDetected(swapped, 'concurrent lookups agree', /concurrent lookup \d+: example\.counter\+.* resolved to a different deployment/);
});

test('self-test: a resolver whose later answers disagree', async () => {
  const inner = new MapDeploymentResolver([echo, counter]);
  let lookups = 0;
  const drifting: DeploymentResolver = {
    resolve(ref) {
      lookups += 1;
      if (lookups > 3 && ref.equals(echo.ref)) throw unavailable(ref);
      return inner.resolve(ref);
    },
  };
  const cases = deploymentResolverConformanceCases(config(drifting));
  const repeated = cases.find((conformanceCase) => conformanceCase.name === 'repeated and interleaved lookups agree');
  await assert.rejects(
    runDeploymentResolverCase(repeated!),
    (error: unknown) => error instanceof ConformanceFailure && /lookup round 2: exact reference example\.echo\+.* was rejected/.test(error.message),
  );
});

test('self-test: a resolver that rebinds the ref to another definition', async () => {
  // Same ref, another Definition object: the binding a snapshot names is not what runs.
  const impostor: Definition = {
    descriptor: () => echoDefinition.descriptor(),
    childDeployments: () => [],
    start: (input) => echoDefinition.start(input),
    restore: (state, signal) => echoDefinition.restore(state, signal),
  };
  const inner = new MapDeploymentResolver([echo, counter]);
  const rebinding: DeploymentResolver = {
    resolve(ref) {
      const found = inner.resolve(ref);
      if (!ref.equals(echo.ref)) return found;
      return Deployment.create({
        definition: impostor,
        dispatcher: echoDispatcher,
        implementationDigest: echo.ref.implementationDigest,
        configurationDigest: echo.ref.configurationDigest,
      });
    },
  };
  await assertDetected(rebinding, 'exact references resolve to their binding', /resolved to a binding with another definition or dispatcher/);
});

test('self-test: a resolver that throws is a panic', async () => {
  const cause = new Error('registry offline');
  const throwing: DeploymentResolver = {
    resolve() {
      throw cause;
    },
  };
  const failed = await failures(config(throwing));
  assert.equal(failed.size, 5, messages(failed));
  for (const [name, error] of failed) {
    assert.ok(CallbackPanicError.is(error, 'DeploymentResolver.resolve'), `${name}: ${String(error)}`);
    assert.equal(error.cause, cause);
    assert.equal(error.code, 'callback_panic');
    assert.match(error.message, /^DeploymentResolver\.resolve panicked: Error: registry offline$/);
  }
  // A KernelError with another code is not the contract's rejection either.
  const wrongCode: DeploymentResolver = {
    resolve(ref) {
      throw new KernelError(ErrorCode.invalidDeploymentRef, `unknown ${ref.toString()}`);
    },
  };
  const unknown = deploymentResolverConformanceCases(config(wrongCode)).find(
    (conformanceCase) => conformanceCase.name === 'unknown references are rejected',
  );
  await assert.rejects(runDeploymentResolverCase(unknown!), (error: unknown) => CallbackPanicError.is(error, 'DeploymentResolver.resolve'));
  // A thrown non-Error value is a panic as well.
  const stringly: DeploymentResolver = {
    resolve() {
      throw 'nope';
    },
  };
  const [exact] = deploymentResolverConformanceCases(config(stringly));
  await assert.rejects(runDeploymentResolverCase(exact!), (error: unknown) => CallbackPanicError.is(error) && error.cause === 'nope');
});

test('self-test: a resolver returning something that is not a Deployment', async () => {
  const odd = { resolve: () => ({ ref: echo.ref }) } as unknown as DeploymentResolver;
  await assertDetected(odd, 'exact references resolve to their binding', /returned an object, not a Deployment/);
});

test('self-test: config validation rejects invalid configurations before calling the resolver', () => {
  let called = false;
  const spy: DeploymentResolver = {
    resolve(ref) {
      called = true;
      throw unavailable(ref);
    },
  };
  const base = config(spy);
  const invalid: Array<[string, unknown, RegExp]> = [
    ['no config', null, /expected a config object/],
    ['no resolver', { ...base, resolver: undefined }, /resolver must implement resolve/],
    ['a resolver without resolve', { ...base, resolver: {} }, /resolver must implement resolve/],
    ['no resolvable deployments', { ...base, resolvable: [] }, /resolvable must list at least one Deployment/],
    ['a resolvable that is not a Deployment', { ...base, resolvable: [echo, echo.ref] }, /resolvable\[1\] is not a Deployment/],
    ['a duplicate resolvable', { ...base, resolvable: [echo, counter, echo] }, /resolvable\[2\] repeats the ref of resolvable\[0\]/],
    ['unresolvable not an array', { ...base, unresolvable: undefined }, /unresolvable must be an array/],
    ['an unresolvable that is not a ref', { ...base, unresolvable: [wait] }, /unresolvable\[0\] is not a DeploymentRef/],
    ['a duplicate unresolvable', { ...base, unresolvable: [wait.ref, wait.ref] }, /unresolvable\[1\] repeats unresolvable\[0\]/],
    ['overlapping lists', { ...base, unresolvable: [wait.ref, counter.ref] }, /unresolvable\[1\] is the ref of resolvable\[1\].*must be disjoint/],
  ];
  for (const [what, invalidConfig, message] of invalid) {
    assert.throws(
      () => deploymentResolverConformanceCases(invalidConfig as DeploymentResolverConformanceConfig),
      (error: unknown) =>
        error instanceof ConformanceFailure &&
        error.message.startsWith('invalid deployment resolver conformance config: ') &&
        message.test(error.message),
      what,
    );
  }
  assert.throws(() => runDeploymentResolverConformance('never registered', { ...base, resolvable: [] }), ConformanceFailure);
  assert.equal(called, false);
});

test('self-test: an empty unresolvable list still probes an unknown reference', async () => {
  const everything: DeploymentResolver = { resolve: () => echo };
  const failed = await failures({ resolver: everything, resolvable: [echo], unresolvable: [] });
  assert.match(
    (failed.get('unknown references are rejected') as Error).message,
    /unknown reference scope\.conformance\.unknown\+sha256:[0-9a-f]{64} resolved to example\.echo\+/,
  );
});
