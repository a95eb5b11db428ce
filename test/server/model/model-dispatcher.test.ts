/**
 * The model dispatcher against the scripted model server over real HTTP: each outcome rule (definite
 * with a status, definite before sending, Unknown after sending), streaming into deltas, tool calls
 * put together from chunks, no hidden retries, the key only in the Authorization header, the abort
 * signal, and the configuration digest.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { Payload, Settlement } from '../../../src/kernel/index.js';
import { type ModelDispatcherOptions } from '../../../src/server/model/model-settings.js';
import { ModelDispatcher } from '../../../src/server/model/model-dispatcher.js';
import { ScriptedModelServer } from '../../../src/server/model/scripted-model-server.js';
import { decodeModelReply } from '../../../strategies/interaction/model-wire.js';
import { freePort } from '../../helpers/free-port.js';
import { chatEffectRequest, errorOf, modelScript, rawEffectRequest, testKey } from './model-harness.js';

let server: ScriptedModelServer;
before(async () => {
  server = await ScriptedModelServer.start({ script: modelScript });
});
after(async () => {
  await server.close();
});

function dispatcher(overrides: Partial<ModelDispatcherOptions> = {}): ModelDispatcher {
  return new ModelDispatcher({ baseUrl: server.baseUrl, model: 'test-model', apiKeyEnv: 'TEST_MODEL_KEY', env: { TEST_MODEL_KEY: testKey }, timeoutMs: 5_000, ...overrides });
}

const live = (): AbortSignal => new AbortController().signal;

/** Runs one call; returns the settlement and the delta payloads in emission order. */
async function call(marker: string, options: Partial<ModelDispatcherOptions> = {}, signal = live()): Promise<{ settlement: Settlement; deltas: unknown[] }> {
  const deltas: unknown[] = [];
  const settlement = await dispatcher(options).dispatch(chatEffectRequest(marker), (payload: Payload) => deltas.push(payload.decode()), signal);
  return { settlement, deltas };
}

/** Requests the server received for `marker` so far. */
function received(marker: string): number {
  return server.requests.filter((request) => JSON.stringify(request.body).includes(marker)).length;
}

test('streamed content arrives as deltas in order and the settlement content is their concatenation', async () => {
  const { settlement, deltas } = await call('[hello]');
  assert.equal(settlement.status, 'succeeded');
  const reply = decodeModelReply(settlement.payload);
  assert.ok(reply.ok, JSON.stringify(settlement.payload.decode()));
  assert.equal(reply.value.message.content, 'Hello there, how can I help you today?');
  assert.ok(deltas.length > 3, 'one delta per streamed piece');
  assert.equal(deltas.map((delta) => (delta as { content: string }).content).join(''), reply.value.message.content);
  assert.deepEqual(deltas[0], { content: 'Hello ' });
  assert.equal(reply.value.finishReason, 'stop');
  assert.equal(reply.value.model, 'test-model');
  assert.deepEqual(reply.value.message.toolCalls, []);
  // Usage was asked for in the stream and sent last.
  assert.deepEqual(reply.value.usage, { promptTokens: 8, completionTokens: 8 });
  const body = server.requests.at(-1)?.body as Record<string, unknown>;
  assert.equal(body.stream, true);
  assert.deepEqual(body.stream_options, { include_usage: true });
});

test('tool calls are put together from their chunks, in order, with the finish reason tool_calls', async () => {
  const { settlement } = await call('[tools]');
  const reply = decodeModelReply(settlement.payload);
  assert.ok(reply.ok);
  assert.equal(reply.value.finishReason, 'tool_calls');
  assert.equal(reply.value.message.content, 'Let me look.');
  assert.deepEqual(reply.value.message.toolCalls, [
    { id: 'call_a', name: 'search', arguments: '{"query":"durable agent process trees","limit":5}' },
    { id: 'call_b', name: 'ask_person', arguments: '{"question":"Which year?"}' },
  ]);
  const only = decodeModelReply((await call('[only-tools]')).settlement.payload);
  assert.ok(only.ok);
  assert.equal(only.value.message.content, null, 'a reply that only calls tools has null content');
});

