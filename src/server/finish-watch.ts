import { eventNames } from '../kernel/index.js';
import type { EventLog } from '../store/event-log.js';
import { faultOfStoppedEntry, type TreeFaultedError } from './fault-latch.js';

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
 * The same log wakes the wait when the tree's owner latches a persistence fault (fault-latch.ts): its
 * `agent.runtime.stopped` entry resolves with the owner's refusal, so a poll here ends as one on the
 * owner does (503 `runtime_stopped`), not at its timeout.
 *
 * Resolves when the finish is seen (undefined), a fault is (the refusal), `signal` aborts, or the log
 * fails or ends (the caller's head read then tells where the process stands).
 */
export async function watchForFinish(log: EventLog, root: string, processId: string, from: string, signal: AbortSignal): Promise<TreeFaultedError | undefined> {
  try {
    for await (const record of log.tail(root, from, signal)) {
      if (record.type === eventNames.processFinished && record.processId === processId) return undefined;
      if (record.type === eventNames.runtimeStopped) {
        const fault = faultOfStoppedEntry(root, record.data);
        if (fault !== undefined) return fault;
      }
    }
  } catch {
    // A failed or overflowing tail ends the wait early; the head read that follows answers.
  }
  return undefined;
}
