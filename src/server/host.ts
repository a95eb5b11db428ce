/**
 * The Host facade: everything the HTTP plugins may call. Plugins never touch the Engine, Redis or
 * BullMQ directly; `buildApp` decorates the Fastify instance with one Host (`app.host`).
 *
 * Views are plain JSON-ready objects (camelCase, identities as strings, uint64 counters as
 * numbers when safe — see `usageView`), so plugins only attach schemas and status codes. Every
 * failure is a KernelError (or HostError) with a stable `code` that the problem registry maps to
 * an HTTP status.
 */

import type { GateAnswerInput, GateAnswerOutcome, GateQuery } from './gates/gate-service.js';
import type { GateView } from './gates/gate-view.js';
import type { HostGateView } from './gates/host-gate-view.js';
import type { HostGateAnswered, HostGateAnswerPoll, HostGateOpened, HostGateOpenRequest } from './gates/host-gates.js';

import type { Agency } from './signal-agency.js';
import type { PolicyBreakerView } from './gates/policy-breaker.js';
import type { ControlRecordEntry } from './control-agency.js';
import type { ServedRefView } from '../transport/bullmq/worker-readiness.js';

export type { Agency, GateAnswerInput, GateAnswerOutcome, GateQuery, GateView, HostGateAnswered, HostGateAnswerPoll, HostGateOpened, HostGateOpenRequest, HostGateView };

/** A gate of either owner: a process's wait, or one an external system opened. */
export type AnyGateView = GateView | HostGateView;

/** A JSON value as it appears in request and response bodies. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface DeploymentView {
  readonly name: string;
  readonly description: string;
  /** `<name>+sha256:<hex>` */
  readonly deploymentRef: string;
  readonly inputSchema: Json;
  readonly outputSchema: Json;
  /** `false` when the deployment accepts no unaddressed input. */
  readonly signalSchema: Json;
  /** The external waits the deployment declares, by key: what each asks and the answer it admits. */
  readonly waits: readonly WaitDeclarationView[];
}

export interface WaitDeclarationView {
  readonly key: string;
  readonly description: string;
  readonly answerSchema: Json;
}

export interface QuotaView {
  /** null = unlimited. */
  readonly maximum: number | null;
}

export interface BudgetView {
  readonly steps: QuotaView;
  readonly effects: QuotaView;
  readonly signals: QuotaView;
}

export interface TreeLimitsView {
  readonly maxDepth: number;
  readonly maxChildren: QuotaView;
  readonly maxActiveChildren: number;
  readonly maxTreeProcesses: QuotaView;
  readonly maxPendingSignals: number;
  readonly maxSnapshotBytes: QuotaView;
  readonly maxProcessSnapshotBytes: QuotaView;
}

export interface UsageView {
  readonly committedSteps: number;
  readonly preparedEffects: number;
  readonly acceptedSignals: number;
  readonly droppedDeltas: number;
}

export interface StartRequest {
  readonly deployment: string;
  readonly input: Json;
  /** May only narrow the server's grant (else `authority_exceeded`). */
  readonly budget?: BudgetView;
  readonly treeLimits?: Partial<TreeLimitsView>;
  readonly capabilities?: readonly string[];
  /** The tenant of the key that starts it (authentication on): the tree belongs to it (tenancy.ts). */
  readonly tenant?: string;
}

export interface StartOutcome {
  /** False when an Idempotency-Key replayed an earlier start. */
  readonly created: boolean;
  readonly process: ProcessView;
}

export interface FailureView {
  readonly kind: string;
  readonly code: string;
  readonly message: string;
}

export interface ResultView {
  readonly processId: string;
  readonly status: string;
  readonly cause: string;
  readonly reason: string | null;
  readonly output: Json | null;
  readonly failure: FailureView | null;
  readonly unresolvedEffectIds: readonly string[];
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly usage: UsageView;
}

export interface ReceiptView {
  readonly id: string;
  readonly waitId: string | null;
  readonly payloadDigest: string;
  readonly arrivalSequence: number;
  readonly consumed: boolean;
  /** The payload while unconsumed; null once consumed (its digest stays). */
  readonly payload: Json | null;
  /** Who sent it (signal-agency.ts). */
  readonly agency: Agency;
}

