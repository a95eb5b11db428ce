/**
 * Pause, resume, cancel and kill: one process (the per-process control routes) or a whole tree (the
 * tree-wide routes, which record the intent on every live process of the tree in one commit).
 */
import { useState } from 'preact/hooks';
import { api, enc } from './api';
import { ProblemView } from './widgets';

export const controlActions = ['pause', 'resume', 'cancel', 'kill'] as const;
export type ControlAction = (typeof controlActions)[number];

export function control(processId: string, action: ControlAction): Promise<unknown> {
  return api('POST', `/v1/processes/${enc(processId)}/${action}`, { reason: `${action} from the console` });
}

export interface TreeControlAccepted {
  readonly rootId: string;
  readonly action: ControlAction;
  readonly affected: number;
}

export function treeControl(rootId: string, action: ControlAction): Promise<TreeControlAccepted> {
  return api<TreeControlAccepted>('POST', `/v1/trees/${enc(rootId)}/${action}`, { reason: `${action} of the tree from the console` });
}

export const terminalStatuses: ReadonlySet<string> = new Set(['completed', 'failed', 'canceled', 'killed']);

export function ProcessControls({ processId, status, onDone }: { readonly processId: string; readonly status: string; readonly onDone?: () => void }) {
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string | undefined>();
  if (terminalStatuses.has(status)) return null;
  const act = async (action: ControlAction): Promise<void> => {
    setError(undefined);
    setDone(undefined);
    try {
      await control(processId, action);
      setDone(`${action} requested`);
      onDone?.();
    } catch (problem) {
      setError(problem);
    }
  };
  return (
    <div class="controls" role="group" aria-label={`Controls for ${processId}`}>
      {controlActions.map((action) => (
        <button type="button" key={action} class={`control-${action}`} onClick={() => void act(action)} aria-label={`${action} ${processId}`}>
          {action}
        </button>
      ))}
      {done === undefined ? null : <span role="status">{done}</span>}
      <ProblemView error={error} />
    </div>
  );
}

/** The tree-wide controls: one request acts on every live process of the tree; the answer says how many it changed. */
export function TreeControls({ rootId, active }: { readonly rootId: string; readonly active: boolean }) {
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string | undefined>();
  const act = async (action: ControlAction): Promise<void> => {
    setError(undefined);
    setDone(undefined);
    try {
      const accepted = await treeControl(rootId, action);
      setDone(`${action} of the whole tree: ${accepted.affected} process${accepted.affected === 1 ? '' : 'es'} affected`);
    } catch (problem) {
      setError(problem);
    }
  };
  return (
    <div class="controls tree-controls" role="group" aria-label={`Controls for the whole tree ${rootId}`}>
      <span>Whole tree:</span>{' '}
      {controlActions.map((action) => (
        <button type="button" key={action} class={`control-${action}`} disabled={!active} onClick={() => void act(action)} aria-label={`${action} the whole tree`}>
          {action} tree
        </button>
      ))}
      {done === undefined ? null : (
        <span role="status" class="tree-control-done">
          {done}
        </span>
      )}
      <ProblemView error={error} />
    </div>
  );
}
