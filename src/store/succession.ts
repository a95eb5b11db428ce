/**
 * Where the Host records that a drifted tree moved on to a successor (src/server/succession.ts):
 * per predecessor, one succession record (JSON, written once, then completed with the successor's
 * id); per successor, its predecessor's root id. Records are text: the Host owns their shape.
 *
 * The first write of a succession record is not the store's: it rides, as a host record, in the
 * commit that installs the superseded tree's final (cancelled) head (`HostCommitter.finalizeTree`),
 * so a tree is superseded exactly when its head is that head. The store says which records that
 * commit writes ({@link SuccessionStore.supersedeRecords}) and reads them back.
 *
 * Redis: `<prefix>:{<root>}:record:succession` and `…:record:predecessor` (redis/succession-store.ts);
 * embedded: the committer's records, and the maps below.
 */

/** The record suffix of a tree's succession record. */
export const successionRecordSuffix = 'succession';

/** A record the supersede commit writes beside the superseded tree's head. */
export interface SuccessionRecordWrite {
  readonly suffix: string;
  readonly value: string;
}

export interface SuccessionStore {
  /** The succession record of `root`, or undefined. */
  read(root: string): Promise<string | undefined>;
  /** The root of the tree `root` succeeded, or undefined. */
  predecessorOf(root: string): Promise<string | undefined>;
  /** The host records the commit that supersedes a tree writes with its final head (`record` first). */
  supersedeRecords(record: string): readonly SuccessionRecordWrite[];
  /** Replaces the record of a superseded tree (its completion) and links the successor back to it. */
  complete(root: string, record: string, successor: string): Promise<void>;
}

/** Embedded mode (one process, trees in memory). */
export class MemorySuccessionStore implements SuccessionStore {
  /** Completed records (they replace what the supersede commit wrote). */
  readonly #completed = new Map<string, string>();
  readonly #predecessors = new Map<string, string>();
  readonly #committed: (root: string, suffix: string) => Promise<string | undefined>;

  /** `committed` reads a record the embedded committer wrote with a commit. */
  constructor(committed: (root: string, suffix: string) => Promise<string | undefined>) {
    this.#committed = committed;
  }

  async read(root: string): Promise<string | undefined> {
    return this.#completed.get(root) ?? (await this.#committed(root, successionRecordSuffix));
  }

  async predecessorOf(root: string): Promise<string | undefined> {
    return this.#predecessors.get(root);
  }

  supersedeRecords(record: string): readonly SuccessionRecordWrite[] {
    return [{ suffix: successionRecordSuffix, value: record }];
  }

  async complete(root: string, record: string, successor: string): Promise<void> {
    this.#predecessors.set(successor, root);
    this.#completed.set(root, record);
  }
}
