import type { CommitContext } from '../kernel/index.js';
import type { Agency } from './signal-agency.js';

/** What the tree view shows of one admitted control. */
export interface ControlRecordEntry {
  readonly action: 'pause' | 'resume' | 'cancel' | 'kill';
  /** `process` (POST /v1/processes/{id}/…), `tree` (POST /v1/trees/{rootId}/…) or `bulk` (POST /v1/processes:bulk). */
  readonly scope: 'process' | 'tree' | 'bulk';
  /** The process addressed (the root for tree-wide and bulk controls). */
  readonly processId: string;
  /** Whether a person or the machine sent it, as the server saw it (signal-agency.ts's rule). */
  readonly agency: Agency;
  /** When the server admitted it (its commit is acknowledged right after). */
  readonly at: string;
}

/** The record beside a tree's head listing its admitted controls. */
export const controlRecordSuffix = 'controls';
/** The most recent controls kept per tree (older ones drop off). */
export const maxControlEntries = 100;

const hostValueKey = 'scope.control';

/** The host values a control hands the kernel (`ControlOptions.hostValues`): they come back with its commit. */
export function controlHostValues(entry: ControlRecordEntry): Readonly<Record<string, unknown>> {
  return { [hostValueKey]: entry };
}

/** A record write of one commit. */
export interface ControlRecordWrite {
  readonly suffix: string;
  readonly value: string;
}

/**
 * The agency of every admitted control (issue 16), kept like a signal's (signal-agency.ts): the kernel
 * hands a control's host values to the committer with the commit that records the control (the first
 * commit of its turn), and the committer rewrites the tree's `controls` record in that same commit. So
 * an entry exists exactly when the control's commit is acknowledged, and only the server writes it: a
 * caller cannot name an agency. The owner keeps the last committed value in memory (the tree view of a
 * resident tree is served without a storage read).
 */
export class ControlAgency {
  /** Per root: the record as last committed here. */
  readonly #known = new Map<string, string>();

  /** The record write of a commit (none for a commit that records no control), and what to call once acknowledged. */
  async recordFor(rootId: string, context: CommitContext | undefined, read: () => Promise<string | undefined>): Promise<ControlPlan | undefined> {
    const entry = context?.hostValues?.[hostValueKey] as ControlRecordEntry | undefined;
    if (entry === undefined) return undefined;
    const before = this.#known.get(rootId) ?? (await read());
    const value = JSON.stringify([...decodeControlRecord(before), entry].slice(-maxControlEntries));
    return { write: { suffix: controlRecordSuffix, value }, committed: () => this.#known.set(rootId, value) };
  }

  /** The record as last committed by this node (undefined when not known here). */
  known(rootId: string): string | undefined {
    return this.#known.get(rootId);
  }

  /** Remembers a record read from storage. */
  learned(rootId: string, value: string | undefined): void {
    this.#known.set(rootId, value ?? '[]');
  }

  /** The tree left this node, or another may have written it: read again. */
  forget(rootId: string): void {
    this.#known.delete(rootId);
  }
}

export interface ControlPlan {
  readonly write: ControlRecordWrite;
  committed(): void;
}

export function decodeControlRecord(text: string | undefined): ControlRecordEntry[] {
  if (text === undefined || text === '') return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? (value as ControlRecordEntry[]) : [];
  } catch {
    return [];
  }
}
