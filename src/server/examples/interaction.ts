import { define } from '../../../strategies/interaction/definition.js';
import { defineToolSet } from '../../../strategies/interaction/toolset.js';
import { Budget, Deployment, Digest, type Dispatcher, Quota } from '../../kernel/index.js';
import { researchSearchDispatcher } from '../dispatchers/research-search.js';

/**
 * The interaction examples (docs/strategies/interaction.md):
 * - `example.agent.research`, a ReAct agent whose tools are the ToolSet `example.agent.tools` —
 *   `search` over a small built-in corpus (src/server/dispatchers/research-search.ts) and
 *   `ask_human`, which asks a person through a wait (listed in `/v1/waits` with its answer schema);
 * - `example.agent.briefing`, an agent that delegates the summary of its topic to the sub-agent
 *   `example.agent.summarizer` (a delegate: a child whose output `{summary, sources}` is a typed
 *   artifact) while it searches the corpus itself.
 * The model is whatever model dispatcher the server is configured with (by default the in-process
 * scripted model server replaying research-script.json, which matches each agent by its system prompt).
 */
export const researchName = 'example.agent.research';
export const researchToolsName = 'example.agent.tools';
export const briefingName = 'example.agent.briefing';
export const summarizerName = 'example.agent.summarizer';

/** The system prompt; its first words are what the scripted conversation is matched by. */
export const researchSystemPrompt =
  'example.agent.research: you are a careful research assistant. Search the corpus for evidence, ask the person when their preference matters, and answer briefly, citing document titles.';

export const researchTools = defineToolSet({
  name: researchToolsName,
  description: 'The tools of example.agent.research: search (a built-in corpus) and ask_human (a question to a person).',
  tools: [
    {
      kind: 'dispatch',
      name: 'search',
      description: 'Searches the research corpus; returns the best matching documents as "title: text" lines.',
      parameters: { type: 'object', properties: { query: { type: 'string', minLength: 1 } }, required: ['query'], additionalProperties: false },
    },
    {
      kind: 'ask',
      name: 'ask_human',
      description: 'Asks the person a question and returns their answer.',
      parameters: { type: 'object', properties: { question: { type: 'string', minLength: 1 } }, required: ['question'], additionalProperties: false },
      answerSchema: { type: 'object', properties: { answer: { type: 'string', minLength: 1 } }, required: ['answer'], additionalProperties: false },
      content: (answer) => (answer as { answer: string }).answer,
    },
  ],
});

const toolBudget = Budget.of({ steps: Quota.of(8), effects: Quota.of(4), signals: Quota.of(16) });
/** A summariser run: a few model calls and search children, each child's own budget granted out of it. */
const delegateBudget = Budget.of({ steps: Quota.of(32), effects: Quota.of(32), signals: Quota.of(32) });

export const summarizerSystemPrompt =
  'example.agent.summarizer: you summarise one topic from the research corpus. Search it, then answer with JSON {"summary": "…", "sources": ["<document title>", …]} and nothing else.';
export const briefingSystemPrompt =
  'example.agent.briefing: you write a two-sentence briefing. Hand the summary of the main topic to summarize, search the corpus for anything else you need, then answer.';

/** The ToolSet and the agent; `model` serves the agent's `model.chat` Effects. */
export function interactionExamples(options: { readonly model: Dispatcher & { readonly configurationDigest: Digest } }): Deployment[] {
  const tools = Deployment.create({
    definition: researchTools.definition,
    dispatcher: researchSearchDispatcher(),
    implementationDigest: Digest.of(`scope:${researchToolsName}:implementation:v1`),
    configurationDigest: Digest.of(`scope:${researchToolsName}:configuration:v1`),
  });
  const agent = Deployment.create({
    definition: define({
      name: researchName,
      description: 'A ReAct research agent: {task} in, a short cited answer out. It searches a built-in corpus and may ask you a question (see /v1/waits).',
      system: researchSystemPrompt,
      tools: { deployment: tools, specs: researchTools.specs, budget: toolBudget },
      maxTurns: 12,
      maxToolConcurrency: 2,
      maxContextBytes: 64 * 1024,
    }),
    dispatcher: options.model,
    implementationDigest: Digest.of(`scope:${researchName}:implementation:v1`),
    // The model settings (endpoint, model name) are part of the configuration; the API key is not.
    configurationDigest: options.model.configurationDigest,
  });
  const search = { deployment: tools, specs: researchTools.specs.filter((spec) => spec.name === 'search'), budget: toolBudget };
  const summarizer = Deployment.create({
    definition: define({
      name: summarizerName,
      description: 'A sub-agent: {topic} in, {summary, sources} out, from the built-in corpus. example.agent.briefing delegates to it.',
      inputSchema: { type: 'object', properties: { topic: { type: 'string', minLength: 1 } }, required: ['topic'], additionalProperties: false },
      task: (input) => `Summarise what the corpus says about: ${(input as { topic: string }).topic}`,
      outputSchema: {
        type: 'object',
        properties: { summary: { type: 'string', minLength: 1 }, sources: { type: 'array', items: { type: 'string', minLength: 1 } } },
        required: ['summary', 'sources'],
        additionalProperties: false,
      },
      system: summarizerSystemPrompt,
      tools: search,
      maxTurns: 4,
      maxToolConcurrency: 1,
      maxContextBytes: 64 * 1024,
    }),
    dispatcher: options.model,
    implementationDigest: Digest.of(`scope:${summarizerName}:implementation:v1`),
    configurationDigest: options.model.configurationDigest,
  });
  const briefing = Deployment.create({
    definition: define({
      name: briefingName,
      description: 'A ReAct agent that delegates: {task} in, a two-sentence briefing out. It hands the summary to example.agent.summarizer and searches the corpus itself.',
      system: briefingSystemPrompt,
      tools: search,
      delegates: [
        {
          name: 'summarize',
          description: 'Hands one topic to a summariser sub-agent, which searches the corpus; returns {"summary", "sources"}.',
          deployment: summarizer,
          budget: delegateBudget,
        },
      ],
      maxTurns: 6,
      maxToolConcurrency: 2,
      maxContextBytes: 64 * 1024,
    }),
    dispatcher: options.model,
    implementationDigest: Digest.of(`scope:${briefingName}:implementation:v1`),
    configurationDigest: options.model.configurationDigest,
  });
  return [tools, agent, summarizer, briefing];
}
