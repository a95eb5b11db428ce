/**
 * Shared fixtures of the model tests: a script with one conversation per behaviour (each selected by
 * a marker in the system message), a model request naming a marker, and an EffectRequest carrying it.
 */
import { Deployment, Digest, Effect, EffectRequest, Payload, ProcessId, ProcessRelation } from '../../../src/kernel/index.js';
import { parseModelScript, type ModelScript } from '../../../src/server/model/model-script.js';
import { modelChatEffect, type ModelRequest } from '../../../strategies/interaction/model-wire.js';
import { echoDefinition } from '../../../strategies/demo/echo.js';

export const testKey = 'sk-test-7f3a9c41e2b84d0f9a6b5c3d2e1f0a9b';

export const modelScript: ModelScript = parseModelScript({
  comment: 'one conversation per behaviour the model tests need, selected by the marker in the system message',
  conversations: [
    { name: 'hello', match: '[hello]', replies: [{ content: 'Hello there, how can I help you today?', finishReason: 'stop' }] },
    {
      name: 'tools',
      match: '[tools]',
      replies: [
        {
          content: 'Let me look.',
          toolCalls: [
            { id: 'call_a', name: 'search', arguments: '{"query":"durable agent process trees","limit":5}' },
            { id: 'call_b', name: 'ask_person', arguments: '{"question":"Which year?"}' },
          ],
          finishReason: 'tool_calls',
        },
        { content: 'Done.', finishReason: 'stop' },
      ],
    },
    { name: 'only-tools', match: '[only-tools]', replies: [{ toolCalls: [{ id: 'call_x', name: 'search', arguments: '{}' }], finishReason: 'tool_calls' }] },
    { name: 'status-400', match: '[status-400]', replies: [{ finishReason: 'stop', status: 400 }] },
    { name: 'status-401', match: '[status-401]', replies: [{ finishReason: 'stop', status: 401 }] },
    { name: 'status-404', match: '[status-404]', replies: [{ finishReason: 'stop', status: 404 }] },
    { name: 'status-429', match: '[status-429]', replies: [{ finishReason: 'stop', status: 429 }] },
    { name: 'status-500', match: '[status-500]', replies: [{ finishReason: 'stop', status: 500 }] },
    { name: 'status-503', match: '[status-503]', replies: [{ finishReason: 'stop', status: 503 }] },
    { name: 'hang', match: '[hang]', replies: [{ finishReason: 'stop', hang: true }] },
    { name: 'stall', match: '[stall]', replies: [{ content: 'one two three four', finishReason: 'stop', chunkDelayMs: 60_000 }] },
    { name: 'cut', match: '[cut]', replies: [{ content: 'one two three four five six', finishReason: 'stop', cutAfterChunks: 3 }] },
    { name: 'short', match: '[short]', replies: [{ content: 'one two three four five six', finishReason: 'stop', endAfterChunks: 3 }] },
  ],
});

/** A chat request whose system message carries `marker` (the script's selector). */
export function chatRequest(marker: string, extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages: [
      { role: 'system', content: `You are a test assistant. ${marker}` },
      { role: 'user', content: 'Say something.' },
    ],
    tools: [],
    ...extra,
  };
}

const pid = ProcessId.parse('process:model-test');
const ref = Deployment.create({ definition: echoDefinition, implementationDigest: Digest.of('model-test:impl'), configurationDigest: Digest.of('model-test:config') }).ref;
let step = 0n;

/** An EffectRequest for `effect` (a fresh step each time). */
export function effectRequest(effect: Effect): EffectRequest {
  step += 1n;
  return EffectRequest.create({ processId: pid, relation: ProcessRelation.root(pid), deploymentRef: ref, stepSequence: step, batchIndex: 0, effect });
}

export function chatEffectRequest(marker: string, extra: Partial<ModelRequest> = {}): EffectRequest {
  return effectRequest(modelChatEffect(chatRequest(marker, extra)));
}

export function rawEffectRequest(payload: unknown): EffectRequest {
  return effectRequest(Effect.dispatcher(Payload.encode(payload)));
}

/** A settlement's payload error (failed and unknown settlements). */
export function errorOf(payload: Payload): { code: string; message: string; status: number | null } {
  return payload.decode<{ error: { code: string; message: string; status: number | null } }>().error;
}
