import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Payload } from '../../../src/kernel/index.js';
import { decodeModelReply, decodeModelRequest, encodeModelReply, modelChatEffect } from '../../../strategies/interaction/model-wire.js';

describe('the model-call wire form', () => {
  test('a request round-trips through the Effect payload', () => {
    const request = {
      messages: [
        { role: 'system' as const, content: 'be brief' },
        { role: 'user' as const, content: 'hi' },
        { role: 'assistant' as const, content: null, toolCalls: [{ id: 'call_1', name: 'search', arguments: '{"q":"x"}' }] },
        { role: 'tool' as const, content: 'found', toolCallId: 'call_1' },
      ],
      tools: [{ name: 'search', description: 'searches', parameters: { type: 'object' } }],
    };
    const decoded = decodeModelRequest(modelChatEffect(request).payload);
    assert.deepEqual(decoded, { ok: true, value: request });
  });

  test('requests that are not the contract are refused with the reason', () => {
    const refuse = (value: unknown, problem: RegExp) => {
      const decoded = decodeModelRequest(Payload.encode(value));
      assert.equal(decoded.ok, false);
      if (!decoded.ok) assert.match(decoded.problem, problem);
    };
    refuse({ operation: 'planning.sense', messages: [], tools: [] }, /not a model request/);
    refuse({ operation: 'model.chat', messages: [], tools: [] }, /non-empty/);
    refuse({ operation: 'model.chat', messages: [{ role: 'tool', content: 'x' }], tools: [] }, /without toolCallId/);
    refuse({ operation: 'model.chat', messages: [{ role: 'user', content: null }], tools: [] }, /may be null only/);
    refuse({ operation: 'model.chat', messages: [{ role: 'user', content: 'x', toolCalls: [] }], tools: [] }, /assistant messages only/);
    refuse({ operation: 'model.chat', messages: [{ role: 'user', content: 'x' }], tools: [], model: 'gpt' }, /unknown member model/);
    refuse({ operation: 'model.chat', messages: [{ role: 'user', content: 'x' }], tools: [{ name: 't', description: '' }] }, /parameters/);
  });

  test('a reply round-trips and a malformed one is refused', () => {
    const reply = { message: { content: 'done', toolCalls: [] }, finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 1 }, model: 'scripted' };
    assert.deepEqual(decodeModelReply(encodeModelReply(reply)), { ok: true, value: reply });
    const noUsage = { ...reply, usage: null };
    assert.deepEqual(decodeModelReply(encodeModelReply(noUsage)), { ok: true, value: noUsage });
    const bad = decodeModelReply(Payload.encode({ ...reply, finishReason: '' }));
    assert.equal(bad.ok, false);
    const badUsage = decodeModelReply(Payload.encode({ ...reply, usage: { promptTokens: -1, completionTokens: 0 } }));
    assert.equal(badUsage.ok, false);
  });
});