export interface SettlementView {
  readonly effectId: string;
  readonly status: 'succeeded' | 'failed' | 'unknown';
  readonly payload: Json;
}

export interface RuntimeErrorView {
  readonly code: string;
  readonly message: string;
  readonly headDigest: string;
  readonly incarnationId: string;
  readonly unresolvedEffectIds: readonly string[];
}

export interface ProcessView {
  readonly processId: string;
  readonly status: string;
  readonly rootId: string;
  readonly parentId: string | null;
  readonly depth: number;
  readonly deployment: string;
  readonly deploymentRef: string;
  readonly startedAt: string;
  readonly usage: UsageView;
  readonly budget: BudgetView;
  readonly capabilities: readonly string[];
  readonly waitId: string | null;
  readonly waitKind: 'external' | 'children' | null;
  readonly pauseReason: string | null;
  readonly unknownEffectIds: readonly string[];
  /** Accepted signals in the mailbox (engine-minted ones included); paged by `GET …/signals`. */
  readonly receiptCount: number;
  readonly result: ResultView | null;
  /** Live work in this server's runtime: idle, queued, step, dispatch, admission (a child start); `inactive` when no runtime owns the tree. */
  readonly work: string;
  readonly runtimeError: RuntimeErrorView | null;
}

export interface ProcessListQuery {
  readonly status?: string;
  readonly deployment?: string;
  readonly limit?: number;
  /** Opaque, from a previous page's `nextCursor`. */
  readonly cursor?: string;
  /** Only processes started at or after this instant (epoch ms). */
  readonly startedAfter?: number;
  /** Only processes started before this instant (epoch ms). */
  readonly startedBefore?: number;
  /** Only the trees of this tenant. */
  readonly tenant?: string;
  /** Only trees that have (true) or have not (false) an effect whose outcome is Unknown (tree-marks.ts). */
  readonly hasUnknown?: boolean;
  /** Only trees that have (true) or have not (false) an open gate: an open external wait. */
  readonly hasOpenGate?: boolean;
}

export interface ProcessSummary {
  readonly processId: string;
  readonly deployment: string;
  readonly status: string;
  readonly startedAt: string;
  /** Some process of the tree has an effect whose outcome is Unknown. */
  readonly hasUnknown: boolean;
  /** Some process of the tree waits on an open gate (an open external wait). */
  readonly hasOpenGate: boolean;
}

export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor: string | null;
}

/**
 * Either the terminal result, or the status when the long poll ended first (HTTP 202). `work` is
 * `inactive` when no runtime in this server owns the tree: nothing will move it until it is restored.
 */
export type ResultPoll =
  | { readonly done: true; readonly result: ResultView }
  | { readonly done: false; readonly status: string; readonly work: string; readonly rootId: string };

export interface ReceiptQuery {
  /** Receipts with an arrival sequence above this one (default 0: from the first). */
  readonly after?: number;
  readonly limit?: number;
}

export interface EffectQuery {
  /** Opaque, from a previous page's `nextCursor`. */
  readonly cursor?: string;
  readonly limit?: number;
}

export interface SignalInput {
  readonly id: string;
  readonly waitId?: string;
  readonly payload: Json;
}

/** One effect whose outcome is Unknown, with the process it belongs to (`GET /v1/effects?status=unknown`). */
export interface UnknownEffectView {
  readonly processId: string;
  readonly rootId: string;
  readonly deployment: string;
  readonly effect: EffectView;
}

export interface UnknownEffectQuery {
  readonly cursor?: string;
  readonly limit?: number;
  /** Only the trees of this tenant. */
  readonly tenant?: string;
}

export type ControlAction = 'pause' | 'resume' | 'cancel' | 'kill';

export interface TreeControlOutcome {
  readonly rootId: string;
  readonly action: ControlAction;
  /** Processes the control's one commit changed; 0 when none was live to change (nothing committed). */
  readonly affected: number;
}

