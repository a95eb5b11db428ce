/**
 * Unknown outcomes: every effect whose outcome nobody knows (`GET /v1/effects?status=unknown`), with its
 * evidence (attempts, diagnostic, a worker's late report). A person resolves it as succeeded or failed
 * with a JSON payload, or replays it (the server refuses when the effect's ReplayPolicy does not allow
 * it, and the page shows why); both ask for a confirmation that names the effect.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, enc, withQuery, type Page, type UnknownEffect } from '../api';
import { href } from '../route';
import { AttemptList, Json, ProblemView } from '../widgets';

type Decision = { readonly kind: 'resolve'; readonly status: 'succeeded' | 'failed'; readonly payload: unknown } | { readonly kind: 'replay' };

export function UnknownView() {
  const [page, setPage] = useState<Page<UnknownEffect> | undefined>();
  const [cursor, setCursor] = useState<string | undefined>();
  const [error, setError] = useState<unknown>();
  const [version, setVersion] = useState(0);
  /** Settled from this page: kept in view after the server stops listing them. */
  const [settled, setSettled] = useState<Array<{ readonly entry: UnknownEffect; readonly outcome: string }>>([]);
  useEffect(() => {
    let stopped = false;
    api<Page<UnknownEffect>>('GET', withQuery('/v1/effects', { status: 'unknown', limit: 50, cursor })).then(
      (next) => !stopped && (setPage(next), setError(undefined)),
      (problem: unknown) => !stopped && setError(problem),
    );
    const timer = setTimeout(() => setVersion((value) => value + 1), 5_000);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [cursor, version]);
  return (
    <section aria-labelledby="unknown-title">
      <h2 id="unknown-title">Unknown outcomes</h2>
      <p>Effects whose outcome is unknown: the process cannot go on until someone establishes what happened.</p>
      <ProblemView error={error} />
      {page === undefined ? (
        <p role="status">Loading…</p>
      ) : page.items.filter((entry) => !settled.some((done) => done.entry.effect.effectId === entry.effect.effectId)).length === 0 ? (
        <p>No effect has an unknown outcome.</p>
      ) : (
        <ul class="unknowns">
          {page.items
            .filter((entry) => !settled.some((done) => done.entry.effect.effectId === entry.effect.effectId))
            .map((entry) => (
            <UnknownCard
              key={entry.effect.effectId}
              entry={entry}
              onSettled={(outcome) => {
                setSettled((done) => [...done, { entry, outcome }]);
                setVersion((value) => value + 1);
              }}
            />
          ))}
        </ul>
      )}
      {settled.length === 0 ? null : (
        <section aria-labelledby="settled-title">
          <h3 id="settled-title">Settled from this page</h3>
          <ul class="settled-list" role="status">
            {settled.map(({ entry, outcome }) => (
              <li key={entry.effect.effectId} data-effect-id={entry.effect.effectId}>
                <code>{entry.effect.effectId}</code> of <a href={href('tree', entry.rootId, { process: entry.processId })}>{entry.processId}</a>: {outcome}
              </li>
            ))}
          </ul>
        </section>
      )}
      <nav class="pager" aria-label="Pages">
        {cursor === undefined ? null : (
          <button type="button" onClick={() => setCursor(undefined)}>
            First page
          </button>
        )}
        {page?.nextCursor == null ? null : (
          <button type="button" onClick={() => setCursor(page.nextCursor ?? undefined)}>
            Next page
          </button>
        )}
      </nav>
    </section>
  );
}

function UnknownCard({ entry, onSettled }: { readonly entry: UnknownEffect; readonly onSettled: (outcome: string) => void }) {
  const { effect } = entry;
  const id = `u-${effect.effectId.replace(/[^A-Za-z0-9]/g, '').slice(-12)}`;
  const [status, setStatus] = useState<'succeeded' | 'failed'>('succeeded');
  const [payload, setPayload] = useState('{}');
  const [pending, setPending] = useState<Decision | undefined>();
  const [error, setError] = useState<unknown>();
  const base = `/v1/processes/${enc(entry.processId)}/effects/${enc(effect.effectId)}`;

  const propose = (decision: Decision['kind']): void => {
    setError(undefined);
    if (decision === 'replay') return setPending({ kind: 'replay' });
    try {
      setPending({ kind: 'resolve', status, payload: JSON.parse(payload) as unknown });
    } catch {
      setError(new Error('the payload is not valid JSON'));
    }
  };
  const confirm = async (): Promise<void> => {
    const decision = pending;
    setPending(undefined);
    if (decision === undefined) return;
    try {
      if (decision.kind === 'replay') await api('POST', `${base}/replay`);
      else await api('POST', `${base}/resolution`, { status: decision.status, payload: decision.payload });
      onSettled(decision.kind === 'replay' ? 'Replayed.' : `Resolved as ${decision.status}.`);
    } catch (problem) {
      setError(problem);
    }
  };

  return (
    <li class="unknown-item" data-effect-id={effect.effectId} aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>
        <span class="mark mark-unknown">⚠ Unknown</span> <code>{effect.effectId}</code>
      </h3>
      <p>
        {entry.deployment}, process <a href={href('tree', entry.rootId, { process: entry.processId })}>{entry.processId}</a>, step {effect.stepSequence}
      </p>
      <dl>
        <dt>Attempts</dt>
        <dd>
          {effect.attempts}
          <AttemptList attempts={effect.attemptList} />
        </dd>
        <dt>Diagnostic</dt>
        <dd>{effect.diagnostic === null ? 'none' : `${effect.diagnostic.code}: ${effect.diagnostic.message}`}</dd>
        {effect.lateReport === undefined ? null : (
          <>
            <dt>Late report from the worker</dt>
            <dd>
              {effect.lateReport.status} <Json value={effect.lateReport.payload} />
            </dd>
          </>
        )}
      </dl>
      <form class="resolve" aria-label={`Resolve ${effect.effectId}`} onSubmit={(event) => (event.preventDefault(), propose('resolve'))}>
          <fieldset>
            <legend>Outcome</legend>
            {(['succeeded', 'failed'] as const).map((value) => (
              <span key={value}>
                <input type="radio" id={`${id}-${value}`} name={`${id}-status`} value={value} checked={status === value} onChange={() => setStatus(value)} />
                <label for={`${id}-${value}`}>{value}</label>{' '}
              </span>
            ))}
          </fieldset>
          <div class="field">
            <label for={`${id}-payload`}>Payload (JSON)</label>
            <textarea id={`${id}-payload`} rows={3} spellcheck={false} value={payload} onInput={(event) => setPayload(event.currentTarget.value)} />
          </div>
          <button type="submit">Resolve…</button>{' '}
          <button type="button" onClick={() => propose('replay')}>
            Replay…
          </button>
        </form>
      {pending === undefined ? null : (
        <div class="confirm" role="alertdialog" aria-labelledby={`${id}-confirm`}>
          <p id={`${id}-confirm`}>
            {pending.kind === 'replay'
              ? `Replay effect ${effect.effectId} of ${entry.processId} under its identity?`
              : `Resolve effect ${effect.effectId} of ${entry.processId} as ${pending.status}?`}
          </p>
          <button type="button" class="danger" onClick={() => void confirm()}>
            Confirm
          </button>{' '}
          <button type="button" onClick={() => setPending(undefined)}>
            Cancel
          </button>
        </div>
      )}
      <ProblemView error={error} />
    </li>
  );
}
