/**
 * One fuzzing run against one real server: start it (and, in Redis mode, a private redis-server),
 * seed a few live processes of every demo, then let fast-check draw `count` cases (generated from
 * openapi.yaml, or hand-made hostile ones) from `seed`, send each, and check every answer and the
 * server after it. On the first violation fast-check shrinks the case against the same server and
 * the run reports the seed, the replay path and the smallest failing request. Afterwards every
 * acknowledged write is read back and every tree restored (Redis mode: on a fresh server that
 * takes the trees over).
 */
import fc from 'fast-check';
import { startRedisServer, type RedisServer } from '../../test/helpers/redis-server.js';
import { checkExchange, checkResponse, type Violation } from './checks.js';
import { hostileCases, planHostile, type HostileCase, type Plan, type PlannedExchange } from './hostile-cases.js';
import { Ledger, type Verification } from './ledger.js';
import { call, LiveState } from './live-state.js';
import { loadSpec } from './openapi-spec.js';
import { materialize, operationCases, type Acknowledgeable, type CatalogEntry, type OperationCase } from './openapi-requests.js';
import { send, serialize, slowLoris, type Exchange } from './raw-client.js';
import { startScopeServer, type ScopeServer } from './scope-server.js';

export type Mode = 'embedded' | 'redis';

export interface FuzzOptions {
  readonly mode: Mode;
  readonly seed: number;
  /** Cases to draw (each sends at least one request). */
  readonly count: number;
  /** A resident set above this is a violation (default 1 GiB). */
  readonly maxRssBytes?: number;
  readonly progress?: (line: string) => void;
}

export interface FailingCase {
  readonly seed: number;
  readonly path: string | undefined;
  readonly counterexample: unknown;
  readonly requests: readonly string[];
  readonly violations: readonly Violation[];
}

export interface FuzzReport {
  readonly mode: Mode;
  readonly seed: number;
  readonly cases: number;
  /** Requests the cases sent (bookkeeping reads not counted). */
  readonly requests: number;
  /** Status → count; `closed` and `timeout` for exchanges without an answer. */
  readonly statuses: Readonly<Record<string, number>>;
  /** Case kind (operationId or hostile case name) → status → count. */
  readonly byKind: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Writes the server acknowledged (2xx starts, 2xx signal batches). */
  readonly acknowledged: { readonly starts: number; readonly signalBatches: number };
  readonly maxRssBytes: number;
  readonly durationMs: number;
  readonly loris: { readonly opened: number; readonly outcomes: Readonly<Record<string, number>> };
  readonly verification: Omit<Verification, 'violations'> | undefined;
  /** Everything wrong, the failing case's violations included. */
  readonly violations: readonly Violation[];
  readonly failure: FailingCase | undefined;
}

type Case = OperationCase | HostileCase;

/**
 * Open slow-loris sockets at most; the server's request deadline; how long the fuzzer holds each
 * socket before it lets go: a socket still unanswered then is a violation (ten times the deadline,
 * so that a server slowed by a loaded machine is not taken for one that never answers).
 */
