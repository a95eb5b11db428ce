import type { Logger } from 'pino';
import { type DeploymentRef, isParkedTree, type TreeSnapshot } from '../../kernel/index.js';
import { codedError, HostErrorCode } from '../../errors.js';
import type { DirectoryMember } from '../../store/redis/host-writes.js';
import type { RedisNodeRegistry, StoredNodeLease } from '../../store/redis/node-registry.js';
import type { NodeConfig } from '../config.js';
import type { NodeView } from '../host.js';
import { NodeLease } from './node-lease.js';
import { type CommitOwnership, decodeOwner, encodeOwner, type NodeStamp } from './owner-record.js';
import { OwnedElsewhereError } from './owned-elsewhere.js';
import { rendezvousWinner } from './rendezvous.js';

/** How long finished trees' directory removals wait to leave together (see `Ownership.dropped`). */
const dropBatchMs = 100;

/** Where a command for a tree runs. */
export type Route =
  /** Here: the record names this node's registration, no live node, or nobody. `expected` is the record verbatim ('' = none). */
  | { readonly kind: 'here'; readonly expected: string; readonly mine: boolean }
  /** On the live node the record names. */
  | { readonly kind: 'elsewhere'; readonly expected: string; readonly error: OwnedElsewhereError };

export interface OwnershipOptions {
  readonly registry: RedisNodeRegistry;
  readonly node: NodeConfig;
  readonly logger?: Logger;
  /** Deployment refs this node can restore (advertised with its lease). */
  readonly refs: () => readonly string[];
  /** Whether this node holds exactly this ref. */
  readonly holds: (ref: DeploymentRef) => boolean;
  readonly loadHead: (root: string) => Promise<TreeSnapshot | undefined>;
  readonly isLocal: (root: string) => boolean;
  /** Restores `root` here, the takeover guarded by `expected` (the owner record it replaces). */
  readonly takeOver: (root: string, expected: string) => Promise<void>;
  /** Called after each takeover the sweep made (metrics). */
  readonly tookOver?: (root: string) => void;
}

/**
 * This node's part in the cluster (docs/host.md "Nodes and ownership"): its lease, routing of
 * commands by owner record (here, or forwarded to the live owner), the owner stamp and takeover
 * guard the host committer writes into start and activation commits, and the sweep that takes over
 * the unfinished trees of nodes whose lease lapsed (spread by rendezvous hashing over the live nodes
 * that hold every DeploymentRef of the tree). Inactive until {@link join}: a Host that never joins
 * (embedded mode, in-process tests) behaves as a single node.
 */
export class Ownership implements CommitOwnership {
  readonly #options: OwnershipOptions;
  readonly #registry: RedisNodeRegistry;
  readonly #logger: Logger | undefined;
  readonly lease: NodeLease;
  /** Takeovers in progress: root → the owner record each replaces. */
  readonly #expected = new Map<string, string>();
  #url: string | undefined;
  #expecting = false;
  #rejoinTimer: NodeJS.Timeout | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  #sweeping = false;
  #sweptOwnPast = false;
  /** Roots already reported as held by no capable live node (logged once each). */
  readonly #stranded = new Set<string>();
  /** Trees left since the last directory removal: removed together, one command per {@link dropBatchMs}. */
  readonly #dropping = new Set<string>();
  #dropTimer: NodeJS.Timeout | undefined;
  /**
   * Roots whose activation (or, on a cluster, start) commit is in flight here (a count per root):
   * their directory entry is written before the owner record that makes them this node's, so the
   * sweep must not read the missing or older record as "moved on" and drop the entry. (On standalone
   * Redis a start commit writes the entry itself: {@link listedWith}.)
   */
  readonly #arriving = new Map<string, number>();

  constructor(options: OwnershipOptions) {
    this.#options = options;
    this.#registry = options.registry;
    this.#logger = options.logger;
    this.lease = new NodeLease({
      registry: options.registry,
      nodeId: options.node.id,
      leaseMs: options.node.leaseMs,
      renewMs: options.node.renewMs,
      logger: options.logger,
      onLost: () => this.#scheduleRejoin(options.node.leaseMs),
    });
  }

  get nodeId(): string {
    return this.lease.nodeId;
  }

  /** Whether this Host joined (routing and ownership apply). */
  get joined(): boolean {
    return this.#url !== undefined;
  }

