/**
 * The model dispatcher through the real Engine and Host over HTTP, against the scripted model server:
 * a model timeout after the request was sent leaves the effect Unknown, a person resolves it over
 * HTTP and the process completes; streamed tokens appear on the tree's SSE stream as agent.delta
 * entries; the API key reaches the endpoint and appears in no log line, snapshot, event, effect view or
 * error.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { buildApp } from '../../../src/app/app.js';
import { loadConfig } from '../../../src/server/config.js';
import { EngineHost } from '../../../src/server/engine-host.js';
import { ScriptedModelServer } from '../../../src/server/model/scripted-model-server.js';
import { parseModelScript } from '../../../src/server/model/model-script.js';
import { modelCallDeployment, modelCallName } from '../../fixtures/model-call-deployments.js';
import { readSse, streamPath } from '../../plugins/sse-harness.js';
import { testKey } from './model-harness.js';

const script = parseModelScript({
  conversations: [
    { name: 'answer', match: '[answer]', replies: [{ content: 'Durable trees survive crashes and never run a tool twice.', finishReason: 'stop' }] },
    { name: 'slow', match: '[slow]', replies: [{ finishReason: 'stop', hang: true }] },
  ],
});

let model: ScriptedModelServer;
let host: EngineHost;
let base: string;
let close: () => Promise<void>;
const logLines: string[] = [];

before(async () => {
  model = await ScriptedModelServer.start({ script });
  // Everything the Host and the app log, at the most talkative level.
  const logger = pino({ level: 'trace' }, { write: (line: string) => logLines.push(line) });
  const config = loadConfig({ SCOPE_SHUTDOWN_MS: '500', SCOPE_DEMOS: 'off' });
  const deployment = modelCallDeployment({ baseUrl: model.baseUrl, model: 'scripted', apiKeyEnv: 'SCOPE_TEST_MODEL_KEY', env: { SCOPE_TEST_MODEL_KEY: testKey }, timeoutMs: 300 });
  host = new EngineHost({ config, deployments: [deployment], defaultMetrics: false, logger });
  const app = await buildApp({ host, config, logger });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
  close = async () => {
    await app.close();
    await model.close();
  };
});
after(async () => {
  await close();
});

async function json(path: string, init?: RequestInit): Promise<{ status: number; body: any; text: string }> {
  const response = await fetch(`${base}${path}`, init);
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text), text };
}

async function startCall(marker: string): Promise<{ processId: string; rootId: string }> {
  const { status, body } = await json('/v1/processes', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ deployment: modelCallName, input: { marker, question: 'What is Scope?' } }),
  });
  assert.equal(status, 201, JSON.stringify(body));
  return body;
}

const processPath = (id: string): string => `/v1/processes/${encodeURIComponent(id)}`;

test('a model timeout after the request was sent is Unknown; a resolution over HTTP completes the process', async () => {
  const { processId } = await startCall('[slow]');
  let effects: any;
  const deadline = Date.now() + 10_000;
  for (;;) {
    effects = (await json(`${processPath(processId)}/effects`)).body;
    if (effects.items[0]?.status === 'unknown') break;
    if (Date.now() > deadline) throw new Error(`the effect never became Unknown: ${JSON.stringify(effects)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(model.requests.filter((request) => JSON.stringify(request.body).includes('[slow]')).length, 1, 'the request was sent once');
  const view = (await json(processPath(processId))).body;
  assert.deepEqual(view.unknownEffectIds, [effects.items[0].effectId]);
  const reply = { message: { content: 'Answered by a person.', toolCalls: [] }, finishReason: 'stop', usage: null, model: 'scripted' };
  const resolved = await json(`${processPath(processId)}/effects/${encodeURIComponent(effects.items[0].effectId)}/resolution`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ status: 'succeeded', payload: reply }),
  });
  assert.equal(resolved.status, 200, resolved.text);
  const result = (await json(`${processPath(processId)}/result?waitMs=10000`)).body;
  assert.equal(result.status, 'completed', JSON.stringify(result));
  assert.deepEqual(result.output, { content: 'Answered by a person.' });
});

test('streamed tokens appear on the tree stream as agent.delta entries, in order, and make up the answer', async () => {
  const { processId, rootId } = await startCall('[answer]');
  const result = (await json(`${processPath(processId)}/result?waitMs=10000`)).body;
  assert.equal(result.status, 'completed', JSON.stringify(result));
  const stream = await readSse(`${base}${streamPath(rootId)}`);
  const deltas = stream.events.filter((event) => event.event === 'agent.delta');
  assert.ok(deltas.length > 3, `one delta per streamed piece (${deltas.length})`);
  assert.equal(deltas.map((event) => event.data.payload.content).join(''), result.output.content);
  assert.equal(result.output.content, 'Durable trees survive crashes and never run a tool twice.');
});

test('the key reached the endpoint as a bearer token and appears in no log line, snapshot, event, effect view or error', async () => {
  assert.ok(model.requests.length >= 2);
  for (const request of model.requests) assert.equal(request.authorization, `Bearer ${testKey}`);
  const texts: string[] = [...logLines];
  assert.ok(logLines.length > 0, 'the logger captured lines');
  const { body: list } = await json('/v1/processes?limit=100');
  for (const item of list.items) {
    // The list holds root processes: each is its tree's root.
    const id = item.processId as string;
    for (const path of [processPath(id), `${processPath(id)}/effects`, `${processPath(id)}/events?limit=1000`, `${processPath(id)}/result`, `/v1/trees/${encodeURIComponent(id)}/snapshot`, `/v1/trees/${encodeURIComponent(id)}`]) {
      const { status, text } = await json(path);
      assert.equal(status, 200, path);
      texts.push(text);
    }
    texts.push((await readSse(`${base}${streamPath(id)}`)).events.map((event) => JSON.stringify(event)).join('\n'));
  }
  // A refused call's error, too (the endpoint answers 400 for an unscripted conversation).
  const refused = await startCall('[no-such-conversation]');
  const failed = (await json(`${processPath(refused.processId)}/result?waitMs=10000`)).body;
  assert.equal(failed.status, 'failed');
  texts.push(JSON.stringify(failed), (await json(`${processPath(refused.processId)}/effects`)).text);
  for (const text of texts) assert.ok(!text.includes(testKey), `the key leaked: ${text.slice(0, 300)}`);
});