const lorisLimit = 12;
const requestTimeoutMs = 2_000;
const lorisHoldMs = 20_000;

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const started = performance.now();
  const progress = options.progress ?? (() => undefined);
  const spec = loadSpec();
  const rules = { problemCodes: spec.problemCodes };
  let redis: RedisServer | undefined;
  const env: Record<string, string> = {
    // Small enough that the stream floods reach it: load shedding (503 + Retry-After) is exercised.
    SCOPE_SSE_MAX_STREAMS: '8',
    // Short enough that every slow-loris socket is cut off (408) while the fuzzer still holds it.
    SCOPE_REQUEST_TIMEOUT_MS: String(requestTimeoutMs),
  };
  if (options.mode === 'redis') {
    redis = await startRedisServer();
    env.SCOPE_REDIS_URL = redis.url;
    env.SCOPE_KEY_PREFIX = `fuzz${options.seed % 100_000}`;
  }
  let server: ScopeServer | undefined;
  const violations: Violation[] = [];
  const statuses: Record<string, number> = {};
  const byKind: Record<string, Record<string, number>> = {};
  const acknowledged = { starts: 0, signalBatches: 0 };
  const lorisOutcomes: Record<string, number> = {};
  let requests = 0;
  let cases = 0;
  let lorisOpened = 0;
  let verification: Verification | undefined;
  let failure: FailingCase | undefined;
  let maxRss = 0;
  try {
    server = await startScopeServer(env);
    const live = server;
    const host = `${live.url.hostname}:${live.url.port}`;
    const state = new LiveState();
    const ledger = new Ledger();
    const catalog = await readCatalog(live.url);
    await seedProcesses(live.url, state, ledger);
    await state.refresh(live.url);
    progress(`${options.mode}: started in ${Math.round(performance.now() - started)} ms`);
    progress(`${options.mode}: server pid ${live.pid} at ${live.url.href}, seed ${options.seed}, ${options.count} cases`);

    let kind = '';
    const count = (key: string, code?: string): void => {
      statuses[key] = (statuses[key] ?? 0) + 1;
      const ofKind = (byKind[kind] ??= {});
      const detailed = code === undefined ? key : `${key}/${code}`;
      ofKind[detailed] = (ofKind[detailed] ?? 0) + 1;
    };
    const lorises = new Set<Promise<void>>();
    const closers = new Set<() => void>();
    let crashed = false;
    /** Set once the cases are done: sockets closed from here on were not held too long. */
    let stopping = false;
    let lastFailing: Omit<FailingCase, 'seed' | 'path' | 'counterexample'> | undefined;

    const acknowledge = (acknowledges: Acknowledgeable | undefined, exchange: Exchange): Violation[] => {
      if (acknowledges === undefined || exchange.kind !== 'answered') return [];
      const response = exchange.responses[0]!;
      if (response.status < 200 || response.status >= 300) return [];
      if (acknowledges.kind === 'release') {
        if (acknowledges.purge) ledger.purged(acknowledges.rootId);
        return [];
      }
      let body: any;
      try {
        body = JSON.parse(response.body.toString('utf8'));
      } catch {
        return [{ rule: 'json', detail: `a ${response.status} write answer that is not JSON` }];
      }
      if (acknowledges.kind === 'start') {
        if (typeof body.processId !== 'string') return [{ rule: 'start', detail: `a ${response.status} start without a processId` }];
        if (body.deployment !== acknowledges.deployment) return [{ rule: 'start', detail: `started ${acknowledges.deployment}, answered ${body.deployment}` }];
        ledger.started(body.processId, body.rootId, body.deployment);
        acknowledged.starts += 1;
        state.add({ processId: body.processId, rootId: body.rootId, deployment: body.deployment });
        return [];
      }
      const known = state.processes.find((process) => process.processId === acknowledges.processId);
      ledger.signalled(acknowledges.processId, known?.rootId, acknowledges.signals);
      // An answer moves the process past its wait: until the next refresh, address nothing.
      state.waits.delete(acknowledges.processId);
      acknowledged.signalBatches += 1;
      return [];
    };

    const startLoris = (loris: NonNullable<Plan['loris']>): void => {
      if (closers.size >= lorisLimit) return;
      lorisOpened += 1;
      requests += 1;
      const socket = slowLoris(live.url, loris.head, loris.drip, loris.intervalMs);
      const opened = performance.now();
      let heldToTheEnd = false;
      const timer = setTimeout(() => {
        heldToTheEnd = true;
        socket.close();
      }, lorisHoldMs);
      closers.add(socket.close);
      const watched = socket.done.then((exchange) => {
        clearTimeout(timer);
        closers.delete(socket.close);
        const key = exchange.kind === 'answered' ? String(exchange.responses[0]!.status) : 'held';
        lorisOutcomes[key] = (lorisOutcomes[key] ?? 0) + 1;
        if (exchange.kind === 'answered') for (const violation of checkResponse(exchange.responses[0]!, rules, 'POST')) violations.push({ ...violation, detail: `slow loris: ${violation.detail}` });
        else if (!stopping) {
          // Both are violations; which one it was says where to look (the deadline, or an answer lost on close).
          const what = heldToTheEnd
            ? `was still held after ${lorisHoldMs} ms`
            : `was closed by the server without an answer after ${Math.round(performance.now() - opened)} ms${exchange.kind === 'closed' && exchange.partial !== '' ? ` (received ${JSON.stringify(exchange.partial.slice(0, 120))})` : ''}`;
          violations.push({ rule: 'slow-loris', detail: `a socket that never finished its request ${what} (deadline ${requestTimeoutMs} ms): ${JSON.stringify(loris.head.subarray(0, 120).toString('latin1'))}` });
        }
      });
      lorises.add(watched);
      void watched.finally(() => lorises.delete(watched));
    };

    const runCase = async (testCase: Case): Promise<boolean> => {
      if (crashed) return true;
      cases += 1;
      kind = testCase.kind === 'operation' ? testCase.operationId : testCase.name;
      if (cases % 25 === 0) {
        await state.refresh(live.url).catch(() => undefined);
        // Keep processes waiting for answers around, or signals only ever meet finished processes.
        if (state.waits.size < 4) await seedWaiting(live.url, state, ledger).catch(() => undefined);
      }
      if (cases % 1000 === 0) progress(`${options.mode}: ${cases} cases, ${requests} requests, max RSS ${mib(live.maxRss())} MiB`);
      const caseStarted = performance.now();
      const plan = planOf(testCase, state, host, spec);
      if (plan.loris !== undefined) startLoris(plan.loris);
      requests += plan.exchanges.length;
      const outcomes = await Promise.all(
        plan.exchanges.map((exchange) =>
          send(live.url, exchange.bytes, {
            expect: exchange.expect ?? 1,
            ...(holdsByDesign(exchange) ? { timeoutMs: captureWaitMs } : {}),
            head: methodOf(exchange) === 'HEAD',
            ...(exchange.streamReadMs === undefined ? {} : { streamReadMs: exchange.streamReadMs }),
          }),
        ),
      );
      const found: Violation[] = [];
      const elapsed = performance.now() - caseStarted;
      if (elapsed > 2_000) progress(`${options.mode}: slow case (${Math.round(elapsed)} ms): ${plan.exchanges[0]?.label.slice(0, 200) ?? ''}`);
      plan.exchanges.forEach((exchange, index) => {
        const outcome = outcomes[index]!;
        if (outcome.kind === 'answered') for (const response of outcome.responses) count(String(response.status), problemCode(response.body, response.status));
        else if (outcome.kind === 'timeout' && holdsByDesign(exchange)) {
          count('capture-held');
          return;
        } else count(outcome.kind);
        found.push(...checkExchange(outcome, rules, methodOf(exchange), exchange.allowClose === true), ...acknowledge(exchange.acknowledges, outcome));
      });
      if (plan.oneProcess === true) found.push(...oneProcess(outcomes));
      // Error logs are collected for the report, not pinned on this case: a background slow-loris
      // socket or a dispatch of an earlier case can be their cause (their requestId says which).
      violations.push(...live.takeAlarms().map((alarm) => ({ rule: 'server-log', detail: alarm })));
      if (!live.alive()) {
        crashed = true;
        found.push({ rule: 'crash', detail: `the server ended (${live.exitDescription()})` });
      }
      if (found.length === 0) return true;
      lastFailing = { requests: plan.exchanges.map((exchange) => exchange.label), violations: found };
      return false;
    };

    const arbitrary: fc.Arbitrary<Case> = fc.oneof(
      { arbitrary: operationCases(spec, catalog), weight: 7 },
      { arbitrary: hostileCases, weight: 3 },
    );
    const details = await fc.check(fc.asyncProperty(arbitrary, runCase), { seed: options.seed, numRuns: options.count, endOnFailure: false });
    if (details.failed) {
      failure = {
        seed: details.seed,
        path: details.counterexamplePath ?? undefined,
        counterexample: details.counterexample?.[0],
        requests: lastFailing?.requests ?? [],
        violations: lastFailing?.violations ?? [{ rule: 'property', detail: String(details.errorInstance ?? 'failed') }],
      };
      violations.push(...failure.violations);
    }

    progress(`${options.mode}: cases done at ${Math.round(performance.now() - started)} ms`);
    stopping = true;
    for (const close of closers) close();
    await Promise.all(lorises);
    violations.push(...live.takeAlarms().map((alarm) => ({ rule: 'server-log', detail: alarm })));
    if (!live.alive()) {
      if (!crashed) violations.push({ rule: 'crash', detail: `the server ended (${live.exitDescription()})` });
    } else if (options.mode === 'embedded') {
      verification = await ledger.verify(live.url, 'in-place');
    } else {
      // The fuzzed server shuts down; a fresh one over the same Redis must take every tree over.
      maxRss = live.maxRss();
      const exit = await live.stop();
      if (exit !== 'exit code 0') violations.push({ rule: 'shutdown', detail: `the fuzzed server ended with ${exit}` });
      violations.push(...live.takeAlarms().map((alarm) => ({ rule: 'server-log', detail: `during shutdown: ${alarm}` })));
      const fresh = await startScopeServer(env);
      try {
        verification = await ledger.verify(fresh.url, 'takeover');
        violations.push(...fresh.takeAlarms().map((alarm) => ({ rule: 'server-log', detail: `takeover server: ${alarm}` })));
      } finally {
        await fresh.stop();
      }
    }
    if (verification !== undefined) violations.push(...verification.violations);
    maxRss = Math.max(maxRss, live.maxRss());
    const bound = options.maxRssBytes ?? 1024 * 1024 * 1024;
    if (maxRss > bound) violations.push({ rule: 'rss', detail: `the server's resident set reached ${mib(maxRss)} MiB (bound ${mib(bound)} MiB)` });
  } finally {
    await server?.stop();
    await redis?.stop();
  }
  const { violations: _omitted, ...verified } = verification ?? { violations: [] };
  return {
    mode: options.mode,
    seed: options.seed,
    cases,
    requests,
    statuses,
    byKind,
    acknowledged,
    maxRssBytes: maxRss,
    durationMs: performance.now() - started,
    loris: { opened: lorisOpened, outcomes: lorisOutcomes },
    verification: verification === undefined ? undefined : (verified as Omit<Verification, 'violations'>),
    violations,
    failure,
  };
}

