import type { DeploymentRef, EffectAttemptId, EffectId } from '../../kernel/index.js';

/**
 * BullMQ names. One queue per exact DeploymentRef: a job can only reach a worker that holds that
 * exact behaviour, with no routing step that could hand it to another version. The cost is one
 * blocking connection per ref a worker serves (versions multiply refs), acceptable while a worker
 * holds a handful of deployments. The queue name is `{<name>@<first 16 hex of the ref digest>}`:
 * no `:` (BullMQ forbids it) and one hash tag, so Redis Cluster keeps each queue in one slot.
 */
export function queueNameOf(ref: DeploymentRef): string {
  return `{${ref.name}@${ref.digest.hex.slice(0, 16)}}`;
}

/** BullMQ's key prefix for our queues (the store's prefix, which never holds braces). */
export function bullPrefixOf(keyPrefix: string): string {
  return `${keyPrefix}-bull`;
}

/**
 * One job per attempt: `<effect hex>-<attempt hex>`. Never all digits, never a `:`; a second add of
 * the same attempt is deduplicated by BullMQ while the job exists, and refused by the claim after.
 */
export function jobIdOf(effectId: EffectId, attemptId: EffectAttemptId): string {
  return `${effectId.toString().replace(/^effect:/, 'e')}-${attemptId.toString().replace(/^attempt:/, 'a')}`;
}
