import { type EffectBoundary, type EffectRequest, TreeActivation } from '../../kernel/index.js';
import type { RedisClient } from './connection.js';
import type { HostWriteSet } from './host-writes.js';
import { dispatchPermitSuffix } from './keys.js';

/**
 * Dispatch permits: the part of a commit's host write set that tells workers, under the tree's
 * hash tag and atomically with the head, which incarnation may dispatch an Effect. A worker's claim
 * (lua/transport/claimAttempt) checks the permit, so a claim can only run what the head granted:
 *
 * - the **pending** boundary of an Effect grants it to the boundary's incarnation;
 * - an **activation** (restore, takeover) writes none: the claim's fence is the head's
 *   incarnation, and a permit only says that a committed pending boundary granted the effect — so
 *   a restore of a tree with any number of pending or Unknown effects moves nothing;
 * - a boundary that settles an Effect **definitely** (settled or resolved) withdraws the permit
 *   (`settled`) and consumes the effect's settlement inbox; a settled Unknown keeps the permit for
 *   a replay.
 *
 * It also remembers which effects a pending boundary of this process granted, so the transport can
 * tell a first attempt (nothing earlier to adopt) from a restored or replayed one.
 */
export const withdrawnPermit = 'settled';

/**
 * Enqueues a pending boundary's first attempt on `client` right behind the commit just issued there;
 * answers how to withdraw it if that commit is refused (undefined: nothing was enqueued).
 */
export type FirstAttemptHandoff = (request: EffectRequest, client: RedisClient) => (() => void) | undefined;

export class DispatchPermits {
  readonly #fresh = new Set<string>();
  #handoff: FirstAttemptHandoff | undefined;

  /** The transport that carries first attempts (see {@link handOff}). */
  handOffTo(handoff: FirstAttemptHandoff): void {
    this.#handoff = handoff;
  }

  /**
   * Called by the committer right after it issued a pending boundary's commit on `client` (the
   * store's ordered client), in the same turn: the transport enqueues the first attempt behind it, so
   * the job waits on no round trip after the acknowledgement. Safe because the claim runs only what
   * the head grants: a refused commit wrote no permit, so its job is refused and executes nothing.
   */
  handOff(request: EffectRequest, client: RedisClient): (() => void) | undefined {
    return this.#handoff?.(request, client);
  }

  /** The write set a commit carries (undefined: nothing to add). */
  writesFor(commit: EffectBoundary | TreeActivation): HostWriteSet | undefined {
    return commit instanceof TreeActivation ? undefined : this.#boundary(commit);
  }

  /**
   * True once for an effect whose pending boundary this process committed under `incarnationId`:
   * its dispatch is a first attempt. False for a restored dispatch or a replay.
   */
  takeFresh(rootId: string, effectId: string, incarnationId: string): boolean {
    return this.#fresh.delete(`${rootId} ${effectId} ${incarnationId}`);
  }

  #boundary(boundary: EffectBoundary): HostWriteSet | undefined {
    const effectId = boundary.effectId.toString();
    const effect = boundary.effect();
    if (effect === undefined || effect.effect.target !== 'dispatcher') return undefined;
    const incarnation = boundary.snapshot.incarnationId.toString();
    if (boundary.kind === 'pending') {
      this.#fresh.add(`${boundary.rootId.toString()} ${effectId} ${incarnation}`);
      return { records: [{ suffix: dispatchPermitSuffix(effectId), value: incarnation }] };
    }
    if (!effect.definite) return undefined;
    return { records: [{ suffix: dispatchPermitSuffix(effectId), value: withdrawnPermit }], inboxClears: [effectId] };
  }
}
