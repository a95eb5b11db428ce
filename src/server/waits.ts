import { type DeploymentRef, type Descriptor, Event, eventNames, type ProcessSnapshot } from '../kernel/index.js';
import type { EventLog, StoredLogRecord } from '../store/event-log.js';
import type { Json, WaitQuery, WaitView } from './host.js';
import type { TreeResidency } from './residency.js';

/**
 * The inbox: every unanswered external or child wait of the processes this server owns, with when
 * each opened. `since` is the `occurredAt` of the committed `agent.step.committed` (status waiting)
 * that opened the wait — taken from the event as it is published, and, for a tree restored here,
 * from the tree's log — so it never moves on a restore or a pause/resume.
 */
export class WaitInbox {
  readonly #residency: TreeResidency;
  readonly #log: EventLog;
  /** process id → when its current wait opened. */
  readonly #since = new Map<string, string>();
  readonly #descriptorOf: (ref: DeploymentRef) => Descriptor;

  /** `descriptorOf` is the catalog's: a tree this server owns always resolves (it restored or started it). */
  constructor(residency: TreeResidency, log: EventLog, descriptorOf: (ref: DeploymentRef) => Descriptor) {
    this.#residency = residency;
    this.#log = log;
    this.#descriptorOf = descriptorOf;
  }

  /** Follows one published (or replayed) event. */
  observe(event: Pick<Event, 'name' | 'processId' | 'occurredAt' | 'stepCommitted' | 'signalAccepted'>): void {
    const pid = event.processId.toString();
    switch (event.name) {
      case eventNames.stepCommitted:
        // A resume back into the same wait commits `waiting` again: the wait did not reopen.
        if (event.stepCommitted()?.status === 'waiting' && !this.#since.has(pid)) this.#since.set(pid, event.occurredAt);
        break;
      case eventNames.signalAccepted:
        if (event.signalAccepted()?.waitId !== undefined) this.#since.delete(pid);
        break;
      case eventNames.processFinished:
        this.#since.delete(pid);
        break;
      default:
        break;
    }
  }

  /**
   * After a restore: replays the tree's committed wait facts from its log, so `since` is what it was
   * when the wait opened, not the restore's time. If retention trimmed the opening entry, `since`
   * falls back to the process's start time (never to the restore's).
   */
  async restored(root: string, processIds: readonly string[]): Promise<void> {
    for (const pid of processIds) this.#since.delete(pid);
    const wanted = new Set(processIds);
    let cursor = '0';
    for (;;) {
      const page: StoredLogRecord[] = await this.#log.readAfter(root, cursor, 500);
      for (const record of page) {
        cursor = record.position;
        if (!wanted.has(record.processId) || !isWaitFact(record.type)) continue;
        this.observe(Event.parse(record.data));
      }
      if (page.length < 500) return;
    }
  }

  /** Unanswered waits of the trees this server owns (hibernated ones from their heads), oldest first. */
  async list(query: WaitQuery = {}): Promise<WaitView[]> {
    const waits: WaitView[] = [];
    const roots = query.rootId === undefined ? [...this.#residency.localRoots(), ...this.#residency.hibernatedRoots()] : [query.rootId];
    for (const root of roots) {
      const snapshots = await this.#snapshotsOf(root);
      for (const snapshot of snapshots) {
        const waitId = snapshot.waitId;
        const waitKind = snapshot.waitKind;
        if (snapshot.isTerminal || waitId === undefined || waitKind === undefined) continue;
        if (query.deployment !== undefined && snapshot.deploymentRef.name !== query.deployment) continue;
        const wait = snapshot.mailbox.wait(waitId);
        if (wait === undefined || wait.answered) continue;
        const current = snapshot.currentWait(this.#descriptorOf(snapshot.deploymentRef));
        if (current === undefined) continue;
        const pid = snapshot.processId.toString();
        waits.push({
          processId: pid,
          rootId: root,
          waitId: waitId.toString(),
          waitKind,
          key: current.key.toString(),
          deployment: snapshot.deploymentRef.name,
          since: this.#since.get(pid) ?? snapshot.startedAt,
          answerSchema: current.answerSchema === undefined ? null : (JSON.parse(current.answerSchema.json()) as Json),
          prompt: current.prompt ?? null,
          description: current.description ?? null,
        });
      }
    }
    return waits.sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : 0));
  }

  /** The members of a tree this server owns: from its runtime, or, hibernated, from its head. */
  async #snapshotsOf(root: string): Promise<readonly ProcessSnapshot[]> {
    const inspection = this.#residency.inspectLocal(root);
    if (inspection !== undefined) return inspection.stopped ? [] : inspection.processes.map((process) => process.snapshot);
    if (!this.#residency.isHibernated(root)) return [];
    return (await this.#residency.loadHead(root))?.processSnapshots() ?? [];
  }
}

function isWaitFact(type: string): boolean {
  return type === eventNames.stepCommitted || type === eventNames.signalAccepted || type === eventNames.processFinished;
}
