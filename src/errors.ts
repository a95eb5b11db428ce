import { ErrorCode, KernelError } from './kernel/index.js';

/**
 * The one catalogue of stable error codes. Every error Scope throws carries one of these `code`s:
 * the kernel's contract codes ({@link ErrorCode}, defined in the kernel because the kernel imports
 * nothing above it), the codes the stores and the Host add, and the codes only the HTTP edge
 * produces. The problem registry (plugins/problem-details.ts) maps each to an HTTP status, and a
 * contract test checks the two agree. Code values never change once published; add, don't rename.
 */
export const HostErrorCode = {
  /** 400: a malformed request (shape, identity syntax, cursor, range). */
  invalidRequest: 'invalid_request',
  /** 403: a start asks for more budget, limits or capabilities than the server grants. */
  authorityExceeded: 'authority_exceeded',
  /** 404: no process with this id in this runtime or the store. */
  processNotFound: 'process_not_found',
  /** 404: no tree (runtime or stored head) with this root id. */
  treeNotFound: 'tree_not_found',
  /** 404: no deployment with this name in the catalog. */
  deploymentNotFound: 'deployment_not_found',
  /** 404: the process has no effect with this id. */
  effectNotFound: 'effect_not_found',
  /** 409: an Idempotency-Key reused with another request body. */
  idempotencyKeyConflict: 'idempotency_key_conflict',
  /** 409: another start with this Idempotency-Key is still unfinished (retry shortly). */
  idempotencyKeyInProgress: 'idempotency_key_in_progress',
  /** 409: the tree is stored but no runtime in this server owns it (restore it first). */
  treeNotActive: 'tree_not_active',
  /** 409: the tree's deployment version is held by no node here (docs/deployment-versions.md); the detail names the ref members that differ. */
  deploymentDrift: 'deployment_drift',
  /** 409: moving a drifted tree on needs a `restoreDecider` from the current version, and it has none. */
  deploymentDriftUndecidable: 'deployment_drift_undecidable',
  /** 409: the current version's `restoreDecider` refused to move the drifted tree on; the detail gives its reason. */
  deploymentDriftRefused: 'deployment_drift_refused',
  /** 409: the tree was moved on to a successor tree (it never runs again); the detail names the successor. */
  treeSuperseded: 'tree_superseded',
  /** 409: a capture could not quiesce the tree within its wait: Effects were still in flight (nothing was held). */
  treeBusy: 'tree_busy',
  /** 409: a log cursor beyond the newest position the tree's log holds (it was never issued). */
  cursorAhead: 'cursor_ahead',
  /** 410: the log no longer holds entries after the cursor (retention trimmed them). */
  historyTrimmed: 'history_trimmed',
  /** 409: a live other node owns the tree (a forwarded command met a node that lost it); the detail names the owner. */
  treeOwnedElsewhere: 'tree_owned_elsewhere',
  /** 404: no registered node with this id. */
  nodeNotFound: 'node_not_found',
  /** 503: this node's lease is gone or past its margin: it starts nothing and changes no tree until it holds one again. */
  nodeLeaseLost: 'node_lease_lost',
  /** 503: the tree's owner holds a live lease but did not answer a forwarded command (Retry-After: its lease). */
  ownerUnreachable: 'owner_unreachable',
  /** 404: no gate with this id (no such process, or the process never opened that external wait). */
  gateNotFound: 'gate_not_found',
  /** 409: the gate was answered already; the problem names when, by which provenance and actor. */
  gateAlreadyAnswered: 'gate_already_answered',
  /** 409: the gate's wait ended without an answer (its process finished or moved on), or a host-owned gate was closed or expired. */
  gateClosed: 'gate_closed',
  /** 422: a host-owned gate of a kind only waits have (`approval`). */
  gateKindMismatch: 'gate_kind_mismatch',
  /** 422: a host-owned gate's payload does not fit its kind (its schema, its URL, its timeout); nothing was written. */
  gatePayloadInvalid: 'gate_payload_invalid',
  /** 429: the tenant, or the cluster, holds as many open host-owned gates as allowed (Retry-After). */
  gateCapacity: 'gate_capacity',
  /** 401: a gate callback's token is missing, malformed or not this gate's. */
  gateTokenInvalid: 'gate_token_invalid',
  /** 409: a gate callback's one-time token was spent already. */
  gateTokenUsed: 'gate_token_used',
  /** 409: the operation is for host-owned gates only (close, callback, reading the answer). */
  gateOwnerMismatch: 'gate_owner_mismatch',
  /** 409: a create under a request id used before, with another body. */
  gateRequestConflict: 'gate_request_conflict',
  /** 503: the server is shutting down and admits no new work. */
  shuttingDown: 'shutting_down',
  /** 500: a stored uint64 counter does not fit a JSON-safe number (never expected in practice). */
  valueNotRepresentable: 'value_not_representable',
  /** Startup only: the configuration (environment) is invalid. */
  invalidServerConfig: 'invalid_server_config',
  /** Internal: a bounded wait (shutdown phase, readiness probe) ran out of time. */
  timeout: 'timeout',
} as const;

export type HostErrorCode = (typeof HostErrorCode)[keyof typeof HostErrorCode];

/** Codes only the HTTP edge produces (the request never reached the Host). */
export const HttpErrorCode = {
  /** 401: no bearer token, or one no key matches (when authentication is on). */
  unauthorized: 'unauthorized',
  /** 403: the token lacks the scope the operation needs. */
  insufficientScope: 'insufficient_scope',
  routeNotFound: 'route_not_found',
  notAcceptable: 'not_acceptable',
  requestTimeout: 'request_timeout',
  payloadTooLarge: 'payload_too_large',
  unsupportedMediaType: 'unsupported_media_type',
  rangeNotSatisfiable: 'range_not_satisfiable',
  expectationFailed: 'expectation_failed',
  requestHeaderFieldsTooLarge: 'request_header_fields_too_large',
  /** 503: this server, or this token, holds as many open streams as allowed (Retry-After says when to try again). */
  streamCapacity: 'stream_capacity',
  /** 429: the token (or, with authentication off, the address) sent more requests than its rate allows. */
  rateLimited: 'rate_limited',
  /** 503: the server sheds load (event-loop delay, heap or RSS past their bounds); Retry-After says when to try again. */
  overloaded: 'overloaded',
  /** 500 with nothing but this code: an unexpected error, logged and never sent. */
  internalError: 'internal_error',
} as const;

export type HttpErrorCode = (typeof HttpErrorCode)[keyof typeof HttpErrorCode];

/** Every code, by name. */
export const Code = { ...ErrorCode, ...HostErrorCode, ...HttpErrorCode } as const;

export type Code = (typeof Code)[keyof typeof Code];

/** Every code value, in catalogue order. */
export const codeValues: readonly Code[] = Object.freeze([...new Set(Object.values(Code))]);

/** A thrown error with a catalogue code (the kernel's error type, so every layer throws one kind). */
export function codedError(code: Code, message: string, cause?: unknown): KernelError {
  return new KernelError(code, message, cause === undefined ? undefined : { cause });
}

/** `invalid_request` with `message`. */
export function invalidRequest(message: string, cause?: unknown): KernelError {
  return codedError(HostErrorCode.invalidRequest, message, cause);
}
