/**
 * example.agent.research over real HTTP: the Scope server (embedded mode, its real app) calls the
 * scripted OpenAI-compatible model server through the model dispatcher. The tool calls run as ToolSet
 * children in call order, the ask_human call appears in `GET /v1/waits` with its answer schema and
 * continues when its child is answered, and a steer sent meanwhile reaches the next model call (the
 * scripted server's recorded requests show it).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { defaultModelScriptPath, loadModelScript, startServerModel } from '../../../src/server/model/server-model.js';
import { ScriptedModelServer } from '../../../src/server/model/scripted-model-server.js';
import createClient from 'openapi-fetch';
import type { paths } from '../../../src/gen/api.js';
import { buildApp } from '../../../src/app/app.js';
import { loadConfig } from '../../../src/server/config.js';
import { EngineHost } from '../../../src/server/engine-host.js';
import { raw, resultOf, start, until, type TestServer } from '../../plugins/server.js';

let model: ScriptedModelServer;
let server: TestServer;

before(async () => {
  model = await ScriptedModelServer.start({ script: await loadModelScript(defaultModelScriptPath) });
  // The server's model endpoint from SCOPE_MODEL_* exactly as `scope serve` resolves it.
  const config = loadConfig({ SCOPE_SHUTDOWN_MS: '300', SCOPE_MODEL_BASE_URL: model.baseUrl, SCOPE_MODEL: 'scripted', SCOPE_MODEL_API_KEY_ENV: 'SCOPE_TEST_RESEARCH_KEY' });
  const endpoint = await startServerModel(config.model);
  const host = new EngineHost({ config, defaultMetrics: false, model: endpoint.options });
  const app = await buildApp({ host, config, logger: false });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  server = { app, host, url, client: createClient<paths>({ baseUrl: url }), close: () => app.close() };
});
after(async () => {
  await server?.close();
  await model?.close();
});

interface Message {
  readonly role: string;
  readonly content: string | null;
  readonly tool_call_id?: string;
  readonly tool_calls?: { readonly id: string }[];
}

test('example.agent.research: children in call order, ask_human in /v1/waits, a steer at the next model call', async () => {
  process.env.SCOPE_TEST_RESEARCH_KEY = 'test-research-key';
  const { processId } = await start(server, 'example.agent.research', { task: 'How does Scope keep an agent safe across crashes?' });

  const waits = await until(
    () => raw(server, 'GET', '/v1/waits'),
    (response) => (response.body?.items ?? []).some((wait: { key: string; rootId: string }) => wait.key === 'toolset.ask.ask_human' && wait.rootId === processId),
  );
  const wait = (waits.body.items as { processId: string; waitId: string; key: string; rootId: string; prompt: string; answerSchema: { required: string[] } }[]).find((entry) => entry.rootId === processId && entry.key === 'toolset.ask.ask_human');
  assert.ok(wait !== undefined);
  assert.notEqual(wait.processId, processId, 'the wait is the tool child’s, not the agent’s');
  assert.equal(wait.prompt, 'Which matters most to you: cost, latency or safety?');
  assert.deepEqual(wait.answerSchema.required, ['answer']);

  // A steer while the batch runs: kept until the next model call.
  const steered = await raw(server, 'POST', `/v1/processes/${encodeURIComponent(processId)}/signals`, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ signals: [{ id: 'steer-1', payload: { steer: 'Keep it short.' } }] }),
  });
  assert.equal(steered.status, 200, steered.text);
  assert.equal(model.requests.length, 1, 'the steer did not start a model call mid-batch');
  const refused = await raw(server, 'POST', `/v1/processes/${encodeURIComponent(wait.processId)}/signals`, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ signals: [{ id: 'answer-0', waitId: wait.waitId, payload: { answer: 7 } }] }),
  });
  assert.equal(refused.status, 422, 'an answer outside the schema is refused');
  const answered = await raw(server, 'POST', `/v1/processes/${encodeURIComponent(wait.processId)}/signals`, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ signals: [{ id: 'answer-1', waitId: wait.waitId, payload: { answer: 'safety' } }] }),
  });
  assert.equal(answered.status, 200, answered.text);

  const result = await resultOf(server, processId, 20_000);
  assert.equal(result.status, 'completed', JSON.stringify(result));
  assert.match(String(result.output), /never run twice/);

  const requests = model.requests.map((request) => (request.body as { messages: Message[] }).messages);
  assert.equal(requests.length, 3, 'three model calls: two tool batches and the answer');
  const second = requests[1] ?? [];
  const tools = second.filter((message) => message.role === 'tool');
  assert.deepEqual(tools.map((message) => message.tool_call_id), ['call_search_1', 'call_ask_1'], 'results in call order');
  assert.equal(tools[1]?.content, 'safety');
  assert.match(tools[0]?.content ?? '', /^Durable execution:/);
  assert.deepEqual(second.at(-1), { role: 'user', content: 'Keep it short.' }, 'the steer joined after the batch, before the next call');

  // The tree: the agent and three ToolSet children, keyed by turn and call index.
  const tree = await raw(server, 'GET', `/v1/trees/${encodeURIComponent(processId)}`);
  const children = (tree.body.processes as { processId: string; parentId: string | null; deployment: string; status: string }[]).filter((entry) => entry.parentId === processId);
  assert.equal(children.length, 3);
  assert.ok(children.every((entry) => entry.deployment.startsWith('example.agent.tools') && entry.status === 'completed'));
});

test('example.agent.briefing delegates to example.agent.summarizer: a sub-agent child whose typed output reaches the model as JSON', async () => {
  process.env.SCOPE_TEST_RESEARCH_KEY = 'test-research-key';
  const before = model.requests.length;
  const { processId } = await start(server, 'example.agent.briefing', { task: 'Brief me on how Scope survives crashes.' });
  const result = await resultOf(server, processId, 20_000);
  assert.equal(result.status, 'completed', JSON.stringify(result));
  assert.match(String(result.output), /stays Unknown until someone settles it/);

  const requests = model.requests.slice(before).map((request) => (request.body as { messages: Message[]; tools: { function: { name: string; parameters: unknown } }[] }));
  const briefing = requests.filter((request) => String(request.messages[0]?.content).startsWith('example.agent.briefing:'));
  const summarizer = requests.filter((request) => String(request.messages[0]?.content).startsWith('example.agent.summarizer:'));
  assert.equal(briefing.length, 2, 'the briefing: one batch, then the answer');
  assert.equal(summarizer.length, 2, 'the sub-agent: a search, then its JSON');
  const offered = briefing[0]?.tools.find((tool) => tool.function.name === 'summarize');
  assert.deepEqual(offered?.function.parameters, { type: 'object', properties: { topic: { type: 'string', minLength: 1 } }, required: ['topic'], additionalProperties: false }, 'the delegate is offered with the sub-agent’s input schema');
  const results = (briefing[1]?.messages ?? []).filter((message) => message.role === 'tool');
  assert.deepEqual(results.map((message) => message.tool_call_id), ['call_summarize_1', 'call_search_1'], 'results in call order');
  assert.deepEqual(JSON.parse(results[0]?.content ?? ''), { sources: ['Durable execution'], summary: 'A durable process commits every step before it acts, so a crash resumes it from its last commit.' }, 'the artifact, as JSON');
  assert.match(results[1]?.content ?? '', /^Unknown effects:/);

  // The tree: the briefing, its two children (the sub-agent and a search), and the sub-agent's own search.
  const tree = await raw(server, 'GET', `/v1/trees/${encodeURIComponent(processId)}`);
  const processes = tree.body.processes as { processId: string; parentId: string | null; deployment: string; status: string }[];
  const children = processes.filter((entry) => entry.parentId === processId);
  assert.deepEqual(children.map((entry) => entry.deployment.split('+')[0]).sort(), ['example.agent.summarizer', 'example.agent.tools']);
  const subAgent = children.find((entry) => entry.deployment.startsWith('example.agent.summarizer'));
  const grandchildren = processes.filter((entry) => entry.parentId === subAgent?.processId);
  assert.equal(grandchildren.length, 1);
  assert.ok(grandchildren[0]?.deployment.startsWith('example.agent.tools'));
  assert.ok(processes.every((entry) => entry.status === 'completed'));
});
