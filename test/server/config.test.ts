import { getHeapStatistics } from 'node:v8';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TreeLimits } from '../../src/kernel/tree-limits.js';
import { ConfigError, defaultBodyLimit, loadConfig, maxBodyLimit, parseByteSize } from '../../src/server/config.js';

test('defaults: embedded mode on 127.0.0.1:3000 with demos, 1 MiB bodies and the documented limits', () => {
  const config = loadConfig({});
  assert.equal(config.mode, 'embedded');
  assert.equal(config.redisUrl, undefined);
  assert.equal(config.port, 3000);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.logLevel, 'info');
  assert.equal(config.keyPrefix, 'scope');
  assert.equal(config.demos, true);
  assert.equal(config.bodyLimit, defaultBodyLimit);
  assert.equal(defaultBodyLimit, 1024 * 1024);
  assert.deepEqual(config.sse, { keepAliveMs: 15_000, bufferEntries: 1_000, maxStreams: 1_000, maxStreamsPerKey: 100 });
  assert.equal(config.rateLimit, undefined, 'no rate limit with authentication off');
  assert.equal(config.requestTimeoutMs, 30_000);
  assert.deepEqual(config.pressure, { maxEventLoopDelayMs: 0, maxHeapBytes: Math.floor(getHeapStatistics().heap_size_limit * 0.9), maxRssBytes: 0 });
  assert.equal(config.eventLogMaxLen, 10_000);
  assert.equal(config.logAppendDelayMs, 5);
  assert.equal(config.shutdownMs, 10_000);
  assert.equal(config.hibernateAfterMs, 300_000);
  assert.equal(config.idempotencyTtlMs, 86_400_000);
  assert.equal(config.grants.budget.steps.unlimited, true);
  // Safe defaults: one client cannot grow one tree without end (the structure issue's defect 4).
  assert.equal(config.grants.budget.signals.maximum, 10_000n);
  assert.equal(config.grants.treeLimits.maxProcessSnapshotBytes.maximum, 4n * 1024n * 1024n);
  assert.equal(config.grants.treeLimits.maxSnapshotBytes.maximum, 16n * 1024n * 1024n);
  assert.equal(config.grants.treeLimits.maxDepth, TreeLimits.defaults.maxDepth);
  assert.equal(config.grants.treeLimits.maxPendingSignals, TreeLimits.defaults.maxPendingSignals);
  assert.deepEqual(config.grants.capabilities.values(), []);
  assert.ok(Object.isFrozen(config));
});

test('every variable is read', () => {
  const config = loadConfig({
    SCOPE_REDIS_URL: 'redis://user:secret@127.0.0.1:6390/2',
    PORT: '0',
    HOST: '0.0.0.0',
    SCOPE_LOG_LEVEL: 'DEBUG',
    SCOPE_KEY_PREFIX: 'acme:scope',
    SCOPE_DEMOS: 'off',
    SCOPE_BODY_LIMIT: '8MiB',
    SCOPE_SSE_KEEPALIVE_MS: '5000',
    SCOPE_SSE_BUFFER: '64',
    SCOPE_SSE_MAX_STREAMS_PER_KEY: '7',
    SCOPE_RATE_LIMIT: '100/10s',
    SCOPE_REQUEST_TIMEOUT_MS: '5000',
    SCOPE_MAX_EVENT_LOOP_DELAY_MS: '250',
    SCOPE_MAX_HEAP_BYTES: '512MiB',
    SCOPE_MAX_RSS_BYTES: '1073741824',
    SCOPE_EVENT_LOG_MAXLEN: '500',
    SCOPE_LOG_APPEND_DELAY_MS: '0',
    SCOPE_SHUTDOWN_MS: '2500',
    SCOPE_HIBERNATE_AFTER_MS: '0',
    SCOPE_IDEMPOTENCY_TTL_MS: '60000',
    SCOPE_GRANTS: JSON.stringify({ budget: { steps: { maximum: 10 } }, treeLimits: { maxDepth: 0 }, capabilities: ['net.http'] }),
    // A non-loopback HOST without authentication is refused unless asked for knowingly (the security issue).
    SCOPE_ALLOW_UNAUTHENTICATED: '1',
  });
  assert.equal(config.mode, 'redis');
  assert.equal(config.redisUrl, 'redis://user:secret@127.0.0.1:6390/2');
  assert.equal(config.port, 0);
  assert.equal(config.host, '0.0.0.0');
  assert.equal(config.logLevel, 'debug');
  assert.equal(config.keyPrefix, 'acme:scope');
  assert.equal(config.demos, false);
  assert.equal(config.bodyLimit, 8 * 1024 * 1024);
  assert.deepEqual(config.sse, { keepAliveMs: 5_000, bufferEntries: 64, maxStreams: 1_000, maxStreamsPerKey: 7 });
  assert.deepEqual(config.rateLimit, { max: 100, windowMs: 10_000 });
  assert.equal(config.requestTimeoutMs, 5_000);
  assert.deepEqual(config.pressure, { maxEventLoopDelayMs: 250, maxHeapBytes: 512 * 1024 * 1024, maxRssBytes: 1024 * 1024 * 1024 });
  assert.equal(config.eventLogMaxLen, 500);
  assert.equal(config.logAppendDelayMs, 0, 'zero: appends leave at the end of the turn');
  assert.equal(config.shutdownMs, 2_500);
  assert.equal(config.hibernateAfterMs, 0, 'zero turns hibernation off');
  assert.equal(config.idempotencyTtlMs, 60_000);
  assert.equal(config.grants.budget.steps.maximum, 10n);
  assert.equal(config.grants.budget.effects.unlimited, true);
  assert.equal(config.grants.treeLimits.maxDepth, 0, 'an explicit zero depth is a real limit');
  assert.equal(config.grants.treeLimits.maxActiveChildren, TreeLimits.defaults.maxActiveChildren);
  assert.deepEqual(config.grants.capabilities.values(), ['net.http']);
});