/** Which root processes a bulk control acts on: the process list's filters, and a start-time range. */
export interface BulkFilter {
  readonly status?: string;
  readonly deployment?: string;
  /** Only roots started at or after this RFC 3339 instant. */
  readonly startedFrom?: string;
  /** Only roots started before this RFC 3339 instant. */
  readonly startedBefore?: string;
  /** Only trees that have (true) or have not (false) an Unknown outcome (as `GET /v1/processes?hasUnknown=`). */
  readonly hasUnknown?: boolean;
  /** Only trees that have (true) or have not (false) an open gate (as `GET /v1/processes?hasOpenGate=`). */
  readonly hasOpenGate?: boolean;
}

export interface BulkControlRequest {
  readonly filter: BulkFilter;
  readonly action: ControlAction;
  /** Count what matches; change nothing. */
  readonly dryRun?: boolean;
  readonly reason?: string;
  /** Trees this call may act on (at most the documented maximum). */
  readonly limit?: number;
  /** From a previous call's `nextCursor`: continue after the roots it covered. */
  readonly cursor?: string;
  /** Only the trees of this tenant. */
  readonly tenant?: string;
}

export interface BulkControlOutcome {
  readonly action: ControlAction;
  readonly dryRun: boolean;
  /** Root processes the filter matched in the part of the list this call covered. */
  readonly matched: number;
  /** Trees whose control changed at least one process (0 on a dry run). */
  readonly affected: number;
  /** Processes changed across those trees. */
  readonly processesAffected: number;
  /** Matched trees the control found nothing to change in (already paused, already ending …). */
  readonly skipped: number;
  /** Matched trees the control failed on, with the problem code each answered. */
  readonly failed: readonly { readonly rootId: string; readonly code: string; readonly message: string }[];
  /** True when the list goes on past this call: call again with `nextCursor`. */
  readonly truncated: boolean;
  readonly nextCursor: string | null;
}

export interface EffectView {
  readonly effectId: string;
  readonly stepSequence: number;
  readonly batchIndex: number;
  readonly target: 'framework' | 'dispatcher';
  /** planned, pending, settled, unknown, resolved */
  readonly status: string;
  /** Dispatch attempts this server made, replays included. */
  readonly attempts: number;
  /** Those attempts, oldest first, as far as the tree's log still holds them. */
  readonly attemptList: readonly EffectAttemptView[];
  readonly settlement: SettlementView | null;
  readonly diagnostic: FailureView | null;
  /**
   * Only on an `unknown` effect whose attempt a BullMQ worker was still running when the outcome was
   * declared Unknown (a takeover, a lapsed deadline): what the worker reported afterwards. Transport
   * evidence, not the record — resolve the effect with it if you trust it.
   */
  readonly lateReport?: LateReportView;
}

/** One dispatch attempt of an effect. */
export interface EffectAttemptView {
  readonly attemptId: string;
  /** When the attempt started (its `agent.effect.started`), null when the log entry lacks it. */
  readonly startedAt: string | null;
  /**
   * Evidence of what ran it: the BullMQ worker id from the attempt's claim record, or for an attempt run
   * in the owner process the node id that started it; null when not known (never claimed, expired).
   */
  readonly worker: string | null;
}

/** A worker's report for an attempt that finished after its effect was declared Unknown. */
export interface LateReportView {
  readonly attemptId: string;
  /** `unknown`: the worker itself could not tell (its dispatcher threw). */
  readonly status: 'succeeded' | 'failed' | 'unknown';
  readonly payload: Json | null;
  readonly reason: string | null;
}

/** One version of a deployment (docs/deployment-versions.md). */
export interface DeploymentVersionView {
  readonly deploymentRef: string;
  readonly name: string;
  readonly contractDigest: string;
  readonly implementationDigest: string;
  readonly configurationDigest: string;
  readonly bindingsDigest: string;
  /** The version new starts use. */
  readonly current: boolean;
  /** Whether this node holds the version (false: only live trees of it were found). */
  readonly registeredHere: boolean;
  /** Whether the version exports a restoreDecider (it can take drifted trees over as successors). */
  readonly restoreDecider: boolean;
  /** Live (not terminal) trees of the version among those scanned. */
  readonly liveTrees: number;
  /** Up to 20 of their root ids, newest first. */
  readonly liveRootIds: readonly string[];
}

