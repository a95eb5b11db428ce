/**
 * The recorded conversation of `example.agent.research` that the scripted model server replays
 * when no real endpoint is configured (the model script format is src/server/model/model-script.ts).
 * It is matched by the agent's system prompt, and its replies are numbered by how many assistant
 * messages a request already holds:
 *
 * 0. search the corpus and ask the person which aspect matters (two tool calls, one batch);
 * 1. a second search, informed by the answer;
 * 2. the final answer, citing the documents.
 */
export const researchConversation = Object.freeze({
  name: 'example.agent.research',
  match: 'example.agent.research',
  replies: [
    {
      toolCalls: [
        { id: 'call_search_1', name: 'search', arguments: '{"query":"durable execution crash"}' },
        { id: 'call_ask_1', name: 'ask_human', arguments: '{"question":"Which matters most to you: cost, latency or safety?"}' },
      ],
      finishReason: 'tool_calls',
    },
    {
      content: 'Checking how outcomes hidden by a crash are handled.',
      toolCalls: [{ id: 'call_search_2', name: 'search', arguments: '{"query":"unknown effects replay policy"}' }],
      finishReason: 'tool_calls',
    },
    {
      content:
        'Scope keeps an agent safe across crashes: every step is committed before it acts, so a crash resumes from the last commit (Durable execution), and a call whose outcome a crash hid is never run twice: it stays Unknown until a person settles it (Replay policy, Unknown effects).',
      finishReason: 'stop',
    },
  ],
});