function planOf(testCase: Case, state: LiveState, host: string, spec: ReturnType<typeof loadSpec>): Plan {
  if (testCase.kind === 'hostile') return planHostile(testCase, { state, host });
  const { request, acknowledges } = materialize(spec, testCase, state, host);
  const bytes = serialize(request);
  const exchange: PlannedExchange = { bytes, label: labelOf(bytes), ...(acknowledges === undefined ? {} : { acknowledges }) };
  return { exchanges: [exchange] };
}

/**
 * A capture quiesces the tree: it answers once in-flight Effects settle (a demo.sleep of ten
 * minutes holds it that long, by design). Not waited for beyond {@link captureWaitMs}.
 */
function holdsByDesign(exchange: PlannedExchange): boolean {
  return /^POST \S*\/capture[ ?]/.test(exchange.label);
}

const captureWaitMs = 1_500;

function problemCode(body: Buffer, status: number): string | undefined {
  if (status < 400) return undefined;
  try {
    return String((JSON.parse(body.toString('utf8')) as { code?: unknown }).code);
  } catch {
    return undefined;
  }
}

function methodOf(exchange: PlannedExchange): string {
  return exchange.bytes.subarray(0, 16).toString('latin1').split(' ')[0] ?? '';
}

function labelOf(bytes: Buffer): string {
  const text = bytes.subarray(0, 600).toString('latin1');
  return bytes.length > 600 ? `${text}… (${bytes.length} bytes)` : text;
}

