/** Deployments: the catalog with its schemas, and a form (from the input schema) that starts a process. */
import { useEffect, useState } from 'preact/hooks';
import { api, type DeploymentView, type Page, type ProcessView } from '../api';
import { href } from '../route';
import { SchemaForm } from '../schema-form';
import { Json, ProblemView } from '../widgets';

export function DeploymentsView() {
  const [catalog, setCatalog] = useState<DeploymentView[] | undefined>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    api<Page<DeploymentView>>('GET', '/v1/deployments').then(
      (page) => setCatalog(page.items),
      (problem: unknown) => setError(problem),
    );
  }, []);
  return (
    <section aria-labelledby="deployments-title">
      <h2 id="deployments-title">Deployments</h2>
      <ProblemView error={error} />
      {catalog === undefined ? (
        <p role="status">Loading…</p>
      ) : (
        <ul class="deployments">
          {catalog.map((deployment) => (
            <DeploymentCard key={deployment.name} deployment={deployment} />
          ))}
        </ul>
      )}
    </section>
  );
}

function DeploymentCard({ deployment }: { readonly deployment: DeploymentView }) {
  const [started, setStarted] = useState<ProcessView | undefined>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const id = `start-${deployment.name.replace(/[^A-Za-z0-9]/g, '-')}`;
  const start = async (input: unknown): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      setStarted(await api<ProcessView>('POST', '/v1/processes', { deployment: deployment.name, input }));
    } catch (problem) {
      setError(problem);
    } finally {
      setBusy(false);
    }
  };
  return (
    <li class="deployment" data-deployment={deployment.name} aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>{deployment.name}</h3>
      <p>{deployment.description}</p>
      <p class="ref">
        Version <code>{deployment.deploymentRef}</code>
      </p>
      <details>
        <summary>Schemas</summary>
        <h4>Input</h4>
        <Json value={deployment.inputSchema} />
        <h4>Output</h4>
        <Json value={deployment.outputSchema} />
        <h4>Signals</h4>
        <Json value={deployment.signalSchema} />
      </details>
      <details>
        <summary>Start a process</summary>
        <SchemaForm id={id} schema={deployment.inputSchema} submitLabel={`Start ${deployment.name}`} busy={busy} onSubmit={(input) => void start(input)} />
      </details>
      {started === undefined ? null : (
        <p role="status" class="started">
          Started <a href={href('tree', started.rootId)}>{started.processId}</a>
        </p>
      )}
      <ProblemView error={error} />
    </li>
  );
}