export interface DeploymentVersionsView {
  readonly name: string;
  readonly versions: readonly DeploymentVersionView[];
  /** Trees of the name read (newest first, bounded). */
  readonly treesScanned: number;
  /** False when the bound stopped the scan: older trees were not counted. */
  readonly complete: boolean;
}

/** A drifted tree moved on to a successor tree on another version (docs/deployment-versions.md). */
export interface SuccessionView {
  /** The successor's root id (null while the move-on is unfinished: retry it to finish). */
  readonly successorId: string | null;
  readonly reason: string;
  readonly decidedAt: string;
  readonly fromRef: string;
  readonly toRef: string;
  readonly differs: readonly string[];
}

/** How a control was asked for. */
export interface ControlRequestOptions {
  /** Who sent it, as the server saw it (default `machine`; HTTP callers are `user`: plugins/request-agency.ts). */
  readonly agency?: Agency;
  /** What the control's record names as its scope (a bulk call's tree forwarded to its owner stays `bulk`; default `tree`). */
  readonly scope?: 'tree' | 'bulk';
  /**
   * Bulk control with several nodes: the tree control of a root another live node owns, sent to that
   * owner (the HTTP edge's src/app/forwarding.ts, one hop, the caller's identity along); without it,
   * such a tree is reported `tree_owned_elsewhere`.
   */
  readonly forward?: TreeControlForward;
}

/** Sends one tree's control to the node that owns it; resolves with that node's outcome, throws its problem. */
export type TreeControlForward = (rootId: string, owner: { readonly nodeId: string; readonly url: string }, action: ControlAction, reason: string | undefined) => Promise<TreeControlOutcome>;

export interface TreeView {
  readonly rootId: string;
  readonly incarnationId: string;
  readonly headDigest: string;
  readonly commitPending: boolean;
  readonly freeze: 'none' | 'acquiring' | 'held';
  readonly stopped: boolean;
  /** The first persistence fault latched for the tree (src/server/fault-latch.ts); null while it runs normally. */
  readonly fault: TreeFaultView | null;
  /** True when a runtime in this server owns the tree (false: served from the stored head). */
  readonly active: boolean;
  readonly processes: readonly ProcessView[];
  /** Set when the tree was moved on to a successor: it never runs again. */
  readonly supersededBy: SuccessionView | null;
  /** The tree this one succeeded, or null. */
  readonly predecessorId: string | null;
  /** The tree's gate policy breaker on its owner (src/server/gates/policy-breaker.ts); absent until a policy failed. */
  readonly policyBreaker?: PolicyBreakerView;
  /** The tree's admitted controls with who sent them (src/server/control-agency.ts), oldest first; absent while not known here. */
  readonly controls?: readonly ControlRecordEntry[];
}

/** A tree's latched persistence fault (src/server/fault-latch.ts). */
export interface TreeFaultView {
  /** The stopped runtime's classification (`engine.tree.committer_failed`, …; kernel-contract §4.18). */
  readonly code: string;
  /** What failed, in the kernel's words. */
  readonly message: string;
  /** When the runtime stopped (the event's time). */
  readonly since: string;
  /** The incarnation that stopped; a newer one clears the fault. */
  readonly incarnationId: string;
}

export interface SnapshotView {
  /** The canonical TreeSnapshot JSON text. */
  readonly json: string;
  readonly digest: string;
}

export interface WaitView {
  readonly processId: string;
  readonly rootId: string;
  readonly waitId: string;
  readonly waitKind: 'external' | 'children';
  /** The Execution's logical key of the wait. */
  readonly key: string;
  readonly deployment: string;
  /** When the wait opened: the `occurredAt` of the committed event that opened it (kept across restores). */
  readonly since: string;
  /** The schema an answer must satisfy (null: any JSON value); an answer that does not is 422, nothing admitted. */
  readonly answerSchema: Json | null;
  /** What this wait asks, as its Effect said at run time. */
  readonly prompt: string | null;
  /** The deployment's description of waits under this key. */
  readonly description: string | null;
}

export interface WaitQuery {
  readonly deployment?: string;
  readonly rootId?: string;
  /** Only the waits of this tenant's trees. */
  readonly tenant?: string;
}

