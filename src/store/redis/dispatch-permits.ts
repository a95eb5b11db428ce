import { type EffectBoundary, TreeActivation } from '../../kernel/index.js';
import { hostWriteLimits, type HostWriteSet } from './host-writes.js';
import { dispatchPermitSuffix } from './keys.js';

/**
 * Dispatch permits: the part of a commit's host write set that tells workers, under the tree's
 * hash tag and atomically with the head, which incarnation may dispatch an Effect. A worker's claim
 * (lua/transport/claimAttempt) checks the permit, so a claim can only run what the head granted:
 *
 * - the **pending** boundary of an Effect grants it to the boundary's incarnation;
 * - an **activation** (restore, takeover) grants every effect still pending or Unknown in the tree
 *   to the new incarnation (a restored dispatch or a replay needs no new boundary);
 * - a boundary that settles an Effect **definitely** (settled or resolved) withdraws the permit
 *   (`settled`) and consumes the effect's settlement inbox; a settled Unknown keeps the permit for
 *   a replay.
 *
 * It also remembers which effects a pending boundary of this process granted, so the transport can
 * tell a first attempt (nothing earlier to adopt) from a restored or replayed one.
 */
export const withdrawnPermit = 'settled';

export class DispatchPermits {
  readonly #fresh = new Set<string>();

  /** The write set a commit carries (undefined: nothing to add). */
  writesFor(commit: EffectBoundary | TreeActivation): HostWriteSet | undefined {
    return commit instanceof TreeActivation ? this.#activation(commit) : this.#boundary(commit);
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
    const effect = boundary.snapshot
      .processSnapshots()
      .find((process) => process.processId.equals(boundary.processId))
      ?.prepared?.effect(boundary.effectId);
    if (effect === undefined || effect.effect.target !== 'dispatcher') return undefined;
    const incarnation = boundary.snapshot.incarnationId.toString();
    if (boundary.kind === 'pending') {
      this.#fresh.add(`${boundary.rootId.toString()} ${effectId} ${incarnation}`);
      return { records: [{ suffix: dispatchPermitSuffix(effectId), value: incarnation }] };
    }
    if (!effect.definite) return undefined;
    return { records: [{ suffix: dispatchPermitSuffix(effectId), value: withdrawnPermit }], inboxClears: [effectId] };
  }

  #activation(activation: TreeActivation): HostWriteSet | undefined {
    const incarnation = activation.incarnationId.toString();
    const records = [];
    for (const process of activation.snapshot.processSnapshots()) {
      for (const effect of process.prepared?.effects() ?? []) {
        if (effect.effect.target !== 'dispatcher' || (effect.phase !== 'pending' && !effect.unknown)) continue;
        records.push({ suffix: dispatchPermitSuffix(effect.id.toString()), value: incarnation });
      }
    }
    // Beyond the per-commit bound an effect keeps its old permit: its restored attempt is refused
    // and settles `transport.unclaimed` (it provably never ran) — see docs/transport.md.
    return records.length === 0 ? undefined : { records: records.slice(0, hostWriteLimits.records) };
  }
}