/** Concurrent starts with one key and body: every 2xx names the same process. */
function oneProcess(outcomes: readonly Exchange[]): Violation[] {
  const ids = new Set<string>();
  const bodies = new Set<string>();
  for (const outcome of outcomes) {
    if (outcome.kind !== 'answered' || outcome.responses[0]!.status >= 300) continue;
    const body = outcome.responses[0]!.body.toString('utf8');
    try {
      ids.add(String((JSON.parse(body) as { processId?: unknown }).processId));
      bodies.add(body.slice(0, 200));
    } catch {
      // reported by the JSON check
    }
  }
  return ids.size > 1 ? [{ rule: 'idempotency', detail: `one Idempotency-Key started ${ids.size} processes: ${[...ids].join(', ')}` }] : [];
}

async function readCatalog(base: URL): Promise<CatalogEntry[]> {
  const listed = await call(base, 'GET', '/v1/deployments');
  if (listed.status !== 200) throw new Error(`GET /v1/deployments: ${listed.status}`);
  return (listed.body.items as CatalogEntry[]).map((entry) => ({ name: entry.name, inputSchema: entry.inputSchema, signalSchema: entry.signalSchema, waits: entry.waits }));
}

/** A few processes of every demo, so references find waits, effects (Unknown ones too) and logs. */
async function seedProcesses(base: URL, state: LiveState, ledger: Ledger): Promise<void> {
  const starts: Array<[string, unknown]> = [
    ['demo.approval', { subject: 'seed-1' }],
    ['demo.approval', { subject: 'seed-2' }],
    ['demo.approval', { subject: 'seed-3' }],
    ['demo.counter', { target: 3 }],
    ['demo.counter', { target: 1000 }],
    ['demo.sleep', { ms: 600_000 }],
    ['demo.unreliable', { mode: 'unknown', replayable: true }],
    ['demo.unreliable', { mode: 'unknown', replayable: false }],
    ['demo.unreliable', { mode: 'fail', replayable: false }],
    ['demo.fanout', { values: ['a', 'b', 'c'], quorum: 2 }],
    ['demo.echo', { value: 'seed' }],
  ];
  for (const [deployment, input] of starts) {
    const started = await call(base, 'POST', '/v1/processes', { deployment, input });
    if (started.status !== 201) throw new Error(`seeding ${deployment}: ${started.status} ${JSON.stringify(started.body)}`);
    ledger.started(started.body.processId, started.body.rootId, deployment);
    state.add({ processId: started.body.processId, rootId: started.body.rootId, deployment });
  }
}

/** Two more processes that wait for signals (an approval, a long count). */
async function seedWaiting(base: URL, state: LiveState, ledger: Ledger): Promise<void> {
  for (const [deployment, input] of [
    ['demo.approval', { subject: 'replenished' }],
    ['demo.counter', { target: 1000 }],
  ] as const) {
    const started = await call(base, 'POST', '/v1/processes', { deployment, input });
    if (started.status !== 201) continue;
    ledger.started(started.body.processId, started.body.rootId, deployment);
    state.add({ processId: started.body.processId, rootId: started.body.rootId, deployment });
  }
}

export function mib(bytes: number): number {
  return Math.round((bytes / 1024 / 1024) * 10) / 10;
}
