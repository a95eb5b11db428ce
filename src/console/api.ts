/**
 * The console's only way to the server: the public REST API, with the bearer token when the server
 * asks for one (a 401 raises the token prompt). Errors carry the server's problem detail as is.
 */

const tokenKey = 'scope.console.token';

/** An RFC 9457 problem as the API sends it. */
export interface Problem {
  readonly type?: string;
  readonly title?: string;
  readonly status?: number;
  readonly detail?: string;
  readonly code?: string;
  readonly [member: string]: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;
  constructor(status: number, problem: Problem) {
    super(problem.detail ?? problem.title ?? `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

let token: string | null = sessionStorage.getItem(tokenKey);
const tokenListeners = new Set<(needed: boolean) => void>();

/** Called with true when the server refused the request for want of a (valid) token. */
export function onTokenNeeded(listener: (needed: boolean) => void): () => void {
  tokenListeners.add(listener);
  return () => tokenListeners.delete(listener);
}

export function setToken(value: string | null): void {
  token = value === null || value.trim() === '' ? null : value.trim();
  if (token === null) sessionStorage.removeItem(tokenKey);
  else sessionStorage.setItem(tokenKey, token);
  for (const listener of tokenListeners) listener(false);
}

export function authHeaders(): Record<string, string> {
  return token === null ? {} : { authorization: `Bearer ${token}` };
}

/** Raises the token prompt; the caller still gets its error. */
export function tokenRefused(): void {
  for (const listener of tokenListeners) listener(true);
}

interface Prefetch {
  readonly answer: Promise<unknown>;
  /** Set once the answer is in (a refused one is not kept: it is asked again, see {@link api}). */
  settled?: { readonly value: unknown };
}

const prefetched = new Map<string, Prefetch>();

/**
 * Starts a GET before the page has rendered (the first view's data, so its request overlaps the
 * bundle's evaluation instead of following its first render). index.html preloads the default first
 * page (`<link rel=preload as=fetch>`) and the browser answers this fetch from that preload, so on
 * `/` the request is on the wire before the bundle has even arrived. The first
 * {@link api} GET (or {@link takePrefetched}) of the same path takes the answer; a refused prefetch is
 * asked again, so the token prompt sees the refusal.
 */
export function prefetch(path: string): Promise<unknown> {
  const entry: Prefetch = { answer: request('GET', path) };
  entry.answer.then(
    (value) => {
      entry.settled = { value };
    },
    () => undefined,
  );
  prefetched.set(path, entry);
  return entry.answer;
}

/** The prefetched answer for `path` if it is already in (then taken), so a view can render it at once. */
export function takePrefetched<T>(path: string): T | undefined {
  const entry = prefetched.get(path);
  if (entry?.settled === undefined) return undefined;
  prefetched.delete(path);
  return entry.settled.value as T;
}

export async function api<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const early = method === 'GET' ? prefetched.get(path) : undefined;
  if (early !== undefined) {
    prefetched.delete(path);
    try {
      return (await early.answer) as T;
    } catch {
      // Asked again below, with the listeners of the rendered page in place.
    }
  }
  return request<T>(method, path, body);
}

async function request<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...authHeaders() };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not the API's JSON (a proxy's error page, say): shown as the reason.
    parsed = { title: response.statusText, detail: text.slice(0, 200) };
  }
  if (!response.ok) {
    if (response.status === 401) tokenRefused();
    throw new ApiError(response.status, (parsed ?? { title: response.statusText }) as Problem);
  }
  return parsed as T;
}

/** A path with its query, leaving out empty members. */
export function withQuery(path: string, query: Record<string, string | number | undefined>): string {
  const parameters = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') parameters.set(name, String(value));
  const text = parameters.toString();
  return text === '' ? path : `${path}?${text}`;
}

export const enc = encodeURIComponent;

/** The API's shapes the console reads (a subset of openapi.yaml's components). */
export interface ProcessSummary {
  readonly processId: string;
  readonly deployment: string;
  readonly status: string;
  readonly startedAt: string;
}
/** A row of `GET /v1/processes`: the summary with its tree's marks. */
export interface ListedProcess extends ProcessSummary {
  readonly hasUnknown: boolean;
  readonly hasOpenGate: boolean;
}
export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | null;
}
export interface ProcessView extends ProcessSummary {
  readonly rootId: string;
  readonly parentId: string | null;
  readonly depth: number;
  readonly waitId: string | null;
  readonly waitKind: string | null;
  readonly pauseReason: string | null;
  readonly unknownEffectIds: string[];
  readonly work: string;
  readonly result: { readonly status: string; readonly output: unknown; readonly failure: { readonly message: string } | null } | null;
}
export interface TreeView {
  readonly rootId: string;
  readonly stopped: boolean;
  readonly active: boolean;
  readonly processes: ProcessView[];
}
export interface EffectView {
  readonly effectId: string;
  readonly stepSequence: number;
  readonly target: string;
  readonly status: string;
  readonly attempts: number;
  readonly attemptList: readonly EffectAttempt[];
  readonly settlement: { readonly status: string; readonly payload: unknown } | null;
  readonly diagnostic: { readonly kind: string; readonly code: string; readonly message: string } | null;
  readonly lateReport?: { readonly attemptId: string; readonly status: string; readonly payload: unknown; readonly reason: string | null };
}
export interface EffectAttempt {
  readonly attemptId: string;
  readonly startedAt: string | null;
  /** The BullMQ worker, or the node that ran it in its owner; null when not known. */
  readonly worker: string | null;
}
export interface UnknownEffect {
  readonly processId: string;
  readonly rootId: string;
  readonly deployment: string;
  readonly effect: EffectView;
}
export interface DeploymentView {
  readonly name: string;
  readonly description: string;
  readonly deploymentRef: string;
  readonly inputSchema: unknown;
  readonly outputSchema: unknown;
  readonly signalSchema: unknown;
}
export interface LogEntry {
  readonly position: string;
  readonly type: string;
  readonly processId: string;
  readonly data: Record<string, unknown>;
}
