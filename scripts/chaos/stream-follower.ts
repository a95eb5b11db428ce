/**
 * An SSE reader that follows one tree to its end across node deaths, as a browser's EventSource
 * would: it reads `GET /v1/trees/{rootId}/stream` from a random live node and, whenever the stream
 * breaks (node killed, `scope.stream.error`, a refused connection), reconnects to another live node
 * with `Last-Event-ID` = the last id it received. It keeps every message it got, for the check that
 * the stream showed each committed event once and in order.
 */
import { createParser } from 'eventsource-parser';
import type { Cluster } from './cluster.js';
import type { Prng } from './prng.js';

export interface StreamMessage {
  readonly id: string | undefined;
  readonly event: string;
  /** `phase` of the entry's data (`committed` for committed kernel events). */
  readonly phase: string | undefined;
}

export class StreamFollower {
  readonly rootId: string;
  readonly messages: StreamMessage[] = [];
  /** Connections opened after the first. */
  reconnects = 0;
  /** `scope.stream.end` arrived: the tree is done and the stream said so. */
  ended = false;
  readonly #cluster: Cluster;
  readonly #rng: Prng;
  readonly #stop = new AbortController();
  #lastId: string | undefined;
  #done: Promise<void> | undefined;

  constructor(cluster: Cluster, rng: Prng, rootId: string) {
    this.#cluster = cluster;
    this.#rng = rng;
    this.rootId = rootId;
  }

  /** Ids of the committed events received, in arrival order. */
  committedIds(): string[] {
    return this.messages.filter((message) => message.phase === 'committed' && message.id !== undefined).map((message) => message.id as string);
  }

  start(): void {
    this.#done ??= this.#follow();
  }

  /** Stops reading (the run is over) and waits for the reader to let go. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done;
  }

  async #follow(): Promise<void> {
    for (let connection = 0; !this.ended && !this.#stop.signal.aborted; connection += 1) {
      if (connection > 0) {
        this.reconnects += 1;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const live = this.#cluster.liveNodes();
      if (live.length === 0) continue;
      const node = this.#rng.pick(live);
      try {
        await this.#read(`${node.url}/v1/trees/${encodeURIComponent(this.rootId)}/stream`);
      } catch {
        // The node died or refused: reconnect elsewhere with the last id.
      }
    }
  }

  async #read(url: string): Promise<void> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (this.#lastId !== undefined) headers['last-event-id'] = this.#lastId;
    const response = await fetch(url, { headers, signal: this.#stop.signal });
    if (response.status !== 200 || response.body === null) {
      await response.body?.cancel();
      return;
    }
    let broken = false;
    const parser = createParser({
      onEvent: (message) => {
        if (message.event === 'scope.stream.end') this.ended = true;
        if (message.event === 'scope.stream.error') broken = true;
        let phase: string | undefined;
        try {
          const data = JSON.parse(message.data) as { phase?: unknown };
          phase = typeof data.phase === 'string' ? data.phase : undefined;
        } catch {
          phase = undefined;
        }
        this.messages.push({ id: message.id, event: message.event ?? 'message', phase });
        if (message.id !== undefined && message.id !== '') this.#lastId = message.id;
      },
    });
    const decoder = new TextDecoder();
    for await (const chunk of response.body) {
      parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
      if (this.ended || broken) break;
    }
  }
}
