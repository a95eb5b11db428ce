/**
 * Inbox: every open item, oldest first, each with a form generated from its answer schema (or a JSON
 * editor), answered from the page. The list refreshes every few seconds; an item that left the server's
 * list (answered elsewhere, the process ended) stays shown as closed until dismissed, so an answer
 * typed meanwhile is not lost without a word: sending it shows the server's problem.
 */
import { useEffect, useState } from 'preact/hooks';
import { answerInbox, listInbox, type InboxItem } from '../inbox-source';
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
  const answer = async (payload: unknown): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      await answerInbox(item, payload);
      setAnswered(true);
    } catch (problem) {
      setError(problem);
    } finally {
      setBusy(false);
    }
  };
  const formId = `answer-${item.key.replace(/[^A-Za-z0-9]/g, '').slice(-16)}`;
  return (
    <li class={`inbox-item${entry.open ? '' : ' closed'}`} data-process-id={item.processId} data-wait-id={item.waitId} aria-labelledby={`${formId}-title`}>
      <h3 id={`${formId}-title`}>
        {item.deployment} — {item.kind} wait {entry.open ? null : <span class="mark mark-closed">closed (no longer open on the server)</span>}
      </h3>
      <p>
        Process <a href={href('tree', item.rootId, { process: item.processId })}>{item.processId}</a>, waiting since <Time at={item.since} />
      </p>
      {item.prompt === null ? null : <p class="prompt">{item.prompt}</p>}
      {item.description === null ? null : <p class="description">{item.description}</p>}
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
      <ProblemView error={error} />
      {entry.open ? null : (
        <button type="button" onClick={onDismiss}>
          Dismiss
        </button>
      )}
    </li>
  );
}
