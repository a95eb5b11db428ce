/**
 * Processes: root processes, newest first, one page at a time (the API's cursor), filtered by status,
 * deployment and start time — all kept in the URL. The shown page refreshes itself every few seconds
 * (one request for that page). Bulk actions act on the current filter: a dry run counts what matches,
 * and a confirmation names the count before anything is sent.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, withQuery, type Page, type ProcessSummary } from '../api';
import { control, controlActions, type ControlAction } from '../controls';
import { href, navigate, type Route } from '../route';
import { ProblemView, StatusBadge, Time } from '../widgets';

const statuses = ['running', 'waiting', 'paused', 'completed', 'failed', 'canceled', 'killed'];
const pageSize = 20;
const refreshMs = 2_000;
/** The most processes one bulk action walks. */
const bulkLimit = 1_000;

interface Filters {
  readonly status: string;
  readonly deployment: string;
  readonly startedAfter: string;
  readonly startedBefore: string;
}

function filtersOf(query: URLSearchParams): Filters {
  return {
    status: query.get('status') ?? '',
    deployment: query.get('deployment') ?? '',
    startedAfter: query.get('startedAfter') ?? '',
    startedBefore: query.get('startedBefore') ?? '',
  };
}

/** A datetime-local value (local time, minutes) as the API's UTC instant. */
function toInstant(local: string): string | undefined {
  if (local === '') return undefined;
  const at = new Date(local);
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
}

function listPath(filters: Filters, cursor: string | undefined, limit: number): string {
  return withQuery('/v1/processes', {
    status: filters.status,
    deployment: filters.deployment,
    startedAfter: toInstant(filters.startedAfter),
    startedBefore: toInstant(filters.startedBefore),
    limit,
    cursor,
  });
}

