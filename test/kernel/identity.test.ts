import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeDigest, Digest } from '../../src/kernel/digest.js';
import { KernelError } from '../../src/kernel/errors.js';
import {
  ChildKey,
  deriveIdentityText,
  EffectAttemptId,
  EffectId,
  isQualifiedName,
  parseQualifiedName,
  ProcessId,
  SignalId,
  TreeIncarnationId,
  WaitId,
  WaitKey,
} from '../../src/kernel/identity.js';

const hasCode = (code: string) => (error: unknown) => error instanceof KernelError && error.code === code;

test('generic identities accept the full alphabet up to 256 bytes', () => {
  for (const parse of [ProcessId.parse, EffectId.parse, WaitId.parse, SignalId.parse, ChildKey.parse, WaitKey.parse]) {
    assert.equal(parse('a').toString(), 'a');
    assert.equal(parse('Az09-_.:').toString(), 'Az09-_.:');
    assert.equal(parse('x'.repeat(256)).toString(), 'x'.repeat(256));
  }
});

test('generic identities reject empty, oversize, non-ASCII and punctuation outside the alphabet', () => {
  const rejected: unknown[] = ['', 'x'.repeat(257), 'é', 'a b', 'a/b', 'a\u0000b', 'a\nb', 'a+b', undefined, 42, null];
  for (const parse of [ProcessId.parse, EffectId.parse, WaitId.parse, SignalId.parse, ChildKey.parse, WaitKey.parse]) {
    for (const text of rejected) assert.throws(() => parse(text), hasCode('invalid_identity'), String(text));
  }
});

test('identity kinds are distinct types that never compare equal', () => {
  const process = ProcessId.parse('same');
  const key = ChildKey.parse('same');
  assert.equal(process.equals(ProcessId.parse('same')), true);
  assert.equal(process.equals(key as unknown as ProcessId), false);
  assert.ok(Object.isFrozen(process));
});

