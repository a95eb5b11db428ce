import { Event, eventNames, type ProcessSnapshot, type TreeSnapshot, type WaitId } from '../kernel/index.js';
import type { EventLog, StoredLogRecord } from '../store/event-log.js';

/**
 * What "an open wait" means for the inbox, in one place, so the writer of the wait index and every
 * reader that verifies it agree: a non-terminal process whose current wait is in its mailbox and
 * unanswered. Status does not matter (a paused process keeps its wait open), so an entry cannot be
 * judged stale while its wait may still be answered.
 */
export interface OpenWait {
  readonly process: ProcessSnapshot;
  readonly waitId: WaitId;
}

export function openWaitOf(process: ProcessSnapshot): OpenWait | undefined {
  const waitId = process.waitId;
  if (process.isTerminal || waitId === undefined) return undefined;
  const wait = process.mailbox.wait(waitId);
  if (wait === undefined || wait.answered) return undefined;
  return { process, waitId };
}

export function openWaitsOf(tree: TreeSnapshot): OpenWait[] {
  const waits: OpenWait[] = [];
  for (const process of tree.processSnapshots()) {
    const open = openWaitOf(process);
    if (open !== undefined) waits.push(open);
  }
  return waits;
}

/**
 * When each named process's current wait opened, replayed from the tree's log: the `occurredAt` of
 * the `agent.step.committed` (waiting) that opened it; a resume back into the same wait does not
 * move it. Processes whose opening entry retention trimmed are absent.
 */
export async function waitOpenings(log: EventLog, root: string, processIds: readonly string[]): Promise<Map<string, string>> {
  const since = new Map<string, string>();
  const wanted = new Set(processIds);
  let cursor = '0';
  for (;;) {
    const page: StoredLogRecord[] = await log.readAfter(root, cursor, 500);
    for (const record of page) {
      cursor = record.position;
      if (!wanted.has(record.processId)) continue;
      if (record.type === eventNames.stepCommitted) {
        const event = Event.parse(record.data);
        if (event.stepCommitted()?.status === 'waiting' && !since.has(record.processId)) since.set(record.processId, event.occurredAt);
      } else if (record.type === eventNames.processFinished) {
        since.delete(record.processId);
      } else if (record.type === eventNames.signalAccepted && Event.parse(record.data).signalAccepted()?.waitId !== undefined) {
        since.delete(record.processId);
      }
    }
    if (page.length < 500) return since;
  }
}