test('the request is mapped to the endpoint protocol: roles, tool calls, tool results, tools, settings', async () => {
  const request = chatEffectRequest('[tools]', {
    messages: [
      { role: 'system', content: 'sys [tools]' },
      { role: 'user', content: 'find it' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_a', name: 'search', arguments: '{"q":1}' }] },
      { role: 'tool', content: 'found', toolCallId: 'call_a' },
    ],
    tools: [{ name: 'search', description: 'Searches.', parameters: { type: 'object', properties: { q: { type: 'integer' } } } }],
  });
  const settlement = await dispatcher({ temperature: 0.2, maxTokens: 64 }).dispatch(request, undefined, live());
  assert.equal(settlement.status, 'succeeded');
  const body = server.requests.at(-1)?.body as Record<string, unknown>;
  assert.deepEqual(body.messages, [
    { role: 'system', content: 'sys [tools]' },
    { role: 'user', content: 'find it' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'search', arguments: '{"q":1}' } }] },
    { role: 'tool', content: 'found', tool_call_id: 'call_a' },
  ]);
  assert.deepEqual(body.tools, [{ type: 'function', function: { name: 'search', description: 'Searches.', parameters: { type: 'object', properties: { q: { type: 'integer' } } } } }]);
  assert.equal(body.model, 'test-model');
  assert.equal(body.temperature, 0.2);
  assert.equal(body.max_tokens, 64);
  // The second turn of the conversation (one assistant message in the request).
  assert.equal((decodeModelReply(settlement.payload) as { value: { message: { content: string } } }).value.message.content, 'Done.');
});

for (const status of [400, 401, 404, 429]) {
  test(`a ${status} the endpoint answered is a definite failure carrying the status, sent once`, async () => {
    const before = received(`[status-${status}]`);
    const { settlement, deltas } = await call(`[status-${status}]`);
    assert.equal(settlement.status, 'failed');
    const error = errorOf(settlement.payload);
    assert.equal(error.status, status);
    assert.equal(error.code, 'model.rejected');
    assert.deepEqual(deltas, []);
    assert.equal(received(`[status-${status}]`) - before, 1, 'no hidden retry');
  });
}

for (const status of [500, 503]) {
  test(`a ${status} is Unknown (the endpoint may have answered), sent once`, async () => {
    const before = received(`[status-${status}]`);
    const { settlement } = await call(`[status-${status}]`);
    assert.equal(settlement.status, 'unknown');
    assert.deepEqual(errorOf(settlement.payload), { code: 'model.server_error', message: errorOf(settlement.payload).message, status });
    assert.equal(received(`[status-${status}]`) - before, 1, 'no hidden retry');
  });
}

test('a timeout after the request was sent is Unknown: no answer at all, or a stream that stalls after its headers', async () => {
  const silent = await call('[hang]', { timeoutMs: 200 });
  assert.equal(silent.settlement.status, 'unknown');
  assert.equal(errorOf(silent.settlement.payload).code, 'model.timeout');
  assert.equal(errorOf(silent.settlement.payload).status, null);
  const stalled = await call('[stall]', { timeoutMs: 300 });
  assert.equal(stalled.settlement.status, 'unknown');
  assert.equal(errorOf(stalled.settlement.payload).code, 'model.timeout');
  assert.deepEqual(stalled.deltas, [], 'the stream stalled after its first (role) chunk');
});

