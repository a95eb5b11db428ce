/** Small pieces every view uses: a status shown as text and colour (never colour alone), a problem, time. */
import { ApiError, type EffectAttempt } from './api';

const statusSymbols: Readonly<Record<string, string>> = {
  running: '▶',
  waiting: '⏸',
  paused: '‖',
  completed: '✓',
  failed: '✗',
  canceled: '⊘',
  killed: '☠',
};

export function StatusBadge({ status }: { readonly status: string }) {
  return (
    <span class={`status status-${status}`} data-status={status}>
      <span aria-hidden="true">{statusSymbols[status] ?? '•'} </span>
      {status}
    </span>
  );
}

/** An error as the person should read it: the server's problem (code, title, detail) when there is one. */
export function ProblemView({ error }: { readonly error: unknown }) {
  if (error === undefined || error === null) return null;
  if (error instanceof ApiError) {
    return (
      <div class="problem" role="alert" data-code={error.problem.code ?? ''}>
        <strong>
          {error.status} {error.problem.title ?? 'Error'}
        </strong>{' '}
        {error.problem.code === undefined ? null : <code>{error.problem.code}</code>}
        <p>{error.problem.detail ?? ''}</p>
      </div>
    );
  }
  return (
    <div class="problem" role="alert">
      {error instanceof Error ? error.message : String(error)}
    </div>
  );
}

export function Time({ at }: { readonly at: string }) {
  return <time dateTime={at}>{at.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}</time>;
}

export function shortId(id: string): string {
  const [kind, hex] = id.split(':', 2);
  return hex === undefined ? id : `${kind}:${hex.slice(0, 10)}…`;
}

export function Json({ value }: { readonly value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

/** Each attempt with the worker that ran it (evidence: the claim record's worker, or the owner node). */
export function AttemptList({ attempts }: { readonly attempts: readonly EffectAttempt[] }) {
  if (attempts.length === 0) return null;
  return (
    <ol class="attempts" aria-label="Attempts">
      {attempts.map((attempt) => (
        <li key={attempt.attemptId} data-attempt-id={attempt.attemptId}>
          <code>{attempt.attemptId}</code>
          {attempt.startedAt === null ? null : (
            <>
              {' '}
              started <Time at={attempt.startedAt} />
            </>
          )}
          , worker: <span class="attempt-worker">{attempt.worker ?? 'not known'}</span>
        </li>
      ))}
    </ol>
  );
}
