/**
 * The scopes a token may carry, and which one each operation needs: one table, so what a token can do
 * is reviewed in one place. Every route the app serves must appear here (buildApp refuses to start
 * otherwise), either with its scope or as `public` (liveness, readiness and the API's own document).
 */
export const scopeValues = ['processes:read', 'processes:write', 'effects:resolve', 'trees:admin', 'metrics:read', 'gates:answer'] as const;

export type Scope = (typeof scopeValues)[number];

export function isScope(value: unknown): value is Scope {
  return typeof value === 'string' && (scopeValues as readonly string[]).includes(value);
}

/** What each scope allows, for the docs. */
export const scopeDescriptions: Readonly<Record<Scope, string>> = {
  'processes:read': 'read deployments, processes, results, effects, signals, waits, trees, events and streams',
  'processes:write': 'start processes, deliver signals, pause, resume, cancel and kill',
  'effects:resolve': 'replay or resolve an effect whose outcome is unknown',
  'trees:admin': 'capture, restore, release and purge trees; list and evict nodes',
  'metrics:read': 'read the Prometheus metrics',
  'gates:answer': 'answer human gates',
};

/** The scope each operation (by operationId) requires; `public` needs no token. */
export const operationScopes: Readonly<Record<string, Scope | 'public'>> = {
  getHealth: 'public',
  getReadiness: 'public',
  getOpenApi: 'public',
  getMetrics: 'metrics:read',
  listDeployments: 'processes:read',
  getDeployment: 'processes:read',
  listDeploymentVersions: 'processes:read',
  startProcess: 'processes:write',
  listProcesses: 'processes:read',
  getProcess: 'processes:read',
  getProcessResult: 'processes:read',
  getProcessChildren: 'processes:read',
  deliverSignals: 'processes:write',
  listSignals: 'processes:read',
  pauseProcess: 'processes:write',
  resumeProcess: 'processes:write',
  cancelProcess: 'processes:write',
  killProcess: 'processes:write',
  pauseTree: 'processes:write',
  resumeTree: 'processes:write',
  cancelTree: 'processes:write',
  killTree: 'processes:write',
  bulkControlProcesses: 'processes:write',
  listEffects: 'processes:read',
  listUnknownEffects: 'processes:read',
  replayEffect: 'effects:resolve',
  resolveEffect: 'effects:resolve',
  getTree: 'processes:read',
  getTreeSnapshot: 'processes:read',
  captureTree: 'trees:admin',
  restoreTree: 'trees:admin',
  releaseTree: 'trees:admin',
  listNodes: 'trees:admin',
  evictNode: 'trees:admin',
  listWaits: 'processes:read',
  listGates: 'processes:read',
  getGate: 'processes:read',
  answerGate: 'gates:answer',
  openGate: 'processes:write',
  getGateAnswer: 'processes:read',
  closeGate: 'processes:write',
  // Authorised by the one-time token in its URL: the visited page holds no API key.
  gateCallback: 'public',
  listProcessEvents: 'processes:read',
  streamTree: 'processes:read',
};

/** The security requirement an operation documents in openapi.yaml (none for a public one). */
export function securityOf(operationId: string | undefined): Array<Record<string, string[]>> | undefined {
  const scope = operationId === undefined ? undefined : operationScopes[operationId];
  if (scope === undefined) throw new Error(`operation ${String(operationId)} has no scope in src/app/auth/scopes.ts`);
  return scope === 'public' ? undefined : [{ bearerAuth: [scope] }];
}
