/**
 * The workload's HTTP client, as a client of a multi-node deployment behaves: each request goes to
 * a random live node; a request that reaches no answer (connection refused or reset: the node died)
 * or a 5xx is sent again to another node, with the same body and headers (so a start carries its
 * Idempotency-Key and a signal its id), until a deadline.
 */
import type { Cluster, Member } from './cluster.js';
import type { Prng } from './prng.js';

export interface Answer {
  readonly status: number;
  readonly body: any;
  /** The node that answered, and its generation when it did. */
  readonly node: Member;
  readonly generation: number;
  /** Every node tried before it, with its generation then (the first may have committed and died). */
  readonly tried: ReadonlyArray<{ readonly node: Member; readonly generation: number }>;
}

export interface RequestOptions {
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** Send to this node (first); default a random live one. */
  readonly node?: Member;
  /** Give up after this long (default 60 s). */
  readonly deadlineMs?: number;
  /** Answers with these statuses are returned, not retried (default: every status below 500). */
  readonly retryOn?: (status: number, body: any) => boolean;
}

export class GiveUp extends Error {}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Client {
  readonly #cluster: Cluster;
  readonly #rng: Prng;
  /** Requests sent, and how many were sent again after a dead node or a 5xx. */
  requests = 0;
  retries = 0;

  constructor(cluster: Cluster, rng: Prng) {
    this.#cluster = cluster;
    this.#rng = rng;
  }

  randomNode(): Member | undefined {
    const live = this.#cluster.liveNodes();
    return live.length === 0 ? undefined : this.#rng.pick(live);
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<Answer> {
    const deadline = Date.now() + (options.deadlineMs ?? 60_000);
    const tried: Array<{ node: Member; generation: number }> = [];
    let preferred = options.node;
    let last = 'no live node';
    for (let round = 0; ; round += 1) {
      if (Date.now() > deadline) throw new GiveUp(`${method} ${path}: gave up after ${round} tries (${last})`);
      const node = preferred !== undefined && preferred.up ? preferred : this.randomNode();
      preferred = undefined;
      if (node === undefined) {
        await pause(100);
        continue;
      }
      const generation = node.generation;
      this.requests += 1;
      if (round > 0) this.retries += 1;
      try {
        const response = await fetch(`${node.url}${path}`, {
          method,
          headers: { ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
          signal: AbortSignal.timeout(Math.max(1_000, Math.min(30_000, deadline - Date.now()))),
        });
        const text = await response.text();
        let body: any;
        try {
          body = text === '' ? undefined : JSON.parse(text);
        } catch {
          body = text;
        }
        const retry = options.retryOn?.(response.status, body) ?? response.status >= 500;
        if (!retry) return { status: response.status, body, node, generation, tried };
        last = `${node.name} answered ${response.status} ${body?.code ?? ''}`;
      } catch (error) {
        last = `${node.name}: ${(error as Error).message}`;
      }
      tried.push({ node, generation });
      await pause(Math.min(1_000, 50 * 2 ** Math.min(round, 4)));
    }
  }
}
