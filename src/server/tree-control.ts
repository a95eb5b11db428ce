import { ErrorCode, KernelError, RuntimeError, validDiagnostic } from '../kernel/index.js';
import { HostErrorCode, invalidRequest } from '../errors.js';
import { controlHostValues } from './control-agency.js';
import { interruptHostValues } from './interrupt-record.js';
import type { ControlAction, TreeControlOutcome } from './host.js';
import type { Agency } from './signal-agency.js';
import type { InterruptBarrier } from './interrupt-barrier.js';
import type { CommandRouting } from './ownership/command-routing.js';
import { treeNotFound, type TreeResidency } from './residency.js';

const defaultReasons: Readonly<Record<ControlAction, string>> = {
  pause: 'tree paused by host request',
  resume: 'tree resumed by host request',
  cancel: 'tree canceled by host request',
  kill: 'tree killed by host request',
};

export interface TreeControlOptions {
  readonly routing: CommandRouting;
  readonly residency: TreeResidency;
  readonly barrier: InterruptBarrier;
}

/**
 * `POST /v1/trees/{rootId}/pause|resume|cancel|kill` on the node that owns the tree (any other node
 * forwards, as for process control). The kernel records the intent on every live process in one
 * commit (TreeRuntime.controlTree); around it the interrupt barrier holds child starts from before that
 * commit until the tree has settled, and a resume lifts it.
 */
export class TreeControl {
  readonly #options: TreeControlOptions;

  constructor(options: TreeControlOptions) {
    this.#options = options;
  }

  async control(rootId: string, action: ControlAction, reason: string | undefined, agency: Agency, scope: 'tree' | 'bulk'): Promise<TreeControlOutcome> {
    if (reason !== undefined && !validDiagnostic(reason)) throw invalidRequest('reason must be non-empty, trimmed text of at most 4096 UTF-8 bytes');
    const { routing, residency, barrier } = this.#options;
    let located;
    try {
      located = await routing.commandable(rootId);
    } catch (error) {
      if (error instanceof KernelError && error.code === HostErrorCode.processNotFound) throw treeNotFound(rootId);
      throw error;
    }
    if (located.root !== rootId) throw treeNotFound(rootId);
    // A finished tree in the store has nothing live to control.
    if (residency.answersAsFinished(located)) return { rootId, action, affected: 0 };
    if (located.kind === 'stored') throw residency.refuseStored(located);
    const stoppedBefore = located.inspection.stopped;
    // Held before the commit, so a child admission racing it is refused too; a resume ends the interrupt.
    if (action === 'resume') barrier.lift(rootId);
    else barrier.hold(rootId, action);
    let affected: number;
    try {
      // Who sent it is written with the control's commit (control-agency.ts).
      // And the barrier's record (interrupt-record.ts): a node taking the tree over holds child starts too.
      const hostValues = { ...controlHostValues({ action, scope, processId: rootId, agency, at: new Date().toISOString() }), ...interruptHostValues(action, barrier.releaseMs, Date.now()) };
      affected = await located.handle.controlTree(action, reason ?? defaultReasons[action], { hostValues });
    } catch (error) {
      barrier.lift(rootId);
      await routing.fencedOut(rootId, error);
      if (!stoppedBefore && error instanceof RuntimeError && error.causeCode === ErrorCode.committerUnavailable) {
        throw new KernelError(ErrorCode.committerUnavailable, `the ${action} of tree ${rootId} was not acknowledged: storage could not take its commit`, { cause: error });
      }
      throw error;
    }
    // Already settled (an idle tree pauses in the very commit): nothing left to hold.
    barrier.observe(rootId);
    return { rootId, action, affected };
  }
}