test('one error lists every bad variable, never a secret', () => {
  let caught: unknown;
  try {
    loadConfig({
      SCOPE_REDIS_URL: 'http://user:hunter2@example.com',
      PORT: '70000',
      SCOPE_LOG_LEVEL: 'loud',
      SCOPE_KEY_PREFIX: '{bad}',
      SCOPE_DEMOS: 'maybe',
      SCOPE_BODY_LIMIT: '1GiB',
      SCOPE_SSE_KEEPALIVE_MS: '60000',
      SCOPE_SSE_BUFFER: '0',
      SCOPE_EVENT_LOG_MAXLEN: '-5',
      SCOPE_LOG_APPEND_DELAY_MS: '11',
      SCOPE_SHUTDOWN_MS: 'soon',
      SCOPE_HIBERNATE_AFTER_MS: '-1',
      SCOPE_GRANTS: '{"budget":{"steps":{"maximum":"many"}}}',
    });
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof ConfigError);
  assert.equal(caught.code, 'invalid_server_config');
  const named = caught.problems.map((problem) => problem.split(/[=:]/)[0]);
  assert.deepEqual(named, [
    'SCOPE_REDIS_URL',
    'PORT',
    'SCOPE_LOG_LEVEL',
    'SCOPE_KEY_PREFIX',
    'SCOPE_DEMOS',
    'SCOPE_BODY_LIMIT',
    'SCOPE_SSE_KEEPALIVE_MS',
    'SCOPE_SSE_BUFFER',
    'SCOPE_EVENT_LOG_MAXLEN',
    'SCOPE_LOG_APPEND_DELAY_MS',
    'SCOPE_SHUTDOWN_MS',
    'SCOPE_HIBERNATE_AFTER_MS',
    'SCOPE_GRANTS',
  ]);
  assert.doesNotMatch(caught.message, /hunter2/);
  assert.match(caught.message, /\/budget\/steps\/maximum/);
});

test('grants reject unknown members and bad shapes', () => {
  for (const grants of ['[]', 'nope', '{"budgets":{}}', '{"treeLimits":{"maxDepth":-1}}', '{"capabilities":["Caps"]}', '{"budget":{"steps":{}}}']) {
    assert.throws(() => loadConfig({ SCOPE_GRANTS: grants }), ConfigError, grants);
  }
});

test('body sizes: bytes and binary multiples, bounded by the payload bound plus envelope', () => {
  assert.equal(parseByteSize('1048576'), 1_048_576);
  assert.equal(parseByteSize('512KiB'), 512 * 1024);
  assert.equal(parseByteSize('2mb'), 2 * 1024 * 1024);
  assert.equal(parseByteSize('1.5MiB'), undefined);
  assert.equal(loadConfig({ SCOPE_BODY_LIMIT: String(maxBodyLimit) }).bodyLimit, maxBodyLimit);
  assert.throws(() => loadConfig({ SCOPE_BODY_LIMIT: String(maxBodyLimit + 1) }), ConfigError);
  assert.throws(() => loadConfig({ SCOPE_BODY_LIMIT: '0' }), ConfigError);
});

test('blank variables count as unset', () => {
  const config = loadConfig({ SCOPE_REDIS_URL: '  ', PORT: '', SCOPE_DEMOS: '' });
  assert.equal(config.mode, 'embedded');
  assert.equal(config.port, 3000);
  assert.equal(config.demos, true);
});

test('SCOPE_WORKER_HEARTBEAT_MS: the worker registry heartbeat, 1 s by default, 50 ms to 60 s', () => {
  assert.equal(loadConfig({}).workerHeartbeatMs, 1_000);
  assert.equal(loadConfig({ SCOPE_WORKER_HEARTBEAT_MS: '100' }).workerHeartbeatMs, 100);
  for (const bad of ['49', '60001', 'often']) {
    assert.throws(() => loadConfig({ SCOPE_WORKER_HEARTBEAT_MS: bad }), (error: unknown) => error instanceof ConfigError && error.problems.some((problem) => problem.startsWith('SCOPE_WORKER_HEARTBEAT_MS')));
  }
});
