import { type Event, eventNames, type TreeSnapshot } from '../kernel/index.js';

/** Whether a person or the machine sent a signal (issue 16), as the server saw it. */
export type Agency = 'user' | 'machine';

/** A record the committer adds to a commit (beside its head). */
export interface AgencyRecordWrite {
  readonly suffix: string;
  readonly value: string;
}

/** Inclusive ranges of arrival sequences. */
type Ranges = Array<[number, number]>;

export function agencyRecordSuffix(processId: string): string {
  return `agency:${processId}`;
}

/**
 * The agency of every admitted signal, kept in the smallest durable place that needs no kernel change:
 * one record per process beside the tree's head, `agency:<processId>`, listing the arrival sequences a
 * person sent as ranges (`1-1,4-6`). Everything else is the machine's: engine-minted records
 * (settlements, wait openings, child-wait answers), signal_child, cross-tree messages and policy
 * answers. The record is rewritten by the very commit that admits the signals (the host committer
 * asks {@link recordsFor}), so it is exactly as durable as the receipts it describes; the owner keeps
 * the current value in memory (read once after it gained the tree).
 *
 * The server marks deliveries it received from people (HTTP callers) with {@link markUser}; a caller
 * cannot mark anything.
 */
export class SignalAgency {
  readonly #pending = new Map<string, number>();
  /** Per root, per process: the user ranges as last committed here. */
  readonly #known = new Map<string, Map<string, Ranges>>();

  /** Marks the signals of one delivery as a person's; the returned function unmarks them (call it when it settled). */
  markUser(processId: string, signalIds: readonly string[]): () => void {
    const keys = signalIds.map((id) => `${processId} ${id}`);
    for (const key of keys) this.#pending.set(key, (this.#pending.get(key) ?? 0) + 1);
    return () => {
      for (const key of keys) {
        const left = (this.#pending.get(key) ?? 1) - 1;
        if (left <= 0) this.#pending.delete(key);
        else this.#pending.set(key, left);
      }
    };
  }

  /**
   * The agency records a commit rewrites: one per process that admits a person's signal in it. `read`
   * fetches the stored record of a process this node has not seen yet.
   */
  async recordsFor(snapshot: TreeSnapshot, events: readonly Event[], read: (suffix: string) => Promise<string | undefined>): Promise<AgencyPlan> {
    const root = snapshot.rootId.toString();
    const added = new Map<string, number[]>();
    for (const event of events) {
      if (event.name !== eventNames.signalAccepted) continue;
      const accepted = event.signalAccepted();
      const processId = event.processId.toString();
      if (accepted === undefined || !this.#pending.has(`${processId} ${accepted.signalId.toString()}`)) continue;
      const index = snapshot.process(event.processId)?.mailbox.indexOf(accepted.signalId);
      if (index === undefined) continue;
      added.set(processId, [...(added.get(processId) ?? []), index + 1]);
    }
    if (added.size === 0) return noAgencyWrites;
    const known = this.#known.get(root);
    const writes: AgencyRecordWrite[] = [];
    const next = new Map<string, Ranges>();
    for (const [processId, sequences] of added) {
      const suffix = agencyRecordSuffix(processId);
      const before = known?.get(processId) ?? decodeRanges(await read(suffix));
      const after = sequences.reduce(addSequence, before.map((range): [number, number] => [range[0], range[1]]));
      writes.push({ suffix, value: encodeRanges(after) });
      next.set(processId, after);
    }
    // Remembered only once the commit is acknowledged: a refused commit changed nothing.
    const committed = (): void => {
      const current = this.#known.get(root) ?? new Map<string, Ranges>();
      for (const [processId, ranges] of next) current.set(processId, ranges);
      this.#known.set(root, current);
    };
    return { writes, committed };
  }

  /** The tree left this node (released, taken over elsewhere, purged): what it knew may be stale. */
  forget(root: string): void {
    this.#known.delete(root);
  }
}

/** The agency records of one commit, and what to call once it is acknowledged. */
export interface AgencyPlan {
  readonly writes: readonly AgencyRecordWrite[];
  committed(): void;
}

const noAgencyWrites: AgencyPlan = Object.freeze({ writes: Object.freeze([]), committed: () => undefined });

/** The agency of the receipt at `arrivalSequence` with id `signalId`, from the process's stored record. */
export function agencyOf(record: string | undefined, signalId: string, arrivalSequence: number): Agency {
  if (signalId.startsWith('signal:engine:')) return 'machine';
  return decodeRanges(record).some(([from, to]) => arrivalSequence >= from && arrivalSequence <= to) ? 'user' : 'machine';
}

function addSequence(ranges: Ranges, sequence: number): Ranges {
  const last = ranges.at(-1);
  if (last !== undefined && sequence === last[1] + 1) last[1] = sequence;
  else if (last === undefined || sequence > last[1]) ranges.push([sequence, sequence]);
  return ranges;
}

function encodeRanges(ranges: Ranges): string {
  return ranges.map(([from, to]) => `${from}-${to}`).join(',');
}

function decodeRanges(text: string | undefined): Ranges {
  if (text === undefined || text === '') return [];
  const ranges: Ranges = [];
  for (const part of text.split(',')) {
    const match = /^(\d+)-(\d+)$/.exec(part);
    if (match !== null) ranges.push([Number(match[1]), Number(match[2])]);
  }
  return ranges;
}
