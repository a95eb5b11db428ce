import type { Deployment } from '../../src/kernel/deployment.js';
import type { ProcessId, WaitId } from '../../src/kernel/identity.js';
import type { ProcessSnapshot } from '../../src/kernel/process-snapshot.js';
import type { Schema } from '../../src/kernel/schema.js';
import type { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { askWaitKey } from './toolset.js';

/**
 * The tool calls of a tree that wait for a person (contract §6.4 `PendingToolInputs`): every
 * Process of `toolSet` whose current wait is one of its `ask` waits, with what an answer needs —
 * the owning child's ProcessId and the WaitId to address, the answer schema, the prompt. The
 * answer is an ordinary signal to that child and wait (`POST /v1/processes/{id}/signals` with
 * `wait_id`); the same waits are what `GET /v1/waits` lists. Read-only; in tree order.
 */
export interface PendingToolInput {
  readonly processId: ProcessId;
  /** The interaction that started the tool call. */
  readonly parentId: ProcessId | undefined;
  readonly waitId: WaitId;
  readonly tool: string;
  readonly prompt: string | undefined;
  readonly answerSchema: Schema | undefined;
}

export function pendingToolInputs(tree: TreeSnapshot | Iterable<ProcessSnapshot>, toolSet: Deployment): PendingToolInput[] {
  const snapshots = 'processSnapshots' in tree ? tree.processSnapshots() : [...tree];
  const descriptor = toolSet.descriptor;
  const prefix = askWaitKey('');
  const pending: PendingToolInput[] = [];
  for (const snapshot of snapshots) {
    if (!snapshot.deploymentRef.equals(toolSet.ref) || snapshot.waitId === undefined) continue;
    const wait = snapshot.currentWait(descriptor);
    const key = wait?.key.toString();
    if (wait === undefined || wait.kind !== 'external' || key === undefined || !key.startsWith(prefix)) continue;
    pending.push({
      processId: snapshot.processId,
      parentId: snapshot.relation.parentId,
      waitId: wait.waitId,
      tool: key.slice(prefix.length),
      prompt: wait.prompt,
      answerSchema: wait.answerSchema,
    });
  }
  return pending;
}