/** One entry of a tree's log: a committed or attempt event, or a delta. */
export interface LogEntry {
  /** The resumable position (SSE `id`); positions compare numerically. */
  readonly position: string;
  /** The event name, or `agent.delta`. */
  readonly type: string;
  readonly processId: string;
  /** The Event or Delta wire JSON, as the canonical text the log holds (passed through unparsed). */
  readonly data: string;
}

/** A page of a tree's log. */
export interface LogPage extends Page<LogEntry> {
  /**
   * Set when the read started from the beginning (no cursor, or `0`) of a log that retention has
   * already trimmed: `firstAvailable` is the oldest position it still holds, where the page starts.
   */
  readonly trimmed?: { readonly firstAvailable: string };
}

export interface LogQuery {
  /**
   * Read strictly after this position. Absent or `0`: from the oldest entry the log still holds. A
   * position whose successors were trimmed is refused with `history_trimmed` (never skipped silently).
   */
  readonly after?: string;
  readonly limit?: number;
  readonly types?: readonly string[];
  readonly processId?: string;
}

export interface StreamOptions extends Omit<LogQuery, 'limit'> {
  /** Ends the stream (the client went away). */
  readonly signal: AbortSignal;
}

/** One entry of a stream, and whether it came from the live tail (not from stored history). */
export interface StreamItem {
  readonly entry: LogEntry;
  readonly live: boolean;
}

/**
 * Entries of a stream that became available together (never empty), all from stored history or all
 * from the live tail. An entry of the live tail is the same object for every stream of the node that
 * delivers it, so what is derived from it alone (its SSE frame) can be computed once.
 */
export interface StreamBatch {
  readonly entries: readonly LogEntry[];
  readonly live: boolean;
}

/**
 * Why a stream ended: `completed` — the root is terminal and its subtree's entries drained (the only
 * real end); `shutdown` — this server is stopping (reconnect, to it or another node, and resume);
 * `aborted` — the caller's signal; `lagging` — the reader left more live entries unread than the log
 * buffers for one tail (reconnect with the last position and resume: nothing is lost).
 */
export type StreamEnd = 'completed' | 'shutdown' | 'aborted' | 'lagging';

/**
 * A tree's log from a cursor: the stored history, then the live tail, in one iteration with no gap
 * and no repeat. Iteration rejects with `history_trimmed` (`HistoryTrimmedError`) when the reader
 * falls behind retention, never skipping what was trimmed.
 */
export interface TreeStream extends AsyncIterable<StreamItem> {
  /** Set when the stream starts at the beginning of a log retention already trimmed: where it starts. */
  readonly trimmedStart: string | undefined;
  /**
   * The same entries as the iteration, as batches (iterate one or the other, once). Optional: a stream
   * without it is read entry by entry.
   */
  batches?(): AsyncIterable<StreamBatch>;
  /** Why the iteration ended; undefined until it has. */
  readonly end: StreamEnd | undefined;
}

/** Root processes one bulk control covers at most (`POST /v1/processes:bulk`); `nextCursor` continues. */
export const bulkMaxTrees = 100;

/** How long a capture waits for in-flight Effects to settle when the caller names no bound. */
export const defaultCaptureWaitMs = 10_000;

export interface Readiness {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, 'ok' | string>>;
  /**
   * With the BullMQ transport: per deployment sent to workers, the live workers holding its ref and
   * their process dispatcher keys (what the `worker:<deployment>` checks judged).
   */
  readonly workers?: readonly ServedRefView[];
}

/** Why an SSE stream ended, as the stream plugin reports it to {@link HostTelemetry}. */
export type StreamEndReason = 'completed' | 'client_closed' | 'dropped' | 'shutdown' | 'error';

/** What plugins report into the Host's metrics. */
export interface HostTelemetry {
  /** The Prometheus registry `metrics()` renders; the app may register its HTTP metrics on it. */
  readonly registry: import('prom-client').Registry;
  /**
   * Call when an SSE client connects (`scope_sse_clients` + 1); call the returned function once
   * when its stream ends, with the reason (later calls are ignored).
   */
  sseClientConnected(): (reason?: StreamEndReason) => void;
}

