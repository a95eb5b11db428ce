/**
 * Processes: root processes, newest first, one page at a time (the API's cursor), filtered by status,
 * deployment, start time, and whether the tree has an Unknown outcome or an open gate — all kept in the URL. The shown page refreshes itself every few seconds
 * (one request for that page). Bulk actions act on the current filter through the server's bulk route:
 * a dry run counts what matches, and a confirmation names the count before anything is changed.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, takePrefetched, withQuery, type ListedProcess, type Page } from '../api';
import { controlActions, type ControlAction } from '../controls';
import { href, navigate, type Route } from '../route';
import { ProblemView, StatusBadge, Time } from '../widgets';

const statuses = ['running', 'waiting', 'paused', 'completed', 'failed', 'canceled', 'killed'];
const pageSize = 20;
const refreshMs = 2_000;

interface Filters {
  readonly status: string;
  readonly deployment: string;
  readonly startedAfter: string;
  readonly startedBefore: string;
  /** '' (either), 'true' or 'false', as the API takes them. */
  readonly hasUnknown: string;
  readonly hasOpenGate: string;
}

function filtersOf(query: URLSearchParams): Filters {
  return {
    status: query.get('status') ?? '',
    deployment: query.get('deployment') ?? '',
    startedAfter: query.get('startedAfter') ?? '',
    startedBefore: query.get('startedBefore') ?? '',
    hasUnknown: yesNo(query.get('hasUnknown')),
    hasOpenGate: yesNo(query.get('hasOpenGate')),
  };
}

/** A yes/no filter from the URL: anything but `true`/`false` means either. */
function yesNo(value: string | null): string {
  return value === 'true' || value === 'false' ? value : '';
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
    hasUnknown: filters.hasUnknown,
    hasOpenGate: filters.hasOpenGate,
    limit,
    cursor,
  });
}

/** The list request the Processes view makes first for `route` (main.tsx prefetches it). */
export function firstListPath(route: Route): string {
  return listPath(filtersOf(route.query), route.query.get('cursor') ?? undefined, pageSize);
}

/**
 * False until the page's first paint is on screen. Chromium builds a date-time input's editing fields
 * (locale formats, a picker) when the element is created: the two start-time filters cost about as
 * much main-thread time as the whole table, so they are created only once the first paint (normally
 * with the rows: main.tsx waits for the first page) has been presented; their space is held
 * meanwhile, so nothing moves.
 */
function useAfterFirstPaint(): boolean {
  const [painted, setPainted] = useState(false);
  useEffect(() => afterFirstPaint(() => setPainted(true)), []);
  return painted;
}

/** Calls `callback` in a task after the first contentful paint was presented; returns a canceller. */
function afterFirstPaint(callback: () => void): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let frame: number | undefined;
  let observer: PerformanceObserver | undefined;
  const stopWatching = (): void => {
    observer?.disconnect();
    removeEventListener('visibilitychange', later);
  };
  function later(): void {
    stopWatching();
    clearTimeout(timer);
    timer = setTimeout(callback, 0);
  }
  const paintTimed = typeof PerformanceObserver === 'function' && PerformanceObserver.supportedEntryTypes?.includes('paint');
  if (!paintTimed || document.visibilityState === 'hidden') {
    // Nothing to wait for: no paint timing, or a background tab (it paints only once shown).
    later();
  } else if (performance.getEntriesByName('first-contentful-paint').length === 0) {
    observer = new PerformanceObserver((list) => {
      if (list.getEntriesByName('first-contentful-paint').length > 0) later();
    });
    observer.observe({ type: 'paint' });
    // Hidden before its first paint, a tab never reports one.
    addEventListener('visibilitychange', later);
  } else {
    // Painted before (another view came first): the next frame is the one to let go by.
    frame = requestAnimationFrame(later);
  }
  return () => {
    stopWatching();
    if (frame !== undefined) cancelAnimationFrame(frame);
    clearTimeout(timer);
  };
}