export function ProcessesView({ route }: { readonly route: Route }) {
  const filters = filtersOf(route.query);
  const cursor = route.query.get('cursor') ?? undefined;
  const [page, setPage] = useState<Page<ProcessSummary> | undefined>();
  const [error, setError] = useState<unknown>();
  const key = listPath(filters, cursor, pageSize);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async (): Promise<void> => {
      try {
        const next = await api<Page<ProcessSummary>>('GET', key);
        if (!stopped) {
          setPage(next);
          setError(undefined);
        }
      } catch (problem) {
        if (!stopped) setError(problem);
      }
      if (!stopped) timer = setTimeout(() => void load(), refreshMs);
    };
    setPage(undefined);
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [key]);

  const apply = (next: Partial<Filters>, nextCursor?: string): void => {
    const merged = { ...filters, ...next };
    navigate(href('processes', undefined, { ...merged, cursor: nextCursor }));
  };

  return (
    <section aria-labelledby="processes-title">
      <h2 id="processes-title">Processes</h2>
      <form class="filters" aria-label="Filters" onSubmit={(event) => event.preventDefault()}>
        <div class="field">
          <label for="filter-status">Status</label>
          <select id="filter-status" value={filters.status} onChange={(event) => apply({ status: event.currentTarget.value })}>
            <option value="">any</option>
            {statuses.map((status) => (
              <option key={status} value={status}>
                {status}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="filter-deployment">Deployment</label>
          <input id="filter-deployment" type="text" value={filters.deployment} placeholder="e.g. demo.sleep" onChange={(event) => apply({ deployment: event.currentTarget.value.trim() })} />
        </div>
        <div class="field">
          <label for="filter-after">Started after</label>
          <input id="filter-after" type="datetime-local" value={filters.startedAfter} onChange={(event) => apply({ startedAfter: event.currentTarget.value })} />
        </div>
        <div class="field">
          <label for="filter-before">Started before</label>
          <input id="filter-before" type="datetime-local" value={filters.startedBefore} onChange={(event) => apply({ startedBefore: event.currentTarget.value })} />
        </div>
      </form>
      <ProblemView error={error} />
      {page === undefined ? (
        <p role="status">Loading…</p>
      ) : (
        <>
          <table class="processes">
            <caption class="visually-hidden">Root processes, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Process</th>
                <th scope="col">Deployment</th>
                <th scope="col">Status</th>
                <th scope="col">Started</th>
              </tr>
            </thead>
            <tbody>
              {page.items.length === 0 ? (
                <tr>
                  <td colSpan={4}>No process matches.</td>
                </tr>
              ) : (
                page.items.map((process) => (
                  <tr key={process.processId} data-process-id={process.processId}>
                    <td>
                      <a href={href('tree', process.processId)}>{process.processId}</a>
                    </td>
                    <td>{process.deployment}</td>
                    <td>
                      <StatusBadge status={process.status} />
                    </td>
                    <td>
                      <Time at={process.startedAt} />
                    </td>
                  </tr>
                ))
              )}
            </tbody>
          </table>
          <nav class="pager" aria-label="Pages">
            {cursor === undefined ? null : (
              <button type="button" onClick={() => apply({})}>
                First page
              </button>
            )}
            {page.nextCursor === null ? null : (
              <button type="button" onClick={() => apply({}, page.nextCursor ?? undefined)}>
                Next page
              </button>
            )}
          </nav>
        </>
      )}
      <BulkActions filters={filters} />
    </section>
  );
}

/**
 * A bulk action over everything the filter matches: the page walks the filtered list (every page, up
 * to {@link bulkLimit}), shows the count, and on confirmation calls the per-process control route for
 * each. (A server-side bulk route would make this one request; until then it is a loop.)
 */
function BulkActions({ filters }: { readonly filters: Filters }) {
  const [action, setAction] = useState<ControlAction>('cancel');
  const [matched, setMatched] = useState<ProcessSummary[] | undefined>();
  const [progress, setProgress] = useState<string | undefined>();
  const [error, setError] = useState<unknown>();
  const filterText = [
    filters.status === '' ? undefined : `status ${filters.status}`,
    filters.deployment === '' ? undefined : `deployment ${filters.deployment}`,
    filters.startedAfter === '' ? undefined : `started after ${filters.startedAfter}`,
    filters.startedBefore === '' ? undefined : `started before ${filters.startedBefore}`,
  ]
    .filter((part) => part !== undefined)
    .join(', ');

  const dryRun = async (): Promise<void> => {
    setError(undefined);
    setProgress(undefined);
    try {
      const found: ProcessSummary[] = [];
      let cursor: string | undefined;
      do {
        const page: Page<ProcessSummary> = await api<Page<ProcessSummary>>('GET', listPath(filters, cursor, 100));
        found.push(...page.items);
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined && found.length < bulkLimit);
      setMatched(found.slice(0, bulkLimit));
    } catch (problem) {
      setError(problem);
    }
  };

  const confirm = async (): Promise<void> => {
    const targets = matched ?? [];
    setMatched(undefined);
    let done = 0;
    const failures: string[] = [];
    for (const process of targets) {
      try {
        await control(process.processId, action);
      } catch (problem) {
        failures.push(`${process.processId}: ${problem instanceof Error ? problem.message : String(problem)}`);
      }
      done += 1;
      setProgress(`${action}: ${done} of ${targets.length} sent`);
    }
    setProgress(`${action} sent to ${targets.length - failures.length} of ${targets.length} processes${failures.length === 0 ? '' : `; refused: ${failures.join('; ')}`}`);
  };

  return (
    <section class="bulk" aria-labelledby="bulk-title">
      <h3 id="bulk-title">Bulk action on the current filter</h3>
      <p>Filter: {filterText === '' ? 'all root processes' : filterText}</p>
      <div class="field">
        <label for="bulk-action">Action</label>
        <select
          id="bulk-action"
          value={action}
          onChange={(event) => {
            setAction(event.currentTarget.value as ControlAction);
            setMatched(undefined);
          }}
        >
          {controlActions.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </div>
      <button type="button" onClick={() => void dryRun()}>
        Dry run: count matching processes
      </button>
      {matched === undefined ? null : (
        <div class="confirm" role="alertdialog" aria-labelledby="bulk-confirm-text">
          <p id="bulk-confirm-text">
            {action} {matched.length} process{matched.length === 1 ? '' : 'es'} matching {filterText === '' ? 'all root processes' : filterText}?
          </p>
          <button type="button" class="danger" disabled={matched.length === 0} onClick={() => void confirm()}>
            Confirm: {action} {matched.length}
          </button>{' '}
          <button type="button" onClick={() => setMatched(undefined)}>
            Dismiss
          </button>
        </div>
      )}
      {progress === undefined ? null : (
        <p role="status" class="bulk-progress">
          {progress}
        </p>
      )}
      <ProblemView error={error} />
    </section>
  );
}
