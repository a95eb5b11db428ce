/**
 * Which node the harness last saw take each tree (the node that acknowledged its start or its
 * restore), and that node's generation then. Without node ownership in the server this is the only
 * routing a client has: a tree lives on the node that started or restored it, until that process
 * dies (a restarted node on the same port holds none of its old trees).
 */
import type { Member } from './cluster.js';

interface Owner {
  readonly node: Member;
  readonly generation: number;
}

export class Owners {
  readonly #owners = new Map<string, Owner>();

  set(rootId: string, node: Member, generation: number): void {
    this.#owners.set(rootId, { node, generation });
  }

  /** The owner, while it is the same live process. */
  live(rootId: string): Member | undefined {
    const owner = this.#owners.get(rootId);
    if (owner === undefined || !owner.node.up || owner.node.generation !== owner.generation) return undefined;
    return owner.node;
  }

  /** Trees whose last known owner process is gone. */
  orphans(rootIds: Iterable<string>): string[] {
    return [...rootIds].filter((rootId) => this.live(rootId) === undefined);
  }
}