export interface RestoreOptions {
  /** Take the tree from a live owner elsewhere. */
  readonly force?: boolean;
  /**
   * A drifted tree (its version held by no node here) moves on: the current version's restoreDecider
   * decides, and an accepted tree continues as a successor tree (docs/deployment-versions.md).
   */
  readonly allowDrift?: boolean;
  /** Who asked (the authenticated principal, or a label), recorded with the move-on. */
  readonly actor?: string;
}

export interface Host {
  deployments(): readonly DeploymentView[];
  deployment(name: string): DeploymentView;
  /** Every version of `name` here, and versions live trees of it run (`deployment_not_found` when neither). */
  deploymentVersions(name: string): Promise<DeploymentVersionsView>;

  startProcess(request: StartRequest, idempotencyKey?: string): Promise<StartOutcome>;
  listProcesses(query: ProcessListQuery): Promise<Page<ProcessSummary>>;
  inspectProcess(processId: string): Promise<ProcessView>;
  /**
   * The tenant of the tree holding `processId` (a root or any member): `default` for a tree started
   * without one; undefined when no such process exists (the route then answers its own 404).
   */
  tenantOf(processId: string): Promise<string | undefined>;
  /** The direct children of a process (`process_not_found` for an unknown parent). */
  children(processId: string): Promise<{ readonly processId: string; readonly items: readonly ProcessView[] }>;
  awaitResult(processId: string, waitMs: number, signal?: AbortSignal): Promise<ResultPoll>;
  /** `agency`: who sent the batch, as the server saw it (default `machine`; the HTTP route says `user`). */
  deliverSignals(processId: string, signals: readonly SignalInput[], options?: { readonly agency?: Agency }): Promise<{ accepted: boolean }>;
  /**
   * Resolves once the intent is in the authoritative head (pause, cancel, kill: the parked or
   * terminal checkpoint, or one recording `pending_control`; resume: its checkpoint).
   */
  control(processId: string, action: ControlAction, reason?: string, options?: ControlRequestOptions): Promise<void>;

  /**
   * Tree-wide control (docs/process-trees.md "Tree-wide control"): one commit records the intent on
   * every live process of the tree before any is signalled; resolves once it is in the authoritative
   * head, with how many processes it changed (0: nothing was committed).
   */
  controlTree(rootId: string, action: ControlAction, reason?: string, options?: ControlRequestOptions): Promise<TreeControlOutcome>;
  /** Bulk control of the root processes a filter matches (docs/process-trees.md "Bulk control"). */
  bulkControl(request: BulkControlRequest, options?: ControlRequestOptions): Promise<BulkControlOutcome>;

  /** A page of the process's signal receipts, in arrival order. */
  signals(processId: string, query: ReceiptQuery): Promise<Page<ReceiptView>>;

  /** A page of the process's effects, oldest step first. */
  effects(processId: string, query: EffectQuery): Promise<Page<EffectView>>;
  replayEffect(processId: string, effectId: string): Promise<EffectView>;
  resolveEffect(processId: string, effectId: string, resolution: { status: 'succeeded' | 'failed'; payload: Json }): Promise<EffectView>;
  /** Every effect whose outcome is Unknown, across the trees this runtime holds. */
  unknownEffects(query: UnknownEffectQuery): Promise<Page<UnknownEffectView>>;

  inspectTree(rootId: string): Promise<TreeView>;
  snapshot(rootId: string): Promise<SnapshotView>;
  /**
   * Quiesces the tree (in-flight Effects settle first) and returns the acknowledged head; waits at
   * most `waitMs` (default {@link defaultCaptureWaitMs}) for the Effects, then `tree_busy`.
   */
  captureTree(rootId: string, waitMs?: number): Promise<SnapshotView>;
  /**
   * Takes the tree over here from its stored head. Joined to other nodes: a tree a live other node
   * owns is forwarded there (`tree_owned_elsewhere`) unless `force`, which takes it from that owner.
   */
  restoreTree(rootId: string, options?: RestoreOptions): Promise<TreeView>;
  releaseTree(rootId: string, purge: boolean): Promise<void>;