test('a stream cut before its finish is Unknown, never a short success: the connection dropped, or the response ended early', async () => {
  const dropped = await call('[cut]');
  assert.equal(dropped.settlement.status, 'unknown');
  assert.equal(errorOf(dropped.settlement.payload).code, 'model.connection_lost');
  assert.deepEqual(dropped.deltas, [{ content: 'one ' }, { content: 'two ' }], 'what streamed before the cut was delivered');
  // The client ends such a stream quietly, as if it were complete: only the missing finish tells.
  const ended = await call('[short]');
  assert.equal(ended.settlement.status, 'unknown');
  assert.deepEqual(errorOf(ended.settlement.payload), { code: 'model.stream_cut', message: errorOf(ended.settlement.payload).message, status: null });
  assert.deepEqual(ended.deltas, [{ content: 'one ' }, { content: 'two ' }]);
});

test('a refused connection is definite: nothing was sent', async () => {
  const port = await freePort();
  const { settlement } = await call('[hello]', { baseUrl: `http://127.0.0.1:${port}/v1` });
  assert.equal(settlement.status, 'failed');
  assert.deepEqual(errorOf(settlement.payload), { code: 'model.unreachable', message: errorOf(settlement.payload).message, status: null });
  assert.match(errorOf(settlement.payload).message, /ECONNREFUSED/);
});

test('a missing key variable is definite and sends nothing; so is a malformed payload', async () => {
  const count = server.requests.length;
  const missing = await dispatcher({ env: {} }).dispatch(chatEffectRequest('[hello]'), undefined, live());
  assert.equal(missing.status, 'failed');
  assert.equal(errorOf(missing.payload).code, 'model.api_key_missing');
  assert.equal(errorOf(missing.payload).status, null);
  assert.match(errorOf(missing.payload).message, /TEST_MODEL_KEY/);
  for (const payload of [{ operation: 'model.chat', messages: [], tools: [] }, { operation: 'other' }, { operation: 'model.chat', messages: [{ role: 'user', content: 'x' }], tools: [], extra: 1 }]) {
    const settlement = await dispatcher().dispatch(rawEffectRequest(payload), undefined, live());
    assert.equal(settlement.status, 'failed');
    assert.deepEqual(errorOf(settlement.payload), { code: 'model.invalid_request', message: errorOf(settlement.payload).message, status: null });
  }
  assert.equal(server.requests.length, count, 'no request reached the endpoint');
});

test('the abort signal: aborted before sending is definite; aborted in flight is Unknown', async () => {
  const count = server.requests.length;
  const early = new AbortController();
  early.abort();
  const before = await call('[hello]', {}, early.signal);
  assert.equal(before.settlement.status, 'failed');
  assert.equal(errorOf(before.settlement.payload).code, 'model.canceled');
  assert.equal(server.requests.length, count);
  const late = new AbortController();
  const pending = call('[hang]', { timeoutMs: 60_000 }, late.signal);
  await until(() => received('[hang]') > 0 && server.requests.length > count);
  late.abort();
  const { settlement } = await pending;
  assert.equal(settlement.status, 'unknown');
  assert.equal(errorOf(settlement.payload).code, 'model.interrupted');
});

