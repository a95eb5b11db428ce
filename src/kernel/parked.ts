import type { PendingControl, ProcessSnapshot } from './process-snapshot.js';
import { hasTerminalIntent } from './termination-matrix.js';
import type { TreeSnapshot } from './tree-snapshot.js';

/**
 * Whether an owner of `snapshot` has something to do now, under the recorded control intents: a
 * terminal intent to apply, a prepared frontier to dispatch or admit (not one blocked on an Unknown
 * effect, which waits for a resolution), a Step to run, or a pause to apply to a wait. The runtime
 * drives exactly these; everything else waits for a command.
 */
export function hasRunnableWork(snapshot: ProcessSnapshot, control: PendingControl = snapshot.pendingControl): boolean {
  if (hasTerminalIntent(control)) return true;
  if (snapshot.prepared !== undefined) return snapshot.prepared.frontier()?.unknown !== true;
  return snapshot.status === 'running' || (control.pauseReason !== undefined && snapshot.status === 'waiting');
}

/**
 * A parked tree: every member terminal, or waiting, paused or blocked on an Unknown effect with
 * nothing to drive. Only a command moves it, so no runtime need hold it: hibernation releases such
 * trees from memory, and a takeover after a node's death leaves them to their next command.
 */
export function isParkedTree(tree: TreeSnapshot): boolean {
  return tree.processSnapshots().every((process) => process.isTerminal || !hasRunnableWork(process));
}