  waits(query?: WaitQuery): Promise<readonly WaitView[]>;
  /**
   * One page of {@link waits}, oldest first (by `since`, then process and wait id). The cursor names the
   * last wait of the previous page, so waits opened or answered meanwhile neither repeat nor shift a page.
   */
  waitPage(query: WaitQuery & { readonly cursor?: string; readonly limit?: number }): Promise<Page<WaitView>>;
  /**
   * Gates (src/server/gates/): a page of them (open process-owned ones across nodes, answered and closed
   * ones per tree; the tenant's host-owned ones unless the query names a tree or deployment).
   */
  gatePage(query: GateQuery): Promise<Page<AnyGateView>>;
  /** One gate: `gate_not_found` when its id names no external wait and no host-owned gate (of `tenant`, when given). */
  gate(gateId: string, tenant?: string): Promise<AnyGateView>;
  /**
   * Answers a gate exactly once, as a person (provenance `human`): routed to its tree's owner like a
   * signal; 422 when the answer fails its schema (nothing recorded), 409 `gate_already_answered` once
   * another answer won, 200 again for the same request id with the same answer.
   */
  answerGate(gateId: string, input: GateAnswerInput, tenant?: string): Promise<GateAnswerOutcome | HostGateAnswered>;
  /** Opens a host-owned gate (`form` or `open_url`), counted against the caps; idempotent on its request id. */
  openGate(request: HostGateOpenRequest): Promise<HostGateOpened>;
  /** A host-owned gate's answer, waiting up to `waitMs` for it (woken by the answer or the close, on any node). */
  pollGateAnswer(gateId: string, waitMs: number, tenant?: string): Promise<HostGateAnswerPoll>;
  /** Closes a host-owned gate: its answer is deleted (who, when, provenance and digest stay). */
  closeGate(gateId: string, tenant?: string): Promise<HostGateView>;
  /** An `open_url` gate's callback: answers it (provenance `api`) with its one-time token. */
  gateCallback(gateId: string, token: string, answer: Json): Promise<HostGateAnswered>;
  /**
   * A page of a tree's log (the tree of `processId`). A cursor whose successors were trimmed is
   * `history_trimmed` (a `HistoryTrimmedError`, errors.ts); when trimmed entries lie further on, the page ends
   * before them and the next page is refused.
   */
  events(processId: string, query: LogQuery): Promise<LogPage>;
  /**
   * The tree's log after the cursor, history then live (see {@link TreeStream}). Everything a client
   * must hear before any stream byte is checked here, once: the root id and cursor syntax
   * (`invalid_request`), the tree (`tree_not_found`), a cursor beyond the log's newest position
   * (`cursor_ahead`), a cursor whose successors retention trimmed (`history_trimmed`).
   */
  openStream(rootId: string, options: StreamOptions): Promise<TreeStream>;

  readiness(): Promise<Readiness>;
  /** Prometheus text exposition. */
  metrics(): Promise<{ contentType: string; body: string }>;
  /** Metrics the plugins feed (SSE clients) and the registry behind `metrics()`. */
  readonly telemetry: HostTelemetry;

  /** Stops admission, lets in-flight commits finish, flushes deltas, ends streams; bounded by `deadlineMs`. */
  close(deadlineMs?: number): Promise<void>;

  /** True while the Host shuts down: the HTTP edge answers new mutations 503 `shutting_down` with Retry-After; reads go on. */
  readonly draining?: boolean;

  /** This node's id (`embedded` when it runs alone). */
  readonly nodeId: string;
  /** The nodes on this Redis with their lease state (this node alone when it has not joined). */
  nodes(): Promise<readonly NodeView[]>;
  /** Deletes a node's lease so the live nodes take its trees over (`node_not_found`). */
  evictNode(nodeId: string): Promise<void>;
}

/** A node as `GET /v1/nodes` lists it. */
export interface NodeView {
  readonly nodeId: string;
  readonly url: string | null;
  readonly epoch: number | null;
  /** `live`: its lease is held on the server; `lapsed`: registered, lease gone (its trees are being taken over). */
  readonly lease: 'live' | 'lapsed';
  readonly leaseTtlMs: number | null;
  /** Roots in the node's directory (a hint: owner records decide). */
  readonly trees: number;
  readonly self: boolean;
}
