import { type CurrentWait, type Event, eventNames, type ProcessSnapshot, type TreeSnapshot, type WaitId } from '../kernel/index.js';
import type { EventLog } from '../store/event-log.js';
import type { RedisWaitIndex, WaitIndexEntry } from '../store/redis/wait-index.js';
import { openWaitsOf, waitOpenings } from './open-waits.js';

/** The current wait of a process as its deployment describes it (undefined when this node lacks the descriptor). */
export type DescribeWait = (process: ProcessSnapshot) => CurrentWait | undefined;

/** One commit as the index sees it: the prospective tree, its sequence, whether it changes writer. */
export interface IndexedCommit {
  readonly snapshot: TreeSnapshot;
  readonly sequence: bigint;
  readonly activation: boolean;
  readonly events: readonly Event[];
}

/** What a commit will leave open, prepared before it; applied once the commit is acknowledged. */
export interface WaitIndexPlan {
  readonly root: string;
  readonly open: ReadonlyMap<string, WaitIndexEntry>;
}

/**
 * Keeps the Redis open-wait index a superset of the truth (`store/redis/wait-index.ts`):
 *
 * 1. Before a commit, every wait its prospective tree opens gets its entry; the commit is not sent
 *    until those writes are acknowledged (a failure is `committer_unavailable`, nothing committed).
 *    A crash after the write and before the commit leaves an entry its head does not confirm: readers
 *    skip it, and remove it once the head has moved past its commit or to another writer.
 * 2. After the commit is acknowledged, entries of waits it closed are deleted (best-effort: a crash
 *    here leaves a stale entry, which readers remove).
 *
 * An activation (restore or takeover) writes the entries of every open wait of the tree it takes,
 * if absent (an existing one keeps its `since`); a missing one takes `since` from the log. Which
 * entries this node wrote is remembered per tree, so a commit that changes no wait writes nothing.
 */
export class WaitIndexWriter {
  readonly #index: RedisWaitIndex;
  readonly #log: EventLog;
  readonly #describe: DescribeWait;
  /** root → (`<process> <wait>` → the entry this node holds for it), for trees with open waits. */
  readonly #indexed = new Map<string, ReadonlyMap<string, WaitIndexEntry>>();

  constructor(options: { index: RedisWaitIndex; log: EventLog; describe: DescribeWait }) {
    this.#index = options.index;
    this.#log = options.log;
    this.#describe = options.describe;
  }

  /** Writes the entries a commit needs before it may be sent. */
  async prepare(commit: IndexedCommit): Promise<WaitIndexPlan> {
    const root = commit.snapshot.rootId.toString();
    const waits = openWaitsOf(commit.snapshot);
    const known = commit.activation ? undefined : this.#indexed.get(root);
    const open = new Map<string, WaitIndexEntry>();
    const fresh: WaitIndexEntry[] = [];
    /** Fresh entries whose wait this commit's events did not open (this node lost track, e.g. after a reconciled commit). */
    const untracked: number[] = [];
    for (const { process, waitId } of waits) {
      const key = `${process.processId.toString()} ${waitId.toString()}`;
      const held = known?.get(key);
      if (held !== undefined) {
        open.set(key, held);
        continue;
      }
      const opened = openingEvent(commit.events, process);
      if (opened === undefined) untracked.push(fresh.length);
      // Unknown here (the log or the stored entry may know better, below): the process's start, as the memory inbox says.
      const entry = this.#entry(commit, process, waitId, opened?.occurredAt ?? process.startedAt);
      open.set(key, entry);
      fresh.push(entry);
    }
    if (fresh.length === 0) return { root, open };
    if (commit.activation) {
      await this.#adopt(root, fresh, open);
    } else {
      if (untracked.length > 0) await this.#keepSince(fresh, untracked, open);
      // Overwritten, never written-if-absent: the entry must carry this commit's incarnation and
      // sequence, or a reader could judge it stale while this commit is still in flight.
      await this.#index.write(fresh);
    }
    return { root, open };
  }

  /** An entry this commit rewrites without having opened its wait keeps the stored `since`. */
  async #keepSince(fresh: WaitIndexEntry[], untracked: readonly number[], open: Map<string, WaitIndexEntry>): Promise<void> {
    const stored = await this.#index.read(untracked.map((at) => fresh[at] as WaitIndexEntry));
    untracked.forEach((at, index) => {
      const since = sinceOf(stored[index]);
      const entry = fresh[at] as WaitIndexEntry;
      if (since === undefined) return;
      const kept = { ...entry, since };
      fresh[at] = kept;
      open.set(`${entry.processId} ${entry.waitId}`, kept);
    });
  }

  /** The commit was acknowledged: remember what it left open and forget the entries of waits it closed. */
  async acknowledged(plan: WaitIndexPlan): Promise<void> {
    const before = this.#indexed.get(plan.root);
    if (plan.open.size === 0) this.#indexed.delete(plan.root);
    else this.#indexed.set(plan.root, plan.open);
    if (before === undefined) return;
    const closed = [...before].filter(([key]) => !plan.open.has(key)).map(([, entry]) => entry);
    if (closed.length > 0) await this.#index.forget(closed).catch(() => undefined);
  }

  /** Deletes the entries of every open wait of `head`, whose tree no writer opens or closes a wait of again (a superseded tree). */
  async closeAll(head: TreeSnapshot): Promise<void> {
    const root = head.rootId.toString();
    this.#indexed.delete(root);
    const entries = openWaitsOf(head).map(({ process, waitId }) => ({ rootId: root, processId: process.processId.toString(), waitId: waitId.toString() }));
    if (entries.length > 0) await this.#index.forget(entries);
  }

  /** A purged or released tree: nothing of it is remembered (its entries were already removed or are verified away). */
  forget(root: string): void {
    this.#indexed.delete(root);
  }

  /** Activation: keep existing entries (and their `since`), add the missing ones with `since` from the log. */
  async #adopt(root: string, entries: WaitIndexEntry[], open: Map<string, WaitIndexEntry>): Promise<void> {
    const stored = await this.#index.read(entries);
    const missing = entries.filter((_entry, index) => stored[index] === undefined);
    if (missing.length === 0) return;
    const since = await waitOpenings(this.#log, root, missing.map((entry) => entry.processId)).catch(() => new Map<string, string>());
    const written = missing.map((entry) => ({ ...entry, since: since.get(entry.processId) ?? entry.since }));
    for (const entry of written) open.set(`${entry.processId} ${entry.waitId}`, entry);
    await this.#index.writeMissing(written);
  }

  #entry(commit: IndexedCommit, process: ProcessSnapshot, waitId: WaitId, since: string): WaitIndexEntry {
    const current = this.#describe(process);
    return {
      rootId: commit.snapshot.rootId.toString(),
      processId: process.processId.toString(),
      waitId: waitId.toString(),
      incarnation: commit.snapshot.incarnationId.toString(),
      sequence: commit.sequence.toString(),
      since,
      answerSchema: current?.answerSchema?.json() ?? null,
      description: current?.description ?? null,
    };
  }
}

/** The committed `agent.step.committed` (waiting) of the process in this commit: when its wait opened. */
function openingEvent(events: readonly Event[], process: ProcessSnapshot): Event | undefined {
  const pid = process.processId.toString();
  return events.find((event) => event.name === eventNames.stepCommitted && event.processId.toString() === pid && event.stepCommitted()?.status === 'waiting');
}

function sinceOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    const since = (JSON.parse(value) as { since?: unknown }).since;
    return typeof since === 'string' ? since : undefined;
  } catch {
    return undefined;
  }
}
