/**
 * What brings a dead node's trees back. `automatic`: the nodes take them over themselves (node
 * ownership and takeover), so the harness does nothing. `operator-restore` (the default until
 * takeover exists): the harness acts as the operator would, restoring on a live node each tree
 * whose owner died. The whole operator's part is {@link operatorRestore}.
 */
import type { Client } from './client.js';
import type { Owners } from './owners.js';

export type RecoveryMode = 'operator-restore' | 'automatic';

/**
 * `POST /v1/trees/{rootId}/restore` on a live node, and route the tree there from now on. Another
 * restore of the same tree that won meanwhile (409 `tree_incarnation_conflict`) is retried: the
 * winner may have died too. Resolves false when the tree is finished or unknown (nothing to restore).
 */
export async function operatorRestore(client: Client, owners: Owners, rootId: string): Promise<boolean> {
  // An operator leaves a finished tree alone (its restore would only append restored events).
  const view = await client.request('GET', `/v1/processes/${encodeURIComponent(rootId)}`, { deadlineMs: 30_000 });
  if (view.status !== 200 || view.body?.result !== null) return false;
  const answer = await client.request('POST', `/v1/trees/${encodeURIComponent(rootId)}/restore`, {
    body: {},
    deadlineMs: 30_000,
    retryOn: (status, body) => status >= 500 || (status === 409 && body?.code === 'tree_incarnation_conflict'),
  });
  if (answer.status !== 200) return false;
  owners.set(rootId, answer.node, answer.generation);
  return true;
}