test('digests are sha256: plus 64 lowercase hex digits', () => {
  const digest = computeDigest('abc');
  assert.equal(digest.toString(), 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(Digest.parse(digest.toString()).equals(digest), true);
  assert.equal(computeDigest(new TextEncoder().encode('abc')).equals(digest), true);
  for (const bad of [
    'sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD',
    'sha256:ba7816bf',
    'sha1:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad0',
    '',
    7,
  ]) {
    assert.throws(() => Digest.parse(bad), hasCode('invalid_digest'), String(bad));
  }
});

test('incarnation and attempt ids are exact-width lowercase hex', () => {
  const incarnation = TreeIncarnationId.random();
  assert.match(incarnation.toString(), /^incarnation:[0-9a-f]{32}$/);
  assert.notEqual(incarnation.toString(), TreeIncarnationId.random().toString());
  assert.match(EffectAttemptId.random().toString(), /^attempt:[0-9a-f]{32}$/);
  assert.equal(TreeIncarnationId.parse(`incarnation:${'a'.repeat(32)}`).toString(), `incarnation:${'a'.repeat(32)}`);
  for (const bad of [`incarnation:${'A'.repeat(32)}`, `incarnation:${'a'.repeat(31)}`, `incarnation:${'a'.repeat(33)}`, `attempt:${'a'.repeat(32)}`]) {
    assert.throws(() => TreeIncarnationId.parse(bad), hasCode('invalid_tree_incarnation_id'), bad);
  }
  for (const bad of [`attempt:${'F'.repeat(32)}`, `attempt:${'f'.repeat(31)}`, `incarnation:${'a'.repeat(32)}`]) {
    assert.throws(() => EffectAttemptId.parse(bad), hasCode('invalid_effect_attempt_id'), bad);
  }
});

test('root process ids are process: plus 32 random hex digits', () => {
  const id = ProcessId.newRoot();
  assert.match(id.toString(), /^process:[0-9a-f]{32}$/);
  assert.notEqual(id.toString(), ProcessId.newRoot().toString());
});

// Vectors computed once with this module and cross-checked with
// `printf 'effect\x00process:0123…cdef\x001\x000' | sha256sum`.
test('derived identities match pinned vectors', () => {
  const root = ProcessId.parse('process:0123456789abcdef0123456789abcdef');
  const effect = EffectId.derive(root, 1n, 0);
  assert.equal(effect.toString(), 'effect:1e4f008522fba214c24ea90eb85058f441072c72047297dde9a0163ab3f0dbb5');
  assert.equal(
    EffectId.derive(root, 2n, 3).toString(),
    'effect:8f44d8ad2995422a684d27a45dcac4e2109c8d1376c40a66ea5c530f5926e488',
  );
  assert.equal(
    ProcessId.child(effect).toString(),
    'process:4b5e17bfa685530be5d2e02f7812a948adf1bcd811051f6410f2844c2134d898',
  );
  const wait = WaitId.derive(effect);
  assert.equal(wait.toString(), 'wait:e97c83be47d766bc9fc7e69e5680518e05b0055eb6eb8eef0c035780d893488e');
  assert.equal(
    SignalId.settlement(effect).toString(),
    'signal:engine:e65aba131c59c096fc3649ca09c99541ac8ecb2d5ab00667d7d1dd54e407e57c',
  );
  assert.equal(
    SignalId.waitOpened(wait).toString(),
    'signal:engine:73240a013fd5427984e084436579ae0d44ca101d55bd2f6252687f9810d41a53',
  );
  assert.equal(
    SignalId.childWaitSatisfied(wait).toString(),
    'signal:engine:bd0c9428146251b289f0d3b352dd95ae135b0ec2ff632412e6cbe2296540d0b5',
  );
  assert.equal(deriveIdentityText('x:', 'tag', []), `x:${computeDigest('tag').hex}`);
});

test('derivation separates parts with NUL so shifted boundaries differ', () => {
  assert.notEqual(deriveIdentityText('p:', 't', ['ab', 'c']), deriveIdentityText('p:', 't', ['a', 'bc']));
  assert.notEqual(deriveIdentityText('p:', 't', ['a']), deriveIdentityText('p:', 'ta', []));
});

test('effect ids need a 1-based step sequence and a uint32 batch index', () => {
  const root = ProcessId.parse('process:root');
  assert.throws(() => EffectId.derive(root, 0n, 0), hasCode('invalid_identity'));
  assert.throws(() => EffectId.derive(root, 1n, -1), hasCode('invalid_identity'));
  assert.throws(() => EffectId.derive(root, 1n, 2 ** 32), hasCode('invalid_identity'));
  assert.throws(() => EffectId.derive(root, 1n, 0.5), hasCode('invalid_identity'));
});

test('the signal:engine: namespace is reserved for Engine-minted deliveries', () => {
  const engine = SignalId.settlement(EffectId.parse('effect:x'));
  assert.equal(engine.engineOwned, true);
  assert.equal(SignalId.parse(engine.toString()).engineOwned, true);
  assert.throws(() => SignalId.parseExternal(engine.toString()), hasCode('invalid_identity'));
  assert.throws(() => SignalId.parseExternal('signal:engine:anything'), hasCode('invalid_identity'));
  assert.equal(SignalId.parseExternal('signal:engine').engineOwned, false);
  assert.equal(SignalId.parseExternal('signal:durable-input').toString(), 'signal:durable-input');
});

test('qualified names: 1-128 bytes, a lowercase letter then [a-z0-9._-]', () => {
  for (const good of ['a', 'example.echo', 'engine.limit.steps', 'a_b-c.9', `a${'b'.repeat(127)}`]) {
    assert.equal(isQualifiedName(good), true, good);
    assert.equal(parseQualifiedName(good), good);
  }
  for (const bad of ['', '9a', 'A', 'aB', '.a', 'a b', 'a:b', `a${'b'.repeat(128)}`, 'é', null]) {
    assert.equal(isQualifiedName(bad), false, String(bad));
    assert.throws(() => parseQualifiedName(bad), hasCode('invalid_qualified_name'));
  }
});
