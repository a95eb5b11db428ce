import { connect } from 'node:net';

/**
 * The load side of `bench:scale`'s SSE part, run as a child process (`fork`) so that parsing the
 * frames of hundreds of sockets does not share one event loop with the appender or the other
 * subscribers: each child holds its share of the SSE subscribers and measures each delta's latency
 * on the machine-wide monotonic clock ({@link monotonicMs}), which the appender stamps in another
 * process.
 *
 * Protocol over IPC (advanced serialisation, so samples travel as one typed array):
 * parent → `{ open: { url, count } }`, child → `{ ready: true }` once every stream delivered its first
 * bytes (or `{ error }`); parent → `{ expect: n }` (deltas appended), child → `{ complete: true }` once
 * each of its streams received n; parent → `{ collect: true }`, child → `{ samples, received }`, exits.
 */

/** Milliseconds on CLOCK_MONOTONIC: the same clock in every process of the machine (unlike `performance.now()`). */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Latency samples (ms), preallocated: N subscribers × deltas can run into millions. */
export class Samples {
  #values = new Float64Array(1 << 16);
  #length = 0;

  add(value: number): void {
    if (this.#length === this.#values.length) {
      const grown = new Float64Array(this.#values.length * 2);
      grown.set(this.#values);
      this.#values = grown;
    }
    this.#values[this.#length] = value;
    this.#length += 1;
  }

  addAll(values: Float64Array): void {
    for (const value of values) this.add(value);
  }

  get length(): number {
    return this.#length;
  }

  values(): Float64Array {
    return this.#values.slice(0, this.#length);
  }

  sorted(): Float64Array {
    return this.values().sort();
  }
}

export type ParentMessage =
  | { readonly open: { readonly url: string; readonly count: number } }
  | { readonly expect: number }
  | { readonly collect: true };
export type ChildMessage =
  | { readonly ready: true }
  | { readonly complete: true }
  | { readonly error: string }
  | { readonly samples: Float64Array; readonly received: number };

const sentAtPattern = /"sentAt":([0-9.]+)/g;

/**
 * One SSE subscriber on a plain TCP socket: it writes the GET itself and scans what arrives for each
 * frame's `sentAt`, without Node's HTTP parser and stream layers (its subscribers share the machine
 * with the node; a heavier client would measure itself). Frames never straddle an HTTP chunk's size
 * line (the node writes whole frames per chunk), so the bytes up to the last blank line hold whole
 * frames. `ready` resolves once the 200 status line came.
 */
function subscribe(url: string, samples: Samples, counted: () => void): { ready: Promise<void>; close(): void } {
  const target = new URL(url);
  let carry = '';
  let headed = false;
  const socket = connect(Number(target.port), target.hostname);
  socket.setEncoding('latin1');
  const ready = new Promise<void>((resolve, reject) => {
    socket.once('connect', () => {
      socket.write(`GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\nAccept: text/event-stream\r\n\r\n`);
    });
    socket.on('data', (chunk: string) => {
      const now = monotonicMs();
      let text = carry + chunk;
      if (!headed) {
        const headEnd = text.indexOf('\r\n\r\n');
        if (headEnd < 0) {
          carry = text;
          return;
        }
        if (!text.startsWith('HTTP/1.1 200')) {
          reject(new Error(`stream answered ${text.slice(0, text.indexOf('\r\n'))}`));
          socket.destroy();
          return;
        }
        headed = true;
        resolve();
        text = text.slice(headEnd + 4);
      }
      const end = text.lastIndexOf('\n\n');
      if (end < 0) {
        carry = text;
        return;
      }
      carry = text.slice(end + 2);
      for (const match of text.slice(0, end).matchAll(sentAtPattern)) {
        samples.add(now - Number(match[1]));
        counted();
      }
    });
    socket.on('error', reject);
  });
  return { ready, close: () => socket.destroy() };
}

async function serve(): Promise<void> {
  const send = (message: ChildMessage): void => {
    process.send?.(message);
  };
  const samples = new Samples();
  const clients: ReturnType<typeof subscribe>[] = [];
  let received = 0;
  let expected = Number.POSITIVE_INFINITY;
  const counted = (): void => {
    received += 1;
    if (received === expected) send({ complete: true });
  };
  process.on('message', (message: ParentMessage) => {
    if ('open' in message) {
      void (async () => {
        try {
          // In batches of 50, so the node's accept queue and its stream cap's "opening" count stay modest.
          for (let at = 0; at < message.open.count; at += 50) {
            const batch = Array.from({ length: Math.min(50, message.open.count - at) }, () => subscribe(message.open.url, samples, counted));
            clients.push(...batch);
            await Promise.all(batch.map((client) => client.ready));
          }
          send({ ready: true });
        } catch (error) {
          send({ error: (error as Error).message });
        }
      })();
    } else if ('expect' in message) {
      expected = message.expect * clients.length;
      if (received >= expected) send({ complete: true });
    } else {
      for (const client of clients) client.close();
      // Disconnecting once the answer is out lets the child exit on its own.
      process.send?.({ samples: samples.values(), received } satisfies ChildMessage, () => process.disconnect());
    }
  });
}

if (process.send !== undefined) void serve();
