/** Pause, resume, cancel and kill one process, through the per-process control routes. */
import { useState } from 'preact/hooks';
import { api, enc } from './api';
import { ProblemView } from './widgets';

export const controlActions = ['pause', 'resume', 'cancel', 'kill'] as const;
export type ControlAction = (typeof controlActions)[number];

export function control(processId: string, action: ControlAction): Promise<unknown> {
  return api('POST', `/v1/processes/${enc(processId)}/${action}`, { reason: `${action} from the console` });
}

const terminal = new Set(['completed', 'failed', 'canceled', 'killed']);

export function ProcessControls({ processId, status, onDone }: { readonly processId: string; readonly status: string; readonly onDone?: () => void }) {
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string | undefined>();
  if (terminal.has(status)) return null;
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
