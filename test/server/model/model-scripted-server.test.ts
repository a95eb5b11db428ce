/**
 * The scripted model server over real HTTP: OpenAI's streamed and whole formats, selection by marker
 * and turn, statelessness across a restart, the request record, and script validation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ModelScriptError, parseModelScript } from '../../../src/server/model/model-script.js';
import { ScriptedModelServer } from '../../../src/server/model/scripted-model-server.js';
import { modelScript } from './model-harness.js';

function body(marker: string, options: { stream?: boolean; assistantTurns?: number } = {}): string {
  const messages: object[] = [
    { role: 'system', content: `test ${marker}` },
    { role: 'user', content: 'go' },
  ];
  for (let turn = 0; turn < (options.assistantTurns ?? 0); turn += 1) messages.push({ role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' });
  return JSON.stringify({ model: 'm', messages, ...(options.stream ? { stream: true, stream_options: { include_usage: true } } : {}) });
}

async function post(server: ScriptedModelServer, text: string): Promise<{ status: number; type: string; text: string }> {
  const response = await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body: text });
  return { status: response.status, type: response.headers.get('content-type') ?? '', text: await response.text() };
}

test('the same request gets the same answer from a restarted server (stateless), streamed and whole', async () => {
  const requests = [body('[tools]'), body('[tools]', { stream: true }), body('[tools]', { assistantTurns: 1 }), body('[hello]', { stream: true })];
  const first = await ScriptedModelServer.start({ script: modelScript });
  const answers = [];
  for (const request of requests) answers.push(await post(first, request));
  // Asking again in another order changes nothing: no state between requests.
  assert.deepEqual(await post(first, requests[2] as string), answers[2]);
  await first.close();
  const second = await ScriptedModelServer.start({ script: modelScript });
  try {
    for (const [index, request] of requests.entries()) assert.deepEqual(await post(second, request), answers[index], `request ${index}`);
  } finally {
    await second.close();
  }
  assert.equal(answers[0]?.status, 200);
  const whole = JSON.parse(answers[0]?.text as string);
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].finish_reason, 'tool_calls');
  assert.equal(whole.choices[0].message.tool_calls[0].function.name, 'search');
  assert.equal(JSON.parse(answers[2]?.text as string).choices[0].message.content, 'Done.', 'the reply numbered by the assistant messages in the request');
  const streamed = answers[1] as { type: string; text: string };
  assert.match(streamed.type, /^text\/event-stream/);
  const events = streamed.text.split('\n\n').filter((event) => event !== '');
  assert.equal(events.at(-1), 'data: [DONE]');
  const chunks = events.slice(0, -1).map((event) => JSON.parse(event.replace(/^data: /, '')));
  assert.ok(chunks.every((chunk) => chunk.object === 'chat.completion.chunk'));
  assert.deepEqual(chunks.at(-1).choices, [], 'usage comes last, with no choices');
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'tool_calls');
});

test('it records every request (body and Authorization header) and answers OpenAI-style errors', async () => {
  const server = await ScriptedModelServer.start({ script: modelScript });
  try {
    const unmatched = await post(server, body('[nothing-matches]'));
    assert.equal(unmatched.status, 400);
    assert.equal(JSON.parse(unmatched.text).error.code, 'scripted_no_reply');
    const exhausted = await post(server, body('[hello]', { assistantTurns: 1 }));
    assert.equal(exhausted.status, 400);
    assert.match(JSON.parse(exhausted.text).error.message, /has 1 replies; this request is turn 1/);
    const fault = await post(server, body('[status-429]'));
    assert.equal(fault.status, 429);
    assert.equal(JSON.parse(fault.text).error.code, 'scripted_fault');
    assert.equal((await post(server, '{"messages": 1}')).status, 400);
    assert.equal(server.requests.length, 4);
    assert.equal(server.requests[0]?.authorization, 'Bearer k');
    assert.deepEqual((server.requests[2]?.body as { messages: unknown[] }).messages[0], { role: 'system', content: 'test [status-429]' });
  } finally {
    await server.close();
  }
});

test('close() ends a hanging request instead of waiting for it', async () => {
  const server = await ScriptedModelServer.start({ script: modelScript });
  const pending = post(server, body('[hang]')).then(
    () => 'answered',
    () => 'dropped',
  );
  while (server.requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
  await server.close();
  assert.equal(await pending, 'dropped');
});

test('a script is validated: unknown members, duplicate names, bad statuses and empty replies are refused', () => {
  const valid = { conversations: [{ name: 'a', match: 'x', replies: [{ content: 'hi', finishReason: 'stop' }] }] };
  assert.doesNotThrow(() => parseModelScript(valid));
  const bad: unknown[] = [
    null,
    { conversations: [], extra: 1 },
    { conversations: [{ name: 'a', match: 'x', replies: [] }] },
    { conversations: [{ name: 'a', match: 'x', replies: [{ content: 'hi' }] }] },
    { conversations: [{ name: 'a', match: 'x', replies: [{ finishReason: 'stop', status: 200 }] }] },
    { conversations: [{ name: 'a', match: 'x', replies: [{ finishReason: 'stop', delayMs: -1 }] }] },
    { conversations: [{ name: 'a', match: 'x', replies: [{ finishReason: 'stop', toolCalls: [{ id: 'c', name: 'n' }] }] }] },
    { conversations: [valid.conversations[0], valid.conversations[0]] },
  ];
  for (const script of bad) assert.throws(() => parseModelScript(script), ModelScriptError, JSON.stringify(script));
});
