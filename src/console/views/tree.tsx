/**
 * Tree: one process tree drawn parent → children, each with its status, open wait and Unknown effects,
 * kept current from the tree's SSE stream: every committed event reloads the (small) inspection, and a
 * break in the stream is shown and followed by a full reload. Beside it the event timeline (filterable
 * by type), the whole tree's controls and, for the selected process, its effects with their attempts and
 * its own controls.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, enc, type EffectView, type Page, type ProcessView, type TreeView } from '../api';
import { ProcessControls, terminalStatuses, TreeControls } from '../controls';
import { href, navigate } from '../route';
import { openTreeStream, type StreamMessage, type StreamState } from '../sse';
import { AttemptList, Json, ProblemView, shortId, StatusBadge } from '../widgets';

const timelineLimit = 500;
const reloadDelayMs = 100;

interface TimelineEntry {
  readonly id: string | undefined;
  readonly event: string;
  readonly processId: string | undefined;
  readonly at: string | undefined;
}

function entryOf(message: StreamMessage): TimelineEntry {
  const data = message.data;
  const processId = typeof data.process_id === 'string' ? data.process_id : undefined;
  const at = typeof data.occurred_at === 'string' ? data.occurred_at : typeof data.emitted_at === 'string' ? data.emitted_at : undefined;
  return { id: message.id, event: message.event, processId, at };
}

export function TreeView({ rootId, selected }: { readonly rootId: string; readonly selected: string | undefined }) {
  const [tree, setTree] = useState<TreeView | undefined>();
  const [error, setError] = useState<unknown>();
  const [stream, setStream] = useState<StreamState>({ kind: 'connecting' });
  const [timeline, setTimeline] = useState<TimelineEntry[]>([]);
  const [typeFilter, setTypeFilter] = useState('');
  const [effectsVersion, setEffectsVersion] = useState(0);
  const reloadTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  useEffect(() => {
    let stopped = false;
    const reload = async (): Promise<void> => {
      try {
        const next = await api<TreeView>('GET', `/v1/trees/${enc(rootId)}`);
        if (!stopped) {
          setTree(next);
          setError(undefined);
          setEffectsVersion((version) => version + 1);
        }
      } catch (problem) {
        if (!stopped) setError(problem);
      }
    };
    const scheduleReload = (): void => {
      clearTimeout(reloadTimer.current);
      reloadTimer.current = setTimeout(() => void reload(), reloadDelayMs);
    };
    setTree(undefined);
    setTimeline([]);
    void reload();
    const close = openTreeStream(rootId, {
      onMessage(message) {
        if (message.event.startsWith('scope.stream.')) return;
        setTimeline((entries) => [...entries.slice(-(timelineLimit - 1)), entryOf(message)]);
        if (message.event !== 'agent.delta') scheduleReload();
      },
      onState(state) {
        if (!stopped) setStream(state);
        if (state.kind === 'ended') scheduleReload();
      },
      onResync: scheduleReload,
    });
    return () => {
      stopped = true;
      clearTimeout(reloadTimer.current);
      close();
    };
  }, [rootId]);

  const children = useMemo(() => {
    const byParent = new Map<string, ProcessView[]>();
    for (const process of tree?.processes ?? []) {
      if (process.parentId === null) continue;
      byParent.set(process.parentId, [...(byParent.get(process.parentId) ?? []), process]);
    }
    return byParent;
  }, [tree]);
  const root = tree?.processes.find((process) => process.processId === rootId);
  const chosen = tree?.processes.find((process) => process.processId === (selected ?? rootId));
  const types = [...new Set(timeline.map((entry) => entry.event))].sort();
  const shown = typeFilter === '' ? timeline : timeline.filter((entry) => entry.event === typeFilter);

  return (
    <section aria-labelledby="tree-title">
      <h2 id="tree-title">
        Tree <code>{rootId}</code>
      </h2>
      <StreamMarker state={stream} />
      <ProblemView error={error} />
      {tree === undefined ? null : <TreeControls rootId={rootId} active={tree.processes.some((process) => !terminalStatuses.has(process.status))} />}
      <div class="tree-layout">
        <div class="tree-pane">
          <h3>Processes ({tree?.processes.length ?? 0})</h3>
          {root === undefined ? (
            <p role="status">Loading…</p>
          ) : (
            <ul class="tree" aria-label="Process tree">
              <TreeNode process={root} childrenOf={children} rootId={rootId} selected={selected ?? rootId} />
            </ul>
          )}
        </div>
        <div class="detail-pane">
          {chosen === undefined ? null : <ProcessDetail process={chosen} version={effectsVersion} />}
        </div>
      </div>
      <section class="timeline" aria-labelledby="timeline-title">
        <h3 id="timeline-title">Event timeline</h3>
        <div class="field">
          <label for="timeline-type">Event type</label>
          <select id="timeline-type" value={typeFilter} onChange={(event) => setTypeFilter(event.currentTarget.value)}>
            <option value="">all ({timeline.length})</option>
            {types.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
        </div>
        <ol class="events" aria-label="Events, oldest first">
          {shown.map((entry, index) => (
            <li key={`${entry.id ?? 'x'}-${index}`} data-event={entry.event}>
              <span class="position">#{entry.id ?? '–'}</span> <span class="event-name">{entry.event}</span>{' '}
              {entry.processId === undefined ? null : <span class="process">{shortId(entry.processId)}</span>} {entry.at === undefined ? null : <span class="at">{entry.at}</span>}
            </li>
          ))}
        </ol>
      </section>
    </section>
  );
}

function StreamMarker({ state }: { readonly state: StreamState }) {
  const text =
    state.kind === 'connecting'
      ? 'Stream: connecting…'
      : state.kind === 'live'
        ? state.resyncs === 0
          ? 'Stream: live'
          : `Stream: live — resynced after a break (${state.resyncs}×, last: ${state.lastBreak ?? 'closed'})`
        : state.kind === 'reconnecting'
          ? `Stream: interrupted (${state.reason}); reconnecting from the last event…`
          : state.kind === 'gap'
            ? `Stream: GAP — ${state.reason}; the view was reloaded`
            : `Stream: ended (${state.reason})`;
  const resynced = (state.kind === 'live' && state.resyncs > 0) || state.kind === 'gap' || state.kind === 'reconnecting';
  return (
    <p class={`stream-marker stream-${state.kind}${resynced ? ' stream-resynced' : ''}`} role="status" data-stream={state.kind}>
      {text}
    </p>
  );
}

function TreeNode({ process, childrenOf, rootId, selected }: { readonly process: ProcessView; readonly childrenOf: Map<string, ProcessView[]>; readonly rootId: string; readonly selected: string }) {
  const kids = childrenOf.get(process.processId) ?? [];
  return (
    <li class="tree-node" data-process-id={process.processId} data-status={process.status}>
      <a href={href('tree', rootId, { process: process.processId })} aria-current={process.processId === selected ? 'true' : undefined}>
        <code>{shortId(process.processId)}</code> {process.deployment}
      </a>{' '}
      <StatusBadge status={process.status} />
      {process.waitId === null ? null : (
        <span class="mark mark-wait" title={process.waitId}>
          ⏳ waits ({process.waitKind})
        </span>
      )}
      {process.unknownEffectIds.length === 0 ? null : <span class="mark mark-unknown">⚠ {process.unknownEffectIds.length} Unknown</span>}
      {kids.length === 0 ? null : (
        <ul>
          {kids.map((child) => (
            <TreeNode key={child.processId} process={child} childrenOf={childrenOf} rootId={rootId} selected={selected} />
          ))}
        </ul>
      )}
    </li>
  );
}

function ProcessDetail({ process, version }: { readonly process: ProcessView; readonly version: number }) {
  const [effects, setEffects] = useState<EffectView[] | undefined>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let stopped = false;
    api<Page<EffectView>>('GET', `/v1/processes/${enc(process.processId)}/effects?limit=100`).then(
      (page) => !stopped && (setEffects(page.items), setError(undefined)),
      (problem: unknown) => !stopped && setError(problem),
    );
    return () => {
      stopped = true;
    };
  }, [process.processId, version]);
  return (
    <section aria-labelledby="detail-title" class="process-detail">
      <h3 id="detail-title">
        <code>{process.processId}</code>
      </h3>
      <dl>
        <dt>Deployment</dt>
        <dd>{process.deployment}</dd>
        <dt>Status</dt>
        <dd>
          <StatusBadge status={process.status} /> {process.pauseReason === null ? null : `(${process.pauseReason})`}
        </dd>
        <dt>Wait</dt>
        <dd>
          {process.waitId === null ? (
            'none'
          ) : (
            <>
              {process.waitKind} wait — <a href={href('inbox')}>answer in the Inbox</a>
            </>
          )}
        </dd>
        <dt>Work</dt>
        <dd>{process.work}</dd>
      </dl>
      <ProcessControls processId={process.processId} status={process.status} />
      {process.result === null ? null : (
        <>
          <h4>Result</h4>
          <Json value={process.result.failure ?? process.result.output} />
        </>
      )}
      <h4>Effects</h4>
      <ProblemView error={error} />
      {effects === undefined ? null : effects.length === 0 ? (
        <p>No effects.</p>
      ) : (
        <table class="effects">
          <thead>
            <tr>
              <th scope="col">Effect</th>
              <th scope="col">Step</th>
              <th scope="col">Status</th>
              <th scope="col">Attempts</th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {effects.map((effect) => (
              <tr key={effect.effectId} data-effect-id={effect.effectId}>
                <td>
                  <code title={effect.effectId}>{shortId(effect.effectId)}</code>
                </td>
                <td>{effect.stepSequence}</td>
                <td>
                  <span class={`effect-status effect-${effect.status}`}>{effect.status}</span>
                  {effect.status === 'unknown' ? (
                    <>
                      {' '}
                      <button type="button" onClick={() => navigate(href('unknown'))}>
                        adjudicate
                      </button>
                    </>
                  ) : null}
                </td>
                <td>
                  {effect.attempts}
                  <AttemptList attempts={effect.attemptList} />
                </td>
                <td>{effect.settlement === null ? (effect.diagnostic?.message ?? '—') : `${effect.settlement.status}`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
