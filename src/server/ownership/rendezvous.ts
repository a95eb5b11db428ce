import { createHash } from 'node:crypto';

/**
 * Rendezvous (highest random weight) hashing: every node computes the same winner for a root from
 * the same candidate list, and a node joining or leaving moves only the roots it wins or held, so a
 * dead node's trees spread over the survivors without any coordination.
 */
export function rendezvousWinner<T extends { readonly nodeId: string }>(root: string, candidates: readonly T[]): T | undefined {
  let best: T | undefined;
  let bestScore = -1n;
  for (const candidate of candidates) {
    const score = createHash('sha256').update(`${candidate.nodeId}\n${root}`).digest().readBigUInt64BE(0);
    if (score > bestScore || (score === bestScore && best !== undefined && candidate.nodeId < best.nodeId)) {
      best = candidate;
      bestScore = score;
    }
  }
  return best;
}
