/** The console's shell: navigation, the token prompt (when the server asks for one), and the views. */
import './console.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { onTokenNeeded, prefetch, setToken } from './api';
import { href, parseRoute, useRoute } from './route';
import { DeploymentsView } from './views/deployments';
import { InboxView } from './views/inbox';
import { firstListPath, ProcessesView } from './views/processes';
import { TreeView } from './views/tree';
import { UnknownView } from './views/unknown';

const views = [
  { view: 'processes', label: 'Processes' },
  { view: 'inbox', label: 'Inbox' },
  { view: 'unknown', label: 'Unknown outcomes' },
  { view: 'deployments', label: 'Deployments' },
] as const;

function TokenPrompt({ onSaved }: { readonly onSaved: () => void }) {
  const [value, setValue] = useState('');
  return (
    <form
      class="token"
      aria-label="API token"
      onSubmit={(event) => {
        event.preventDefault();
        setToken(value);
        onSaved();
      }}
    >
      <p role="alert">This server requires an API token (an API key or a JWT) for its API.</p>
      <label for="token-input">Bearer token</label> <input id="token-input" type="password" autoComplete="off" value={value} onInput={(event) => setValue(event.currentTarget.value)} />{' '}
      <button type="submit">Use token</button>
    </form>
  );
}

function App() {
  const route = useRoute();
  const [needsToken, setNeedsToken] = useState(false);
  const [generation, setGeneration] = useState(0);
  useEffect(() => onTokenNeeded((needed) => needed && setNeedsToken(true)), []);
  const body =
    route.view === 'tree' && route.id !== undefined ? (
      <TreeView rootId={route.id} selected={route.query.get('process') ?? undefined} />
    ) : route.view === 'inbox' ? (
      <InboxView />
    ) : route.view === 'unknown' ? (
      <UnknownView />
    ) : route.view === 'deployments' ? (
      <DeploymentsView />
    ) : (
      <ProcessesView route={route} />
    );
  return (
    <>
      <header>
        <h1>Scope console</h1>
        <nav aria-label="Views">
          <ul>
            {views.map(({ view, label }) => (
              <li key={view}>
                <a href={href(view)} aria-current={route.view === view ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
      </header>
      {needsToken ? (
        <TokenPrompt
          onSaved={() => {
            setNeedsToken(false);
            setGeneration((value) => value + 1);
          }}
        />
      ) : null}
      <main key={generation}>{body}</main>
    </>
  );
}

/**
 * How long the first render waits for the Processes view's first page. Rendered with its rows, the
 * page is styled, laid out and painted once; rendered before them, it is done twice (the "Loading…"
 * frame, then the rows), on the same main thread the rows wait for. A slow server still gets the
 * loading state after this long.
 */
const firstPageWaitMs = 250;

/** The performance mark set when the first page is in: before the first render, that render shows its rows. */
const firstPageMark = 'scope.console.first-page';

const mount = document.getElementById('app');
if (mount !== null) {
  const first = parseRoute(location.hash);
  const start = (): void => render(<App />, mount);
  if (first.view === 'processes') {
    const answer = prefetch(firstListPath(first));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, firstPageWaitMs);
    });
    // The mark says when the page was in for the first render (the browser's performance timeline).
    const pageIn = answer.then(
      () => void performance.mark(firstPageMark),
      () => undefined,
    );
    void Promise.race([pageIn, waited]).then(() => {
      clearTimeout(timer);
      start();
    });
  } else start();
}
