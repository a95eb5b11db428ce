/**
 * SCOPE_MODEL_* configuration and the server's model endpoint: validated like every variable; with no
 * base URL the scripted server runs in-process (no key, a digest naming the script rather than the
 * port); without any endpoint the example dispatcher fails definitely and sends nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../../src/server/config.js';
import { modelDispatcherFor, startServerModel } from '../../../src/server/model/server-model.js';
import { ModelDispatcher } from '../../../src/server/model/model-dispatcher.js';
import { chatEffectRequest, errorOf } from './model-harness.js';

test('defaults: no base URL (the scripted server), model "scripted", key variable OPENAI_API_KEY, 60 s timeout', () => {
  assert.deepEqual(loadConfig({}).model, { baseUrl: undefined, model: 'scripted', apiKeyEnv: 'OPENAI_API_KEY', timeoutMs: 60_000 });
  const configured = loadConfig({ SCOPE_MODEL_BASE_URL: 'http://127.0.0.1:11434/v1/', SCOPE_MODEL: 'llama3.1', SCOPE_MODEL_API_KEY_ENV: 'OLLAMA_KEY', SCOPE_MODEL_TIMEOUT_MS: '5000' }).model;
  assert.deepEqual(configured, { baseUrl: 'http://127.0.0.1:11434/v1', model: 'llama3.1', apiKeyEnv: 'OLLAMA_KEY', timeoutMs: 5_000 });
});

test('bad SCOPE_MODEL_* values are configuration errors, all reported at once, never echoing a URL password', () => {
  const error = (() => {
    try {
      loadConfig({ SCOPE_MODEL_BASE_URL: 'ftp://user:hunter2@example.com', SCOPE_MODEL_API_KEY_ENV: 'sk-not-a-name', SCOPE_MODEL_TIMEOUT_MS: '0' });
    } catch (caught) {
      return caught;
    }
    return undefined;
  })();
  assert.ok(error instanceof ConfigError);
  assert.match(error.message, /SCOPE_MODEL_BASE_URL=.*expected an http/);
  assert.match(error.message, /SCOPE_MODEL_BASE_URL needs SCOPE_MODEL/);
  assert.match(error.message, /SCOPE_MODEL_API_KEY_ENV=.*NAME of an environment variable/);
  assert.match(error.message, /SCOPE_MODEL_TIMEOUT_MS/);
  assert.ok(!error.message.includes('hunter2'));
});

test('with no base URL the server runs the scripted model in-process: no key needed, the digest names the script, not the port', async () => {
  const config = loadConfig({}).model;
  const first = await startServerModel(config);
  const second = await startServerModel(config);
  try {
    assert.equal(first.options.apiKeyEnv, null);
    assert.notEqual(first.options.baseUrl, second.options.baseUrl);
    assert.equal(new ModelDispatcher(first.options).configurationDigest.toString(), new ModelDispatcher(second.options).configurationDigest.toString());
    const settlement = await new ModelDispatcher(first.options).dispatch(chatEffectRequest('example.agent.research'), undefined, new AbortController().signal);
    assert.equal(settlement.status, 'succeeded', settlement.payload.toString());
  } finally {
    await first.close();
    await second.close();
  }
  const remote = await startServerModel({ ...config, baseUrl: 'https://api.openai.com/v1', model: 'gpt-4o-mini' });
  assert.deepEqual(remote.options, { baseUrl: 'https://api.openai.com/v1', model: 'gpt-4o-mini', apiKeyEnv: 'OPENAI_API_KEY', timeoutMs: 60_000 });
});

test('without an endpoint the example dispatcher fails definitely and sends nothing', async () => {
  const dispatcher = modelDispatcherFor(undefined);
  const settlement = await dispatcher.dispatch(chatEffectRequest('[hello]'), undefined, new AbortController().signal);
  assert.equal(settlement.status, 'failed');
  assert.deepEqual(errorOf(settlement.payload).code, 'model.not_configured');
  assert.equal(errorOf(settlement.payload).status, null);
});