  /**
   * Whether the lease gates this Host: once joined, and from {@link expectJoin} on (a server that
   * listens before it joins changes no tree in between: a start without an owner record would be
   * anybody's to take).
   */
  get gating(): boolean {
    return this.joined || this.#expecting;
  }

  /** This Host will join: until it has, it changes no tree (`node_lease_lost`, readiness `lease unjoined`). */
  expectJoin(): void {
    this.#expecting = true;
  }

  /** Registers this node (advertising `url`) and starts the lease renewals and the takeover sweep. */
  async join(url: string): Promise<void> {
    const advertised = this.#options.node.advertiseUrl ?? url;
    await this.lease.join(advertised, this.#options.refs());
    this.#url = advertised;
    this.#logger?.info({ nodeId: this.nodeId, epoch: this.lease.epoch, url: advertised, leaseMs: this.lease.leaseMs }, 'node joined');
    this.#scheduleSweep(0);
  }

  /** Stops the sweep and deletes the lease: the unfinished trees left here are taken over elsewhere at once. */
  async leave(): Promise<void> {
    clearTimeout(this.#rejoinTimer);
    clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    await this.#removeDropped();
    if (this.joined) await this.lease.leave();
  }

  /** Stops renewing and sweeping without deleting the lease (a Host closed without draining). */
  stop(): void {
    clearTimeout(this.#rejoinTimer);
    clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    void this.#removeDropped();
    this.lease.stop();
  }

  stamp(): NodeStamp | undefined {
    return this.joined ? { node: this.nodeId, epoch: this.lease.epoch } : undefined;
  }

  expected(root: string): string | undefined {
    return this.#expected.get(root);
  }

  assertCommittable(): void {
    if (this.gating) this.lease.assertValid();
  }

  /** The directory entry of a tree whose start or activation commit follows; {@link arrived} ends the window. */
  async owning(root: string): Promise<void> {
    // A removal still waiting for its batch would undo this entry.
    this.#dropping.delete(root);
    if (!this.joined) return;
    this.#arriving.set(root, (this.#arriving.get(root) ?? 0) + 1);
    await this.#registry.addTree(this.nodeId, root);
  }

  /** The directory entry a start commit writes with the owner record, atomically (no window for the sweep). */
  listedWith(root: string): DirectoryMember | undefined {
    // A removal still waiting for its batch would undo this entry.
    this.#dropping.delete(root);
    return this.joined ? this.#registry.treeMember(this.nodeId, root) : undefined;
  }

  /** The commit that followed {@link owning} is over (acknowledged or not): the owner record now tells. */
  arrived(root: string): void {
    const count = this.#arriving.get(root);
    if (count === undefined) return;
    if (count <= 1) this.#arriving.delete(root);
    else this.#arriving.set(root, count - 1);
  }

  /** Where a command for `root` runs now (reads the owner record and, when it names another node, that node's lease). */
  async route(root: string): Promise<Route> {
    const raw = (await this.#registry.owner(root)) ?? '';
    const record = decodeOwner(raw === '' ? undefined : raw);
    if (record === undefined) return { kind: 'here', expected: raw, mine: false };
    if (record.node === this.nodeId && record.epoch === this.lease.epoch) return { kind: 'here', expected: raw, mine: true };
    const lease = await this.#registry.lease(record.node);
    if (lease !== undefined && lease.epoch === record.epoch && record.node !== this.nodeId) {
      return { kind: 'elsewhere', expected: raw, error: new OwnedElsewhereError(root, { nodeId: record.node, url: lease.url }) };
    }
    return { kind: 'here', expected: raw, mine: false };
  }

  /** The live nodes that advertise exactly `ref` (a tree of it can still run there: not drift). */
  async holders(ref: string): Promise<string[]> {
    const leases = await this.#registry.leases(await this.#registry.nodeIds());
    return [...leases.entries()].filter(([, lease]) => lease.refs.includes(ref)).map(([nodeId]) => nodeId);
  }

  /**
   * The owner record this node wrote for `head` if it still owns it (it hibernated the tree): what a
   * takeover of it guards against without reading the record first — a record that moved on fails the
   * takeover's compare, and the caller reads the route then.
   */
  presumedRecord(head: TreeSnapshot): string | undefined {
    if (!this.joined) return undefined;
    return encodeOwner({ node: this.nodeId, epoch: this.lease.epoch, incarnation: head.incarnationId.toString() });
  }

  /** Runs `restore` with the takeover guard for `root` set (the host committer reads it in the activation). */
  async guarded<T>(root: string, expected: string, restore: () => Promise<T>): Promise<T> {
    // A second command during a takeover joins the restore in flight (residency joins them).
    if (this.#expected.has(root)) return restore();
    this.#expected.set(root, expected);
    try {
      return await restore();
    } finally {
      this.#expected.delete(root);
    }
  }

  /** Notes a tree this node now owns in its directory (best effort: the owner record is the truth). */
  adopted(root: string): void {
    this.#dropping.delete(root);
    if (this.joined) void this.#registry.addTree(this.nodeId, root).catch((error: unknown) => this.#logger?.warn({ err: error, rootId: root }, 'node directory write failed'));
  }

  /**
   * Removes a tree from this node's directory (finished, released, purged), best-effort and batched:
   * the entries of every tree left within {@link dropBatchMs} go in one command, not one per tree. The
   * directory is a hint (the owner record is the truth), so an entry that stays a moment longer costs a
   * sweep one owner-record read at most.
   */
  dropped(root: string): void {
    if (!this.joined) return;
    this.#dropping.add(root);
    if (this.#dropTimer === undefined) {
      this.#dropTimer = setTimeout(() => void this.#removeDropped(), dropBatchMs);
      this.#dropTimer.unref();
    }
  }

  async #removeDropped(): Promise<void> {
    clearTimeout(this.#dropTimer);
    this.#dropTimer = undefined;
    if (this.#dropping.size === 0) return;
    const roots = [...this.#dropping];
    this.#dropping.clear();
    await this.#registry.removeTrees(this.nodeId, roots).catch(() => undefined);
  }

  /** Every registered node with its lease state. */
  async nodes(): Promise<NodeView[]> {
    // The counts include no tree this node has already let go of.
    await this.#removeDropped();
    const ids = (await this.#registry.nodeIds()).sort();
    const [leases, counts] = await Promise.all([this.#registry.leases(ids), Promise.all(ids.map(async (id) => (await this.#registry.trees(id)).length))]);
    return ids.map((nodeId, index) => {
      const lease = leases.get(nodeId);
      return {
        nodeId,
        url: lease?.url ?? null,
        epoch: lease?.epoch ?? null,
        lease: lease === undefined ? 'lapsed' : 'live',
        leaseTtlMs: lease?.ttlMs ?? null,
        trees: counts[index] ?? 0,
        self: nodeId === this.nodeId,
      };
    });
  }

  /** Deletes a node's lease: the sweep of every other node then takes its trees over. */
  async evict(nodeId: string): Promise<void> {
    const ids = await this.#registry.nodeIds();
    if (!ids.includes(nodeId)) throw codedError(HostErrorCode.nodeNotFound, `no node ${nodeId} is registered`);
    const dropped = await this.#registry.dropLease(nodeId);
    this.#logger?.warn({ nodeId, hadLease: dropped }, 'node evicted: its trees are taken over by the live nodes');
    if (nodeId === this.nodeId) await this.lease.renew();
    this.#scheduleSweep(0);
  }

  /**
   * After a loss, joins again under a new epoch once a whole lease period has passed (the live nodes
   * have had it to take this node's trees over). Trees still in memory here keep their old owner
   * record: routing sees them ownerless, and the head's fence keeps them safe; the first command that
   * meets one takes it over, here or elsewhere. What the old epoch owned and nobody took is resumed
   * here by the next sweep.
   */
  #scheduleRejoin(delayMs: number): void {
    clearTimeout(this.#rejoinTimer);
    this.#rejoinTimer = setTimeout(() => {
      void this.#rejoin();
    }, delayMs);
    this.#rejoinTimer.unref();
  }

  async #rejoin(): Promise<void> {
    if (this.lease.state() !== 'lost' || this.#url === undefined) return;
    try {
      await this.lease.join(this.#url, this.#options.refs());
      this.#sweptOwnPast = false;
      this.#logger?.warn({ nodeId: this.nodeId, epoch: this.lease.epoch }, 'node joined again under a new epoch after losing its lease');
      this.#scheduleSweep(0);
    } catch (error) {
      this.#logger?.warn({ err: error, nodeId: this.nodeId }, 'joining again failed; retrying');
      this.#scheduleRejoin(this.lease.renewMs);
    }
  }

  #scheduleSweep(delayMs: number): void {
    clearTimeout(this.#sweepTimer);
    this.#sweepTimer = setTimeout(() => {
      void this.#sweep().finally(() => {
        if (this.lease.state() === 'held' || this.lease.state() === 'lapsed') this.#scheduleSweep(this.lease.renewMs);
      });
    }, delayMs);
    this.#sweepTimer.unref();
  }

  /** One pass: take over, here, the unfinished trees of lapsed nodes that rendezvous hashing gives this node. */
  async #sweep(): Promise<void> {
    if (this.#sweeping || !this.lease.valid()) return;
    this.#sweeping = true;
    try {
      const ids = await this.#registry.nodeIds();
      const leases = await this.#registry.leases(ids);
      const live = [...leases.values()];
      for (const id of ids) {
        if (!this.lease.valid()) return;
        if (id === this.nodeId) {
          // A restart under the same id: what the previous registration owned is this node's to resume.
          if (!this.#sweptOwnPast) await this.#adoptOrphans(id, live, (epoch) => epoch !== this.lease.epoch, true);
          continue;
        }
        if (!leases.has(id)) await this.#adoptOrphans(id, live, () => true, false);
      }
      this.#sweptOwnPast = true;
    } catch (error) {
      this.#logger?.warn({ err: error }, 'takeover sweep failed');
    } finally {
      this.#sweeping = false;
    }
  }

  async #adoptOrphans(nodeId: string, live: readonly StoredNodeLease[], orphaned: (epoch: number) => boolean, all: boolean): Promise<void> {
    const roots = await this.#registry.trees(nodeId);
    let waiting = 0;
    for (const root of roots) {
      if (!this.lease.valid()) return;
      // Checked before the record is read: once the commit is over, the record read after it is final.
      if (this.#arriving.has(root)) continue;
      const raw = await this.#registry.owner(root);
      const record = decodeOwner(raw);
      if (record === undefined || record.node !== nodeId || !orphaned(record.epoch)) {
        // Moved on (someone took it over), or still this live registration's own tree.
        if (record?.node !== nodeId) await this.#registry.removeTree(nodeId, root);
        continue;
      }
      if (this.#options.isLocal(root)) continue;
      const head = await this.#options.loadHead(root);
      if (head === undefined || isParkedTree(head)) {
        // Nothing to run (finished, or every process waiting, paused or blocked on an Unknown): it
        // stays ownerless, and the next command restores it where it lands. A dead node's thousands
        // of parked trees cost the survivors nothing until someone needs one.
        await this.#registry.removeTree(nodeId, root);
        continue;
      }
      const refs = head.processSnapshots().map((process) => process.deploymentRef);
      const texts = [...new Set(refs.map((ref) => ref.toString()))];
      const candidates = all ? [] : live.filter((lease) => texts.every((ref) => lease.refs.includes(ref)));
      const winner = all ? { nodeId: this.nodeId } : rendezvousWinner(root, candidates);
      if (winner === undefined || !refs.every((ref) => this.#options.holds(ref))) {
        if (winner === undefined && !this.#stranded.has(root)) {
          this.#stranded.add(root);
          this.#logger?.error({ rootId: root, deploymentRefs: texts, deadNode: nodeId }, 'no live node holds every deployment of this tree: it waits for one');
        }
        waiting += 1;
        continue;
      }
      if (winner.nodeId !== this.nodeId) {
        waiting += 1;
        continue;
      }
      try {
        await this.#options.takeOver(root, raw ?? '');
        this.#options.tookOver?.(root);
        this.#logger?.info({ rootId: root, from: nodeId, epoch: record.epoch }, 'took over a tree from a node whose lease lapsed');
        await this.#registry.removeTree(nodeId, root);
      } catch (error) {
        waiting += 1;
        this.#logger?.warn({ err: error, rootId: root, from: nodeId }, 'takeover failed (another node may have taken it); checking again next sweep');
      }
    }
    if (!all && waiting === 0 && (await this.#registry.trees(nodeId)).length === 0) await this.#registry.forget(nodeId);
  }
}
