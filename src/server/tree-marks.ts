import type { ProcessSnapshot } from '../kernel/index.js';
import { openWaitOf } from './open-waits.js';

/**
 * What marks a tree in the process list (`?hasUnknown=`, `?hasOpenGate=`), read off the tree's head in
 * one place so the list, the bulk filter and the Unknown index agree:
 * - an Unknown: an effect of one of its processes whose outcome is Unknown (unresolved);
 * - an open gate: an open external wait (a gate is the face of one; `open-waits.ts` says what "open" is).
 * Both are facts of the head, so any node reading the stored head (or this node's copy, embedded) reads them
 * exactly as the last commit left them — no separate record can disagree with it.
 */
export interface TreeMarks {
  readonly hasUnknown: boolean;
  readonly hasOpenGate: boolean;
}

/** One Unknown effect of a tree. */
export interface UnknownRef {
  readonly processId: string;
  readonly rootId: string;
  readonly deployment: string;
  readonly effectId: string;
}

export function marksOf(processes: Iterable<ProcessSnapshot>): TreeMarks {
  let hasUnknown = false;
  let hasOpenGate = false;
  for (const process of processes) {
    if (!hasUnknown && process.unknownEffectIds().length > 0) hasUnknown = true;
    if (!hasOpenGate && isGateOpen(process)) hasOpenGate = true;
    if (hasUnknown && hasOpenGate) break;
  }
  return { hasUnknown, hasOpenGate };
}

/** Every Unknown effect of a tree's processes. */
export function unknownRefsOf(rootId: string, processes: Iterable<ProcessSnapshot>): UnknownRef[] {
  const refs: UnknownRef[] = [];
  for (const process of processes) {
    for (const effectId of process.unknownEffectIds()) {
      refs.push({ processId: process.processId.toString(), rootId, deployment: process.deploymentRef.name, effectId: effectId.toString() });
    }
  }
  return refs;
}

/** Whether the process waits on an open external wait (the one a gate shows). */
function isGateOpen(process: ProcessSnapshot): boolean {
  const open = openWaitOf(process);
  return open !== undefined && process.mailbox.wait(open.waitId)?.kind === 'external';
}

/** Whether marks pass a filter (an absent criterion passes). */
export function marksMatch(marks: TreeMarks, filter: { readonly hasUnknown?: boolean; readonly hasOpenGate?: boolean }): boolean {
  return (filter.hasUnknown === undefined || marks.hasUnknown === filter.hasUnknown) && (filter.hasOpenGate === undefined || marks.hasOpenGate === filter.hasOpenGate);
}
