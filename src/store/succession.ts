/**
 * Where the Host records that a drifted tree moved on to a successor (src/server/succession.ts):
 * per predecessor, one succession record (JSON, written once over the head it was decided on, then
 * completed with the successor's id); per successor, its predecessor's root id. Records are text:
 * the Host owns their shape.
 *
 * Redis: `<prefix>:{<root>}:record:succession` and `…:record:predecessor` (redis/succession-store.ts);
 * embedded: the maps below.
 */
export type SupersedeOutcome =
  | { readonly kind: 'written' }
  | { readonly kind: 'absent' }
  | { readonly kind: 'exists'; readonly record: string }
  | { readonly kind: 'head_moved' };

export interface SuccessionStore {
  /** The succession record of `root`, or undefined. */
  read(root: string): Promise<string | undefined>;
  /** The root of the tree `root` succeeded, or undefined. */
  predecessorOf(root: string): Promise<string | undefined>;
  /** Writes the record once, only while the head digest is `headDigest`; the tree is fenced from then on. */
  supersede(root: string, headDigest: string, record: string): Promise<SupersedeOutcome>;
  /** Replaces the record of a superseded tree (its completion) and links the successor back to it. */
  complete(root: string, record: string, successor: string): Promise<void>;
}

/** Embedded mode (one process, trees in memory). */
export class MemorySuccessionStore implements SuccessionStore {
  readonly #records = new Map<string, string>();
  readonly #predecessors = new Map<string, string>();
  readonly #headDigest: (root: string) => Promise<string | undefined>;

  constructor(headDigest: (root: string) => Promise<string | undefined>) {
    this.#headDigest = headDigest;
  }

  async read(root: string): Promise<string | undefined> {
    return this.#records.get(root);
  }

  async predecessorOf(root: string): Promise<string | undefined> {
    return this.#predecessors.get(root);
  }

  async supersede(root: string, headDigest: string, record: string): Promise<SupersedeOutcome> {
    const digest = await this.#headDigest(root);
    if (digest === undefined) return { kind: 'absent' };
    const existing = this.#records.get(root);
    if (existing !== undefined) return { kind: 'exists', record: existing };
    if (digest !== headDigest) return { kind: 'head_moved' };
    this.#records.set(root, record);
    return { kind: 'written' };
  }

  async complete(root: string, record: string, successor: string): Promise<void> {
    this.#predecessors.set(successor, root);
    this.#records.set(root, record);
  }
}
