import { decodeToolRequest, toolErrorPayload, toolResultPayload } from '../../../strategies/interaction/tool-wire.js';
import type { Dispatcher, EffectRequest, ReplayPolicy } from '../../kernel/index.js';
import { Settlement } from '../../kernel/index.js';

/**
 * The `search` tool of `example.agent.research`: a deterministic search over a small built-in
 * corpus (no network), so the demo runs anywhere. A query's words are matched against each
 * document's title and text; the best three documents (by the number of distinct query words they
 * contain, then by corpus order) come back as `title: text` lines, or `no results`.
 *
 * Its replay policy is `never`: a real search API may bill per call, so a call whose outcome a crash
 * hid becomes Unknown (a person settles it) instead of running twice.
 */
export interface CorpusDocument {
  readonly title: string;
  readonly text: string;
}

export const researchCorpus: readonly CorpusDocument[] = Object.freeze([
  { title: 'Durable execution', text: 'A durable process commits every step before it acts, so a crash resumes it from its last commit instead of starting over.' },
  { title: 'Replay policy', text: 'An effect whose outcome a crash hid is replayed only when its dispatcher says the same call may run again; otherwise it is Unknown until a person settles it.' },
  { title: 'Unknown effects', text: 'An Unknown effect may or may not have happened. It is never retried silently; it waits for an explicit settlement, succeeded or failed.' },
  { title: 'ReAct agents', text: 'A ReAct agent alternates model calls and tool calls: the model reasons, calls tools, reads their results and answers when it has enough.' },
  { title: 'Human in the loop', text: 'An agent can ask a person: the question is a wait with an answer schema, listed in an inbox and answered by its process id and wait id.' },
  { title: 'Context windows', text: 'A model sees a bounded context; old tool results are the first thing to drop when a conversation grows too long.' },
]);

const words = (text: string): string[] => text.toLowerCase().match(/[a-z0-9]+/g) ?? [];

/** The top documents for `query`, as the tool's result text. Pure. */
export function searchCorpus(query: string, corpus: readonly CorpusDocument[] = researchCorpus, limit = 3): string {
  const wanted = new Set(words(query).filter((word) => word.length > 2));
  const scored = corpus
    .map((document, index) => {
      const present = new Set(words(`${document.title} ${document.text}`));
      return { document, index, score: [...wanted].filter((word) => present.has(word)).length };
    })
    .filter((entry) => entry.score > 0)
    .sort((left, right) => right.score - left.score || left.index - right.index)
    .slice(0, limit);
  return scored.length === 0 ? 'no results' : scored.map((entry) => `${entry.document.title}: ${entry.document.text}`).join('\n');
}

export function researchSearchDispatcher(): Dispatcher {
  return Object.freeze({
    async dispatch(request: EffectRequest): Promise<Settlement> {
      const decoded = decodeToolRequest(request.effect.payload);
      if (!decoded.ok) return Settlement.of('failed', toolErrorPayload('search.invalid_request', decoded.problem));
      if (decoded.tool !== 'search') return Settlement.of('failed', toolErrorPayload('search.unknown_tool', `this dispatcher serves search, not ${decoded.tool}`));
      const query = (decoded.arguments as { query?: unknown }).query;
      if (typeof query !== 'string') return Settlement.of('failed', toolErrorPayload('search.invalid_request', 'query must be a string'));
      return Settlement.of('succeeded', toolResultPayload(searchCorpus(query)));
    },
    replayPolicy: (): ReplayPolicy => 'never',
  });
}
