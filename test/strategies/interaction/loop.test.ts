/**
 * The interaction loop through a real Engine (memory committer), a scripted model and real ToolSet
 * children: ordering under concurrency, the finish-reason rules, model-visible tool errors, refused
 * starts, the completion validator.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Payload } from '../../../src/kernel/payload.js';
import { call, latch, modelRequests, reply, setup, stopReply, ToolDispatcher, toolsReply } from './harness.js';

const input = Payload.encode({ task: 'Find things.' });

test('tool calls run as children within maxToolConcurrency, refilled as they drain, and return in the original call order', async () => {
  const tools = new ToolDispatcher();
  const slow = latch();
  tools.holds.set('a', slow.promise);
  const { engine, model, agent } = setup([toolsReply(call('c1', 'lookup', { q: 'a' }), call('c2', 'lookup', { q: 'b' }), call('c3', 'lookup', { q: 'c' })), stopReply('done')], {
    tools,
    maxToolConcurrency: 2,
  });
  const process = await engine.start(agent, input);
  // c only begins once b drained (the window refills), while a is still held.
  await tools.began$('c');
  assert.deepEqual(tools.began.slice(0, 2).sort(), ['a', 'b'], 'the first window is a and b');
  assert.equal(tools.began.length, 3);
  assert.deepEqual(tools.ended, ['b'], 'c began after b ended, a still running: at most 2 at once');
  slow.open();
  const result = await process.await();
  await engine.close();
  assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
  assert.equal(result.output?.decode(), 'done');
  assert.deepEqual(tools.ended.indexOf('a') > tools.ended.indexOf('c'), true, 'a ended last');
  const second = modelRequests(model)[1] ?? [];
  const results = second.filter((message) => message.role === 'tool');
  assert.deepEqual(
    results.map((message) => [message.toolCallId, message.content]),
    [
      ['c1', 'result of a'],
      ['c2', 'result of b'],
      ['c3', 'result of c'],
    ],
    'results in the original call order, not the order they finished',
  );
  assert.equal(second[0]?.role, 'system');
});

test('only finish reason tool_calls runs tools: calls under stop fail the Process and no tool runs', async () => {
  const { engine, agent, tools } = setup([reply('stop', 'x', [call('c1', 'lookup', { q: 'a' })])]);
  const result = await engine.run(agent, input);
  await engine.close();
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.code, 'interaction.model.finish_reason_invalid');
  assert.deepEqual(tools.began, []);
});

test('length-truncated calls get model-visible feedback and one more attempt, bounded', async () => {
  const truncated = reply('length', 'partial', [call('c1', 'lookup', { q: 'a' })]);
  const retried = setup([truncated, stopReply('short answer')]);
  const ok = await retried.engine.run(retried.agent, input);
  await retried.engine.close();
  assert.equal(ok.status, 'completed');
  assert.deepEqual(retried.tools.began, [], 'the truncated calls were not run');
  const second = modelRequests(retried.model)[1] ?? [];
  assert.match(second[second.length - 1]?.content ?? '', /cut off .*finish reason "length".*1 tool call\(s\) were not run/);
  assert.equal(second[second.length - 2]?.content, 'partial', 'the truncated text stays visible');

  const twice = setup([truncated, truncated]);
  const failed = await twice.engine.run(twice.agent, input);
  await twice.engine.close();
  assert.equal(failed.status, 'failed');
  assert.equal(failed.termination.failure?.code, 'interaction.model.truncated');
  assert.equal(twice.model.requests().length, 2, 'one more attempt, not more');
});

test('an ordinary tool error is a model-visible tool result', async () => {
  const { engine, agent, model } = setup([toolsReply(call('c1', 'broken', { q: 'x' })), stopReply('sorry')]);
  const result = await engine.run(agent, input);
  await engine.close();
  assert.equal(result.status, 'completed');
  const tool = (modelRequests(model)[1] ?? []).find((message) => message.role === 'tool');
  const error = JSON.parse(tool?.content ?? '{}') as { error: { code: string; message: string } };
  assert.equal(error.error.code, 'toolset.tool.failed');
  assert.match(error.error.message, /broken: tool\.broken: broken on x/);
});

test('a refused child start reaches the model as its code only; an unknown tool name as a tool error', async () => {
  // `ghost` is offered to the model but the ToolSet does not have it: its start is refused (input invalid).
  const { engine, agent, model, tools } = setup([toolsReply(call('c1', 'ghost', { q: 'x' }), call('c2', 'nowhere'), call('c3', 'lookup', { q: 'y' })), stopReply('ok')], {
    extraSpecs: [{ name: 'ghost', description: 'Not in the set.', parameters: { type: 'object' } }],
  });
  const result = await engine.run(agent, input);
  await engine.close();
  assert.equal(result.status, 'completed');
  const results = (modelRequests(model)[1] ?? []).filter((message) => message.role === 'tool').map((message) => message.content);
  assert.deepEqual(JSON.parse(results[0] ?? ''), { error: { code: 'engine.child.input.invalid' } }, 'the code and nothing else');
  assert.equal((JSON.parse(results[1] ?? '') as { error: { code: string } }).error.code, 'interaction.tool.unknown');
  assert.equal(results[2], 'result of y');
  assert.deepEqual(tools.began, ['y']);
});

test('the completion validator turns a refused answer into feedback, bounded by maxRejections', async () => {
  const validator = (output: unknown) => ((output as string).includes('source') ? undefined : 'cite a source.');
  const accepted = setup([stopReply('no'), stopReply('yes, source: x')], { completionValidator: validator });
  const ok = await accepted.engine.run(accepted.agent, input);
  await accepted.engine.close();
  assert.equal(ok.output?.decode(), 'yes, source: x');
  const second = modelRequests(accepted.model)[1] ?? [];
  assert.equal(second[second.length - 1]?.content, 'Your final answer was not accepted: cite a source. Answer again.');

  const refused = setup([stopReply('no'), stopReply('no'), stopReply('no')], { completionValidator: validator, maxRejections: 2 });
  const failed = await refused.engine.run(refused.agent, input);
  await refused.engine.close();
  assert.equal(failed.termination.failure?.code, 'interaction.completion.rejected');
  assert.equal(refused.model.requests().length, 3);
});

test('a typed output is the final text parsed as JSON and checked against the output schema', async () => {
  const schema = { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] };
  const { engine, agent, model } = setup([stopReply('forty-two'), stopReply('{"answer":42}')], { outputSchema: schema });
  const result = await engine.run(agent, input);
  await engine.close();
  assert.deepEqual(result.output?.decode(), { answer: 42 });
  assert.equal(model.requests().length, 2);
});

test('maxTurns bounds the model calls', async () => {
  const loop = toolsReply(call('c1', 'lookup', { q: 'a' }));
  const { engine, agent, model } = setup([loop, loop, loop], { maxTurns: 2 });
  const result = await engine.run(agent, input);
  await engine.close();
  assert.equal(result.termination.failure?.code, 'interaction.turns.exhausted');
  assert.equal(model.requests().length, 2);
});
