import { eventNames } from '../kernel/index.js';
import type { EventLog } from '../store/event-log.js';

/**
 * Waits for a process to finish by its tree's log, for a long poll on a node that does not run the
 * tree (another node does, or none yet): the log's tail — in Redis mode one subscription to the node's
 * shared tail — wakes the wait on the process's `agent.process.finished` entry, which exists exactly
 * when the commit that finished it is installed. No polling loop: a wait costs nothing until the log
 * moves. The caller reads the head again afterwards, whatever ended the wait.
 *
 * `from` is a log position read before the head the caller found unfinished, so a finish committed
 * between that read and this wait is in the log after `from`.
 *
 * Resolves when the finish is seen, `signal` aborts, or the log fails or ends (the caller's head read
 * then tells where the process stands).
 */
export async function watchForFinish(log: EventLog, root: string, processId: string, from: string, signal: AbortSignal): Promise<void> {
  try {
    for await (const record of log.tail(root, from, signal)) {
      if (record.type === eventNames.processFinished && record.processId === processId) return;
    }
  } catch {
    // A failed or overflowing tail ends the wait early; the head read that follows answers.
  }
}
