import type { Logger } from 'pino';
import { codedError, HostErrorCode } from '../../errors.js';
import type { KernelError } from '../../kernel/index.js';
import type { RedisNodeRegistry } from '../../store/redis/node-registry.js';

export interface NodeLeaseOptions {
  readonly registry: RedisNodeRegistry;
  readonly nodeId: string;
  readonly leaseMs: number;
  readonly renewMs: number;
  readonly logger?: Logger;
  /** Called once each time the lease is found gone on the server. */
  readonly onLost?: () => void;
}

/** `held`: valid; `lapsed`: past its local margin, may come back; `lost`: gone on the server for good. */
export type LeaseState = 'unjoined' | 'held' | 'lapsed' | 'lost' | 'left';

/**
 * One node's lease. It expires on the Redis server (the lease hash's TTL); this side judges it with
 * a monotonic clock: a renewal sent at `t` that succeeded makes the lease valid here until
 * `t + leaseMs - margin`, which is before the server can expire it (the server's TTL starts when it
 * runs the command, after `t`). Past that point the node starts nothing and commits nothing.
 * Renewals are sent every `renewMs` while the process is healthy enough to run its timers and Redis
 * answers; a renewal that finds the lease gone (expired, evicted) makes it `lost`: others may be
 * taking the node's trees over, and only a new registration (a new epoch, {@link join} again) makes
 * it valid again.
 */
export class NodeLease {
  readonly #registry: RedisNodeRegistry;
  readonly #logger: Logger | undefined;
  readonly #onLost: (() => void) | undefined;
  readonly nodeId: string;
  readonly leaseMs: number;
  readonly renewMs: number;
  readonly #marginMs: number;
  #epoch = 0;
  #validUntil = 0;
  #state: LeaseState = 'unjoined';
  #timer: NodeJS.Timeout | undefined;

  constructor(options: NodeLeaseOptions) {
    this.#registry = options.registry;
    this.#logger = options.logger;
    this.#onLost = options.onLost;
    this.nodeId = options.nodeId;
    this.leaseMs = options.leaseMs;
    this.renewMs = options.renewMs;
    // A fifth of the lease (at least a renewal period's worth of slack stays in it): clock rate
    // differences and a slow reply eat into the lease before the server expires it.
    this.#marginMs = Math.max(50, Math.floor(options.leaseMs / 5));
  }

  get epoch(): number {
    return this.#epoch;
  }

  state(): LeaseState {
    if (this.#state === 'held' && performance.now() >= this.#validUntil) return 'lapsed';
    return this.#state;
  }

  /** Whether this node may start work and commit now. */
  valid(): boolean {
    return this.state() === 'held';
  }

  /** `node_lease_lost` unless {@link valid}. */
  assertValid(): void {
    if (!this.valid()) throw this.lostError();
  }

  lostError(): KernelError {
    const state = this.state();
    const why =
      state === 'lost'
        ? 'its lease is gone (expired or evicted); it joins again under a new epoch one lease period later'
        : state === 'left'
          ? 'it left the cluster'
          : state === 'unjoined'
            ? 'it has not joined the cluster yet'
            : 'its lease is past its margin (renewals are not getting through)';
    return codedError(HostErrorCode.nodeLeaseLost, `node ${this.nodeId} changes no tree: ${why}`);
  }

  /** Registers under a new epoch and starts renewing (again, after a loss). */
  async join(url: string, refs: readonly string[]): Promise<number> {
    if (this.#state === 'left') throw this.lostError();
    const sent = performance.now();
    this.#epoch = await this.#registry.register(this.nodeId, url, refs, this.leaseMs);
    this.#validUntil = sent + this.leaseMs - this.#marginMs;
    this.#state = 'held';
    this.#schedule();
    return this.#epoch;
  }

  /** Stops renewing and deletes the lease (a drained node: others take its trees over at once). */
  async leave(): Promise<void> {
    this.#stop();
    const held = this.#state === 'held';
    this.#state = 'left';
    if (held) await this.#registry.dropLease(this.nodeId, this.#epoch).catch(() => false);
  }

  /** Stops renewing without touching the lease (it lapses on the server). */
  stop(): void {
    this.#stop();
    if (this.#state === 'held') this.#state = 'left';
  }

  /** Renews once now (the loop calls it; tests may too). */
  async renew(): Promise<void> {
    if (this.#state !== 'held') return;
    const sent = performance.now();
    try {
      if (await this.#registry.renew(this.nodeId, this.#epoch, this.leaseMs)) {
        if (this.#state === 'held') this.#validUntil = sent + this.leaseMs - this.#marginMs;
        return;
      }
      if (this.#state !== 'held') return;
      this.#state = 'lost';
      this.#stop();
      this.#logger?.error({ nodeId: this.nodeId, epoch: this.#epoch }, 'node lease lost: this node changes no tree until it joins again under a new epoch');
      this.#onLost?.();
    } catch (error) {
      this.#logger?.warn({ err: error, nodeId: this.nodeId }, 'node lease renewal failed');
    }
  }

  #schedule(): void {
    this.#timer = setTimeout(() => {
      void this.renew().finally(() => {
        if (this.#state === 'held') this.#schedule();
      });
    }, this.renewMs);
    this.#timer.unref();
  }

  #stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
