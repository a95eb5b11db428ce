import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  parseProcessDispatcherConfig,
  processDispatcherConfigJson,
  processDispatcherFingerprint,
} from '../../src/transport/process-dispatcher-config.js';

const base = { command: '/usr/bin/worker', args: ['--serve'], env: { B: '2', A: '1' }, replayPolicy: 'never', requestTimeoutMs: 5_000 };

test('a config is validated, copied and frozen', () => {
  const input = { ...base, args: [...base.args] };
  const config = parseProcessDispatcherConfig(input);
  input.args.push('--mutated');
  assert.deepEqual(config.args, ['--serve']);
  assert.ok(Object.isFrozen(config) && Object.isFrozen(config.args) && Object.isFrozen(config.env));
  assert.equal(config.key, undefined);
});

test('invalid configs are refused with invalid_process_dispatcher_config, never repaired', () => {
  const invalid = [
    null,
    { ...base, command: '' },
    { ...base, args: 'x' },
    { ...base, args: [1] },
    { ...base, env: { 'A=B': 'x' } },
    { ...base, env: { A: 1 } },
    { ...base, key: '' },
    { ...base, replayPolicy: 'always' },
    { ...base, requestTimeoutMs: 0 },
    { ...base, requestTimeoutMs: 1.5 },
    { ...base, extra: true },
    { command: 'x', replayPolicy: 'never', requestTimeoutMs: 1 },
  ];
  for (const value of invalid) {
    assert.throws(
      () => parseProcessDispatcherConfig(value),
      (error: Error & { code?: string }) => error.code === 'invalid_process_dispatcher_config',
      JSON.stringify(value),
    );
  }
});

test('the fingerprint is the digest of the canonical JSON: member order does not matter, every value does', () => {
  const config = parseProcessDispatcherConfig(base);
  assert.equal(
    processDispatcherConfigJson(config),
    '{"args":["--serve"],"command":"/usr/bin/worker","env":{"A":"1","B":"2"},"replay_policy":"never","request_timeout_ms":5000}',
  );
  const reordered = parseProcessDispatcherConfig({ requestTimeoutMs: 5_000, replayPolicy: 'never', env: { A: '1', B: '2' }, args: ['--serve'], command: '/usr/bin/worker' });
  assert.ok(processDispatcherFingerprint(config).equals(processDispatcherFingerprint(reordered)));
  const variants = [{ args: [] }, { env: { A: '1' } }, { key: 'w' }, { replayPolicy: 'same_identity' }, { requestTimeoutMs: 5_001 }];
  const seen = new Set([processDispatcherFingerprint(config).toString()]);
  for (const variant of variants) seen.add(processDispatcherFingerprint(parseProcessDispatcherConfig({ ...base, ...variant })).toString());
  assert.equal(seen.size, variants.length + 1);
});
