/**
 * Inbox: every open gate, oldest first, each with a form generated from its answer schema (or a JSON
 * editor), answered from the page; an answer that comes second shows the one that came first (when, by
 * which provenance, by whom). The list refreshes every few seconds; an item that left the server's
 * list (answered elsewhere, the process ended) stays shown as closed until dismissed, so an answer
 * typed meanwhile is not lost without a word: sending it shows the server's problem.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { answerInbox, firstAnswerOf, listInbox, newRequestId, type FirstAnswer, type InboxItem } from '../inbox-source';
import { href } from '../route';
import { SchemaForm } from '../schema-form';
import { Json, ProblemView, Time } from '../widgets';

const refreshMs = 3_000;

interface Shown {
  readonly item: InboxItem;
  readonly open: boolean;
}

export function InboxView() {
  const [shown, setShown] = useState<Shown[] | undefined>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async (): Promise<void> => {
      try {
        const items = await listInbox();
        if (stopped) return;
        setError(undefined);
        setShown((previous) => {
          const open = new Set(items.map((item) => item.key));
          const closed = (previous ?? []).filter((entry) => !open.has(entry.item.key)).map((entry) => ({ item: entry.item, open: false }));
          return [...items.map((item) => ({ item, open: true })), ...closed];
        });
      } catch (problem) {
        if (!stopped) setError(problem);
      }
      if (!stopped) timer = setTimeout(() => void load(), refreshMs);
    };
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, []);
  const dismiss = (key: string): void => setShown((entries) => (entries ?? []).filter((entry) => entry.item.key !== key));
  const openCount = shown?.filter((entry) => entry.open).length ?? 0;
  return (
    <section aria-labelledby="inbox-title">
      <h2 id="inbox-title">Inbox ({openCount} open)</h2>
      <ProblemView error={error} />
      {shown === undefined ? (
        <p role="status">Loading…</p>
      ) : shown.length === 0 ? (
        <p>Nothing is waiting for an answer.</p>
      ) : (
        <ul class="inbox">
          {shown.map((entry) => (
            <InboxCard key={entry.item.key} entry={entry} onDismiss={() => dismiss(entry.item.key)} />
          ))}
        </ul>
      )}
    </section>
  );
}

function InboxCard({ entry, onDismiss }: { readonly entry: Shown; readonly onDismiss: () => void }) {
  const { item } = entry;
  const [busy, setBusy] = useState(false);
  const [answered, setAnswered] = useState(false);
  const [error, setError] = useState<unknown>();
  // One request id per submission: sending the same answer again (a retry after a lost response) reuses
  // it, so the server admits it once; a different answer is a new submission with a new id.
  const submission = useRef<{ readonly answer: string; readonly requestId: string } | undefined>(undefined);
  const answer = async (payload: unknown): Promise<void> => {
    setBusy(true);
    setError(undefined);
    const text = JSON.stringify(payload);
    if (submission.current?.answer !== text) submission.current = { answer: text, requestId: newRequestId() };
    try {
      await answerInbox(item, payload, submission.current.requestId);
      setAnswered(true);
    } catch (problem) {
      setError(problem);
    } finally {
      setBusy(false);
    }
  };
  const formId = `answer-${item.key.replace(/[^A-Za-z0-9]/g, '').slice(-16)}`;
  return (
    <li class={`inbox-item${entry.open ? '' : ' closed'}`} data-process-id={item.processId} data-wait-id={item.waitId} data-gate-id={item.gateId} aria-labelledby={`${formId}-title`}>
      <h3 id={`${formId}-title`}>
        {item.deployment} — {item.kind} gate {entry.open ? null : <span class="mark mark-closed">closed (no longer open on the server)</span>}
      </h3>
      <p>
        Process <a href={href('tree', item.rootId, { process: item.processId })}>{item.processId}</a>
        {item.since === null ? null : (
          <>
            , waiting since <Time at={item.since} />
          </>
        )}
      </p>
      {item.prompt === null ? null : <p class="prompt">{item.prompt}</p>}
      <details>
        <summary>Answer schema</summary>
        <Json value={item.answerSchema} />
      </details>
      {answered ? (
        <p role="status" class="answered">
          Answered from this page.
        </p>
      ) : (
        <SchemaForm id={formId} schema={item.answerSchema} submitLabel="Send answer" busy={busy} onSubmit={(payload) => void answer(payload)} />
      )}
      <FirstAnswerView first={firstAnswerOf(error)} />
      <ProblemView error={error} />
      {entry.open ? null : (
        <button type="button" onClick={onDismiss}>
          Dismiss
        </button>
      )}
    </li>
  );
}

/** Who answered first, when this page's answer came second. */
function FirstAnswerView({ first }: { readonly first: FirstAnswer | undefined }) {
  if (first === undefined) return null;
  return (
    <p class="first-answer" role="status" data-provenance={first.provenance}>
      Answered first {first.answeredAt === null ? '' : 'at '}
      {first.answeredAt === null ? null : <Time at={first.answeredAt} />} by <strong>{first.actor ?? 'an unnamed caller'}</strong> (provenance: <code>{first.provenance}</code>); this answer was not recorded.
    </p>
  );
}
