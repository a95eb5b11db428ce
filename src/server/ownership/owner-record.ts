import type { DirectoryMember } from '../../store/redis/host-writes.js';

/**
 * A tree's owner record `{node, epoch, incarnation}`: which node's registration (epoch) runs the
 * tree, under which incarnation. Written only with the start and activation commits (so it moves
 * exactly when a new incarnation fences the old one); a node whose lease lapsed, or whose id
 * registered again under a later epoch, no longer owns what it names.
 */
export interface OwnerRecord {
  readonly node: string;
  readonly epoch: number;
  readonly incarnation: string;
}

/** The node registration a commit stamps into the owner record. */
export interface NodeStamp {
  readonly node: string;
  readonly epoch: number;
}

/** Canonical text (fixed member order): takeovers compare records verbatim. */
export function encodeOwner(record: OwnerRecord): string {
  return JSON.stringify({ node: record.node, epoch: record.epoch, incarnation: record.incarnation });
}

/** The record, or undefined for text that is not one (treated as no owner). */
export function decodeOwner(text: string | undefined): OwnerRecord | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<OwnerRecord>;
    if (typeof value.node !== 'string' || typeof value.epoch !== 'number' || typeof value.incarnation !== 'string') return undefined;
    return { node: value.node, epoch: value.epoch, incarnation: value.incarnation };
  } catch {
    return undefined;
  }
}

/** What the host committer asks of ownership when it builds start and activation commits. */
export interface CommitOwnership {
  /** This node's registration, or undefined before it joined (then commits write no owner record). */
  stamp(): NodeStamp | undefined;
  /** The owner record a takeover of `root` in progress replaces (verbatim; '' = none), or undefined. */
  expected(root: string): string | undefined;
  /** Throws `node_lease_lost` while this node may not commit. */
  assertCommittable(): void;
  /**
   * Notes `root` in this node's directory of owned trees, before the commit that makes this node its
   * owner: a node that dies right after that commit must leave its tree findable for a takeover.
   */
  owning(root: string): Promise<void>;
  /** The commit that followed {@link owning} is over, acknowledged or not (called once per `owning`). */
  arrived(root: string): void;
  /**
   * Instead of {@link owning}: the directory entry for a start commit that writes it itself, with the
   * owner record in one atomic script (standalone Redis); undefined before the node joined.
   */
  listedWith(root: string): DirectoryMember | undefined;
}