export function ProcessesView({ route }: { readonly route: Route }) {
  const filters = filtersOf(route.query);
  const cursor = route.query.get('cursor') ?? undefined;
  const key = listPath(filters, cursor, pageSize);
  // The first page may already be in (main.tsx prefetched it): then the first frame shows its rows.
  const [page, setPage] = useState<Page<ListedProcess> | undefined>(() => takePrefetched<Page<ListedProcess>>(key));
  const [error, setError] = useState<unknown>();
  const prefetchedKey = useRef(page === undefined ? undefined : key);
  const timeFields = useAfterFirstPaint();

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async (): Promise<void> => {
      try {
        const next = await api<Page<ListedProcess>>('GET', key);
        if (!stopped) {
          setPage(next);
          setError(undefined);
        }
      } catch (problem) {
        if (!stopped) setError(problem);
      }
      if (!stopped) timer = setTimeout(() => void load(), refreshMs);
    };
    if (prefetchedKey.current === key) {
      // Rendered from the prefetched page: the next load is the periodic refresh.
      timer = setTimeout(() => void load(), refreshMs);
    } else {
      setPage(undefined);
      void load();
    }
    prefetchedKey.current = undefined;
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
          {timeFields ? (
            <input id="filter-after" type="datetime-local" value={filters.startedAfter} onChange={(event) => apply({ startedAfter: event.currentTarget.value })} />
          ) : (
            <span class="field-pending" />
          )}
        </div>
        <div class="field">
          <label for="filter-before">Started before</label>
          {timeFields ? (
            <input id="filter-before" type="datetime-local" value={filters.startedBefore} onChange={(event) => apply({ startedBefore: event.currentTarget.value })} />
          ) : (
            <span class="field-pending" />
          )}
        </div>
        <div class="field">
          <label for="filter-unknown">Unknown outcome</label>
          <select id="filter-unknown" value={filters.hasUnknown} onChange={(event) => apply({ hasUnknown: event.currentTarget.value })}>
            <option value="">any</option>
            <option value="true">has one</option>
            <option value="false">has none</option>
          </select>
        </div>
        <div class="field">
          <label for="filter-gate">Open gate</label>
          <select id="filter-gate" value={filters.hasOpenGate} onChange={(event) => apply({ hasOpenGate: event.currentTarget.value })}>
            <option value="">any</option>
            <option value="true">has one</option>
            <option value="false">has none</option>
          </select>
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
                <th scope="col">Needs attention</th>
              </tr>
            </thead>
            <tbody>
              {page.items.length === 0 ? (
                <tr>
                  <td colSpan={5}>No process matches.</td>
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
                    <td class="marks">
                      {process.hasUnknown ? <span class="mark mark-unknown">⚠ Unknown outcome</span> : null}
                      {process.hasOpenGate ? <span class="mark mark-wait">⏸ Open gate</span> : null}
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

interface BulkResult {
  readonly matched: number;
  readonly affected: number;
  readonly processesAffected: number;
  readonly skipped: number;
  readonly failed: readonly { readonly rootId: string; readonly code: string; readonly message: string }[];
  readonly truncated: boolean;
  readonly nextCursor: string | null;
}

/** The bulk route's filter for the list's filters (the same members; the start range's lower end is `startedFrom`). */
function bulkFilterOf(filters: Filters): Record<string, string | boolean> {
  const filter: Record<string, string | boolean> = {};
  if (filters.hasUnknown !== '') filter.hasUnknown = filters.hasUnknown === 'true';
  if (filters.hasOpenGate !== '') filter.hasOpenGate = filters.hasOpenGate === 'true';
  if (filters.status !== '') filter.status = filters.status;
  if (filters.deployment !== '') filter.deployment = filters.deployment;
  const from = toInstant(filters.startedAfter);
  if (from !== undefined) filter.startedFrom = from;
  const before = toInstant(filters.startedBefore);
  if (before !== undefined) filter.startedBefore = before;
  return filter;
}

/**
 * Calls `POST /v1/processes:bulk` until the list is covered: one call covers at most 100 roots, and a
 * truncated answer names the cursor to continue from. The totals add up across calls.
 */
async function bulk(filters: Filters, action: ControlAction, dryRun: boolean, onProgress?: (sum: BulkResult) => void): Promise<BulkResult> {
  let sum: BulkResult = { matched: 0, affected: 0, processesAffected: 0, skipped: 0, failed: [], truncated: false, nextCursor: null };
  let cursor: string | undefined;
  do {
    const body = { filter: bulkFilterOf(filters), action, dryRun, ...(dryRun ? {} : { reason: `bulk ${action} from the console` }), ...(cursor === undefined ? {} : { cursor }) };
    const part: BulkResult = await api<BulkResult>('POST', '/v1/processes:bulk', body);
    sum = {
      matched: sum.matched + part.matched,
      affected: sum.affected + part.affected,
      processesAffected: sum.processesAffected + part.processesAffected,
      skipped: sum.skipped + part.skipped,
      failed: [...sum.failed, ...part.failed],
      truncated: part.truncated,
      nextCursor: part.nextCursor,
    };
    onProgress?.(sum);
    cursor = part.truncated && part.nextCursor !== null ? part.nextCursor : undefined;
  } while (cursor !== undefined);
  return sum;
}

/**
 * A bulk action over every root the filter matches, on the server: a dry run counts the trees (changing
 * nothing), the confirmation names that count, and the real call applies the action tree by tree,
 * answering how many trees it changed, skipped (nothing to change) and failed.
 */
function BulkActions({ filters }: { readonly filters: Filters }) {
  const [action, setAction] = useState<ControlAction>('cancel');
  const [matched, setMatched] = useState<number | undefined>();
  const [outcome, setOutcome] = useState<{ readonly done: boolean; readonly result: BulkResult } | undefined>();
  const [error, setError] = useState<unknown>();
  const filterText = [
    filters.status === '' ? undefined : `status ${filters.status}`,
    filters.deployment === '' ? undefined : `deployment ${filters.deployment}`,
    filters.startedAfter === '' ? undefined : `started after ${filters.startedAfter}`,
    filters.startedBefore === '' ? undefined : `started before ${filters.startedBefore}`,
    filters.hasUnknown === '' ? undefined : filters.hasUnknown === 'true' ? 'with an Unknown outcome' : 'without an Unknown outcome',
    filters.hasOpenGate === '' ? undefined : filters.hasOpenGate === 'true' ? 'with an open gate' : 'without an open gate',
  ]
    .filter((part) => part !== undefined)
    .join(', ');

  const dryRun = async (): Promise<void> => {
    setError(undefined);
    setOutcome(undefined);
    try {
      setMatched((await bulk(filters, action, true)).matched);
    } catch (problem) {
      setError(problem);
    }
  };

  const confirm = async (): Promise<void> => {
    setMatched(undefined);
    setError(undefined);
    try {
      const result = await bulk(filters, action, false, (sum) => setOutcome({ done: false, result: sum }));
      setOutcome({ done: true, result });
    } catch (problem) {
      setError(problem);
    }
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
            {action} {matched} process{matched === 1 ? '' : 'es'} (with their trees) matching {filterText === '' ? 'all root processes' : filterText}?
          </p>
          <button type="button" class="danger" disabled={matched === 0} onClick={() => void confirm()}>
            Confirm: {action} {matched}
          </button>{' '}
          <button type="button" onClick={() => setMatched(undefined)}>
            Dismiss
          </button>
        </div>
      )}
      {outcome === undefined ? null : <BulkOutcome action={action} done={outcome.done} result={outcome.result} />}
      <ProblemView error={error} />
    </section>
  );
}

function BulkOutcome({ action, done, result }: { readonly action: ControlAction; readonly done: boolean; readonly result: BulkResult }) {
  return (
    <div role="status" class="bulk-progress" data-done={String(done)}>
      <p>
        {action}
        {done ? '' : ' (in progress)'}: {result.matched} matched, {result.affected} affected ({result.processesAffected} process{result.processesAffected === 1 ? '' : 'es'}), {result.skipped} skipped, {result.failed.length} failed
      </p>
      {result.failed.length === 0 ? null : (
        <ul class="bulk-failed" aria-label="Failed trees">
          {result.failed.map((failure) => (
            <li key={failure.rootId}>
              <code>{failure.rootId}</code>: <code>{failure.code}</code> {failure.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
