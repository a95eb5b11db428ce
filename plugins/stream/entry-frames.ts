import type { LogEntry } from '../../src/server/host.js';
import { encodeMessage, httpChunk, type FrameBatch } from './sse-writer.js';

/**
 * The SSE frames of log entries (`id:` the position, `event:` the type, `data:` the canonical JSON as
 * the log holds it), encoded to bytes once per entry object. The Host hands every stream of a node the
 * same entry object for one live entry, so a delta fanned out to a thousand streams is checked,
 * concatenated, UTF-8 encoded and framed as an HTTP chunk once, and every stream writes identical bytes. Entries are immutable
 * values (the Host's are frozen), so a frame never goes stale.
 *
 * Only recent frames are kept: every stream writes a live entry within moments of the others, and
 * embedded mode's log keeps its entries for good, so caching by entry for their lifetime would double
 * what a streamed log holds.
 */
class Recent<Key, Value> {
  readonly #values = new Map<Key, Value>();

  constructor(private readonly capacity: number) {}

  get(key: Key): Value | undefined {
    return this.#values.get(key);
  }

  set(key: Key, value: Value): void {
    if (this.#values.size >= this.capacity) this.#values.delete(this.#values.keys().next().value as Key);
    this.#values.set(key, value);
  }
}

const singles = new Recent<LogEntry, FrameBatch>(2_048);

/** The frame of one entry, as a batch of one. */
function single(entry: LogEntry): FrameBatch {
  let batch = singles.get(entry);
  if (batch === undefined) {
    const frame = Buffer.from(encodeMessage({ id: entry.position, event: entry.type, json: entry.data }), 'utf8');
    batch = { frames: [frame], bytes: frame, chunk: httpChunk(frame) };
    singles.set(entry, batch);
  }
  return batch;
}

export function entryFrame(entry: LogEntry): Buffer {
  return single(entry).bytes as Buffer;
}

/** The last batches, by their first entry: streams that keep up receive the same batches. */
const batches = new Recent<LogEntry, { readonly entries: readonly LogEntry[]; readonly frames: FrameBatch }>(64);

function sameEntries(a: readonly LogEntry[], b: readonly LogEntry[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index += 1) if (a[index] !== b[index]) return false;
  return true;
}

/**
 * The frames of `entries` (not empty) and their concatenation, shared by every stream that gets the
 * same entries in one batch (the streams that keep up with the tail), so a batch is joined once.
 */
export function batchFrames(entries: readonly LogEntry[]): FrameBatch {
  const first = entries[0] as LogEntry;
  if (entries.length === 1) return single(first);
  const known = batches.get(first);
  if (known !== undefined && sameEntries(known.entries, entries)) return known.frames;
  const parts = entries.map(entryFrame);
  const bytes = Buffer.concat(parts);
  const built: FrameBatch = { frames: parts, bytes, chunk: httpChunk(bytes) };
  batches.set(first, { entries: [...entries], frames: built });
  return built;
}
