/**
 * What brings a dead node's trees back. `automatic`: the nodes take them over themselves (node
 * ownership and takeover), so the harness does nothing. `operator-restore` (the default until
 * takeover exists): the harness acts as the operator would, restoring on a live node each tree
 * whose owner died. The whole operator's part is {@link operatorRestore}.
 */
import type { Client } from './client.js';
import type { Owners } from './owners.js';

export type RecoveryMode = 'operator-restore' | 'automatic';

/** What the operator's restore came to: restored here, nothing to restore (finished or unknown), or refused (another node holds it). */
export type RestoreOutcome = 'restored' | 'finished' | 'refused';

/**
 * `POST /v1/trees/{rootId}/restore` on a live node, and route the tree there from now on. Another
 * restore of the same tree that won meanwhile (409 `tree_incarnation_conflict`) is retried: the
 * winner may have died too. A refusal (a node that owns the tree, or is taking it over) is left to
 * the caller, who retries its command.
 */
export async function operatorRestore(client: Client, owners: Owners, rootId: string): Promise<RestoreOutcome> {
  // An operator leaves a finished tree alone (its restore would only append restored events). The tree may
  // still finish between this look and the restore; the reader check allows for that (checks.ts).
  const view = await client.request('GET', `/v1/processes/${encodeURIComponent(rootId)}`, { deadlineMs: 30_000 });
  if (view.status !== 200 || view.body?.result !== null) return 'finished';
  const answer = await client.request('POST', `/v1/trees/${encodeURIComponent(rootId)}/restore`, {
    body: {},
    deadlineMs: 30_000,
    retryOn: (status, body) => (status >= 500 && status !== 503) || (status === 409 && body?.code === 'tree_incarnation_conflict'),
  });
  if (answer.status !== 200) return 'refused';
  owners.set(rootId, answer.node, answer.generation);
  return 'restored';
}