test('the key reaches the endpoint only as Authorization: Bearer, and no settlement, delta or error carries it', async () => {
  const seen: string[] = [];
  for (const marker of ['[hello]', '[tools]', '[status-401]', '[status-500]', '[cut]', '[short]']) {
    const { settlement, deltas } = await call(marker);
    seen.push(settlement.payload.toString(), JSON.stringify(deltas));
    const last = server.requests.at(-1);
    assert.equal(last?.authorization, `Bearer ${testKey}`);
  }
  // An endpoint that echoes the key in its 401 (OpenAI names part of it): the message is redacted.
  const echo = createServer((request, response) => {
    response.writeHead(401, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${request.headers.authorization}`, type: 'invalid_request_error', code: 'invalid_api_key' } }));
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  try {
    const { settlement } = await call('[hello]', { baseUrl: `http://127.0.0.1:${(echo.address() as AddressInfo).port}/v1` });
    assert.equal(settlement.status, 'failed');
    assert.equal(errorOf(settlement.payload).status, 401);
    assert.match(errorOf(settlement.payload).message, /Incorrect API key provided: Bearer \*\*\*/);
    seen.push(settlement.payload.toString());
  } finally {
    await new Promise((resolve) => echo.close(resolve));
  }
  for (const text of seen) assert.ok(!text.includes(testKey) && !text.includes(testKey.slice(3)), `the key leaked: ${text}`);
});

test('one dispatcher reads the key at each call: a rotated key is the one sent next, and the old one again after a rollback', async () => {
  const env: Record<string, string | undefined> = { TEST_MODEL_KEY: testKey };
  const model = dispatcher({ env });
  const sent = async (): Promise<string | undefined> => {
    const settlement = await model.dispatch(chatEffectRequest('[hello]'), undefined, live());
    assert.equal(settlement.status, 'succeeded');
    return server.requests.at(-1)?.authorization;
  };
  assert.equal(await sent(), `Bearer ${testKey}`);
  env.TEST_MODEL_KEY = `${testKey}-rotated`;
  assert.equal(await sent(), `Bearer ${testKey}-rotated`);
  env.TEST_MODEL_KEY = testKey;
  assert.equal(await sent(), `Bearer ${testKey}`);
  // Unset: nothing is sent, whatever client an earlier key left behind.
  delete env.TEST_MODEL_KEY;
  const before = server.requests.length;
  const missing = await model.dispatch(chatEffectRequest('[hello]'), undefined, live());
  assert.equal(missing.status, 'failed');
  assert.equal(server.requests.length, before);
});

test('with no key configured (apiKeyEnv null) no Authorization header is sent', async () => {
  const { settlement } = await call('[hello]', { apiKeyEnv: null, env: {} });
  assert.equal(settlement.status, 'succeeded');
  assert.equal(server.requests.at(-1)?.authorization, undefined);
});

test('the replay policy is configurable (default same_identity)', () => {
  const effect = chatEffectRequest('[hello]').effect;
  assert.equal(dispatcher().replayPolicy(effect), 'same_identity');
  assert.equal(dispatcher({ replayPolicy: 'never' }).replayPolicy(effect), 'never');
});

test('the configuration digest changes with the model settings and the key variable name, never with the key value or the timeout', () => {
  const base = dispatcher().configurationDigest.toString();
  assert.equal(dispatcher({ env: { TEST_MODEL_KEY: 'sk-another-key' } }).configurationDigest.toString(), base);
  assert.equal(dispatcher({ timeoutMs: 1_234 }).configurationDigest.toString(), base);
  for (const change of [{ model: 'other-model' }, { baseUrl: 'http://127.0.0.1:1/v1' }, { temperature: 0.5 }, { maxTokens: 10 }, { replayPolicy: 'never' as const }, { apiKeyEnv: 'OTHER_KEY' }, { streamUsage: false }]) {
    assert.notEqual(dispatcher(change).configurationDigest.toString(), base, JSON.stringify(change));
  }
  // An endpoint identity stands for a URL that changes between runs (the in-process scripted server).
  const a = dispatcher({ baseUrl: 'http://127.0.0.1:4001/v1', endpointIdentity: 'scripted:research' }).configurationDigest.toString();
  const b = dispatcher({ baseUrl: 'http://127.0.0.1:4002/v1', endpointIdentity: 'scripted:research' }).configurationDigest.toString();
  assert.equal(a, b);
});

test('bad settings are refused when the dispatcher is built', () => {
  for (const bad of [{ baseUrl: 'ftp://x' }, { model: '' }, { apiKeyEnv: 'BAD-NAME' }, { temperature: 3 }, { maxTokens: 0 }, { timeoutMs: 0 }, { replayPolicy: 'always' as never }]) {
    assert.throws(() => dispatcher(bad), /invalid model dispatcher settings/, JSON.stringify(bad));
  }
});

/** Polls a condition the server's own record answers (no sleeps in assertions). */
async function until(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

