import type { LogEntry } from '../../src/server/host.js';
import { encodeMessage } from './sse-writer.js';

/**
 * The SSE frame of a log entry (`id:` its position, `event:` its type, `data:` its canonical JSON as
 * the log holds it), encoded once per entry object. The Host hands every stream of a node the same
 * entry object for one live entry, so a delta fanned out to a thousand streams is checked and
 * concatenated once, and every stream writes identical bytes. Entries are immutable values (the
 * Host's are frozen), so a frame never goes stale; the cache holds nothing once the entry is gone.
 */
const frames = new WeakMap<LogEntry, string>();

export function entryFrame(entry: LogEntry): string {
  let frame = frames.get(entry);
  if (frame === undefined) {
    frame = encodeMessage({ id: entry.position, event: entry.type, json: entry.data });
    frames.set(entry, frame);
  }
  return frame;
}
