/**
 * A tree's SSE stream read with fetch + eventsource-parser rather than EventSource, because
 * EventSource cannot send an Authorization header. It resumes from the last id after a drop
 * (`Last-Event-ID`), and reports every such break so the page can show that the view resynced;
 * when retention trimmed what it missed (410 `history_trimmed`) it starts again without a cursor
 * and says there was a gap.
 */
import { createParser } from 'eventsource-parser';
import { authHeaders, enc, tokenRefused } from './api';

export type StreamState =
  | { readonly kind: 'connecting' }
  | { readonly kind: 'live'; readonly resyncs: number; readonly lastBreak?: string }
  | { readonly kind: 'reconnecting'; readonly reason: string }
  | { readonly kind: 'gap'; readonly reason: string }
  | { readonly kind: 'ended'; readonly reason: string };

export interface StreamMessage {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: Record<string, unknown>;
}

export interface TreeStreamHandlers {
  readonly onMessage: (message: StreamMessage) => void;
  readonly onState: (state: StreamState) => void;
  /** After any break: what the page shows may have missed live changes, so it reloads its views. */
  readonly onResync: () => void;
}

const retryMs = 1_000;

/** Opens the stream; the returned function closes it. */
export function openTreeStream(rootId: string, handlers: TreeStreamHandlers): () => void {
  const abort = new AbortController();
  let lastId: string | undefined;
  let resyncs = 0;
  let lastBreak: string | undefined;

  const run = async (): Promise<void> => {
    for (;;) {
      if (abort.signal.aborted) return;
      let ended: string | undefined;
      let breakReason = 'the connection closed';
      try {
        const headers: Record<string, string> = { accept: 'text/event-stream', ...authHeaders() };
        if (lastId !== undefined) headers['last-event-id'] = lastId;
        const response = await fetch(`/v1/trees/${enc(rootId)}/stream`, { headers, signal: abort.signal });
        if (response.status === 401) {
          tokenRefused();
          handlers.onState({ kind: 'ended', reason: 'a token is needed' });
          return;
        }
        if (response.status === 410) {
          // Retention trimmed what follows our cursor: start again at the oldest entry still held.
          lastId = undefined;
          handlers.onState({ kind: 'gap', reason: 'history trimmed while disconnected' });
          handlers.onResync();
          continue;
        }
        if (response.status >= 400 && response.status < 500) {
          // The tree is unknown or the request is refused: retrying would not change the answer.
          const problem = (await response.json().catch(() => ({}))) as { detail?: string };
          handlers.onState({ kind: 'ended', reason: `${response.status}: ${problem.detail ?? response.statusText}` });
          return;
        }
        if (!response.ok || response.body === null) throw new Error(`stream answered ${response.status}`);
        handlers.onState({ kind: 'live', resyncs, ...(lastBreak === undefined ? {} : { lastBreak }) });
        const parser = createParser({
          onEvent(message) {
            const event = message.event ?? 'message';
            const data = JSON.parse(message.data) as Record<string, unknown>;
            if (message.id !== undefined && message.id !== '') lastId = message.id;
            if (event === 'scope.stream.end') ended = String(data.reason ?? 'completed');
            else if (event === 'scope.stream.error') breakReason = String(data.reason ?? 'error');
            else if (event === 'scope.stream.notice') {
                  handlers.onState({ kind: 'gap', reason: 'older history was trimmed by retention' });
            }
            handlers.onMessage({ id: message.id, event, data });
          },
        });
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          parser.feed(value);
        }
      } catch (error) {
        if (abort.signal.aborted) return;
        breakReason = error instanceof Error ? error.message : String(error);
      }
      if (ended !== undefined && ended !== 'shutdown') {
        handlers.onState({ kind: 'ended', reason: ended });
        return;
      }
      resyncs += 1;
      lastBreak = ended === 'shutdown' ? 'the server shut down' : breakReason;
      handlers.onState({ kind: 'reconnecting', reason: lastBreak });
      await new Promise((resolve) => setTimeout(resolve, retryMs));
      handlers.onResync();
    }
  };
  void run().then(() => undefined, () => undefined);
  return () => abort.abort();
}
