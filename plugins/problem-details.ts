// Over 500 lines: the one problem registry and every error path into it (Fastify, the router, the kernel), kept in one place on purpose; what Node's parser refuses is client-errors.ts.
/**
 * HTTP problems (RFC 9457). One registry maps every stable error `code` to its status and title;
 * the error handler turns whatever a route throws into an `application/problem+json` body
 * `{type, title, status, detail, code, requestId, instance, errors?}`.
 *
 * Three layers are kept apart (style.md): thrown errors carry a stable `code` (KernelError from the
 * kernel, the Host's own errors); a failed process is data returned with 200; and only here do codes
 * become statuses. An error whose code the registry does not know, or a kernel code that only a
 * defect of this server can produce, is a bare 500 `internal_error`: its cause is logged, never sent.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HostErrorCode } from '../src/errors.js';
import fastifyPlugin from 'fastify-plugin';
import { ErrorCode, SchemaValidationError } from '../src/kernel/index.js';
import { positionPattern } from './events/schemas.js';
import { closedObject, escapePointerToken, ref } from './shared.js';

export interface ProblemType {
  readonly status: number;
  readonly title: string;
}

/**
 * Every code a response may carry. The contract test pins it against `openapi.yaml` (the Problem
 * schema's `code` enum) and against the kernel's ErrorCode table.
 */
export const problemRegistry = {
  // 400: the request itself is wrong.
  invalid_request: { status: 400, title: 'Invalid request' },
  invalid_payload: { status: 400, title: 'Invalid payload' },
  invalid_digest: { status: 400, title: 'Invalid digest' },
  invalid_identity: { status: 400, title: 'Invalid identity' },
  invalid_tree_incarnation_id: { status: 400, title: 'Invalid tree incarnation id' },
  invalid_effect_attempt_id: { status: 400, title: 'Invalid effect attempt id' },
  invalid_qualified_name: { status: 400, title: 'Invalid qualified name' },
  invalid_capability: { status: 400, title: 'Invalid capability' },
  invalid_quota: { status: 400, title: 'Invalid quota' },
  invalid_budget: { status: 400, title: 'Invalid budget' },
  invalid_tree_limits: { status: 400, title: 'Invalid tree limits' },
  invalid_deployment_ref: { status: 400, title: 'Invalid deployment reference' },
  invalid_status: { status: 400, title: 'Invalid status' },
  invalid_signal: { status: 400, title: 'Invalid signal' },
  invalid_signal_request: { status: 400, title: 'Invalid signal request' },
  // 401: who is asking is not known.
  unauthorized: { status: 401, title: 'Unauthorized' },
  gate_token_invalid: { status: 401, title: 'Gate token invalid' },
  // 403: asking for more than the server grants.
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  authority_exceeded: { status: 403, title: 'Authority exceeded' },
  process_admission_rejected: { status: 403, title: 'Process admission rejected' },
  // 404: nothing by that name.
  route_not_found: { status: 404, title: 'Route not found' },
  deployment_not_found: { status: 404, title: 'Deployment not found' },
  process_not_found: { status: 404, title: 'Process not found' },
  tree_not_found: { status: 404, title: 'Tree not found' },
  effect_not_found: { status: 404, title: 'Effect not found' },
  node_not_found: { status: 404, title: 'Node not found' },
  gate_not_found: { status: 404, title: 'Gate not found' },
  // 406–431: the exchange cannot happen in this form.
  not_acceptable: { status: 406, title: 'Not acceptable' },
  request_timeout: { status: 408, title: 'Request timeout' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  range_not_satisfiable: { status: 416, title: 'Range not satisfiable' },
  expectation_failed: { status: 417, title: 'Expectation failed' },
  request_header_fields_too_large: { status: 431, title: 'Request header fields too large' },
  // 429: too many requests from one caller.
  rate_limited: { status: 429, title: 'Too many requests' },
  gate_capacity: { status: 429, title: 'Gate capacity reached' },
  // 409: the request conflicts with the current state.
  signal_conflict: { status: 409, title: 'Signal conflict' },
  invalid_process_control: { status: 409, title: 'Invalid process control' },
  process_finished: { status: 409, title: 'Process finished' },
  effect_not_pending: { status: 409, title: 'Effect not pending' },
  idempotency_key_conflict: { status: 409, title: 'Idempotency key conflict' },
  idempotency_key_in_progress: { status: 409, title: 'Idempotency key in progress' },
  commit_conflict: { status: 409, title: 'Commit conflict' },
  tree_incarnation_conflict: { status: 409, title: 'Tree incarnation conflict' },
  tree_not_active: { status: 409, title: 'Tree not active' },
  tree_busy: { status: 409, title: 'Tree busy' },
  tree_owned_elsewhere: { status: 409, title: 'Tree owned elsewhere' },
  cursor_ahead: { status: 409, title: 'Cursor ahead of the log' },
  tree_live: { status: 409, title: 'Tree still live' },
  process_already_exists: { status: 409, title: 'Process already exists' },
  deployment_unavailable: { status: 409, title: 'Deployment unavailable' },
  deployment_drift: { status: 409, title: 'Deployment drift' },
  deployment_drift_undecidable: { status: 409, title: 'Deployment drift undecidable' },
  deployment_drift_refused: { status: 409, title: 'Deployment drift refused' },
  tree_superseded: { status: 409, title: 'Tree superseded' },
  resource_limit_exceeded: { status: 409, title: 'Resource limit exceeded' },
  counter_exhausted: { status: 409, title: 'Counter exhausted' },
  gate_already_answered: { status: 409, title: 'Gate already answered' },
  gate_closed: { status: 409, title: 'Gate closed' },
  gate_token_used: { status: 409, title: 'Gate token used' },
  gate_owner_mismatch: { status: 409, title: 'Gate owner mismatch' },
  gate_request_conflict: { status: 409, title: 'Gate request conflict' },
  // 410: what the request points at existed, and retention removed it.
  history_trimmed: { status: 410, title: 'History trimmed' },
  // 422: well-formed, but refused on its meaning.
  schema_validation_failed: { status: 422, title: 'Schema validation failed' },
  signal_rejected: { status: 422, title: 'Signal rejected' },
  gate_kind_mismatch: { status: 422, title: 'Gate kind mismatch' },
  gate_payload_invalid: { status: 422, title: 'Gate payload invalid' },
  effect_replay_forbidden: { status: 422, title: 'Effect replay forbidden' },
  invalid_settlement: { status: 422, title: 'Invalid settlement' },
  invalid_snapshot: { status: 422, title: 'Invalid snapshot' },
  invalid_tree_snapshot: { status: 422, title: 'Invalid tree snapshot' },
  process_start_failed: { status: 422, title: 'Process start failed' },
  // 5xx: the server (or what it depends on) cannot answer now.
  internal_error: { status: 500, title: 'Internal server error' },
  effect_outcome_unknown: { status: 502, title: 'Effect outcome unknown' },
  runtime_stopped: { status: 503, title: 'Runtime stopped' },
  committer_unavailable: { status: 503, title: 'Storage unavailable' },
  shutting_down: { status: 503, title: 'Shutting down' },
  node_lease_lost: { status: 503, title: 'Node lease lost' },
  owner_unreachable: { status: 503, title: 'Owner unreachable' },
  stream_capacity: { status: 503, title: 'Stream capacity reached' },
  overloaded: { status: 503, title: 'Overloaded' },
  engine_closed: { status: 503, title: 'Engine closed' },
} as const satisfies Record<string, ProblemType>;

export type ProblemCode = keyof typeof problemRegistry;

export const problemCodes: readonly ProblemCode[] = Object.freeze(Object.keys(problemRegistry) as ProblemCode[]);

/**
 * Codes that no request can cause: they report a broken invariant inside this server (a strategy
 * or store defect, misuse of the Engine, a stored counter beyond JSON-safe numbers). They are
 * answered as `internal_error` and logged.
 */
export const internalCodes: readonly string[] = Object.freeze([
  ErrorCode.invalidUsage,
  ErrorCode.invalidSchema,
  ErrorCode.invalidDescriptor,
  ErrorCode.invalidDeployment,
  ErrorCode.invalidReplayPolicy,
  ErrorCode.invalidFailure,
  ErrorCode.invalidTermination,
  ErrorCode.invalidResult,
  ErrorCode.invalidEffect,
  ErrorCode.invalidChildStart,
  ErrorCode.invalidChildWait,
  ErrorCode.invalidChildControl,
  ErrorCode.invalidTransition,
  ErrorCode.invalidExecutionState,
  ErrorCode.invalidProcessRelation,
  ErrorCode.invalidCommit,
  ErrorCode.invalidEvent,
  ErrorCode.invalidDelta,
  ErrorCode.invalidEngineConfig,
  ErrorCode.listenerReentrancy,
  ErrorCode.callbackPanic,
  ErrorCode.engineHasActiveProcesses,
  // The Host restores a released tree and retries the command: it never reaches a client.
  ErrorCode.treeReleased,
  HostErrorCode.valueNotRepresentable,
  HostErrorCode.invalidServerConfig,
  HostErrorCode.timeout,
]);

export function isProblemCode(code: unknown): code is ProblemCode {
  return typeof code === 'string' && Object.hasOwn(problemRegistry, code);
}

/** The `type` URI of a problem: a stable URN per code (no documentation host is implied). */
export function problemTypeUri(code: ProblemCode): string {
  return `urn:scope:problem:${code}`;
}

/** One offending value: where it is (a JSON Pointer rooted at `/body`, `/query`, `/params` or `/headers`). */
export const ProblemFieldError = closedObject(
  {
    pointer: Type.String({ description: 'JSON Pointer to the value, rooted at /body, /query, /params or /headers.', example: '/body/input/value' }),
    message: Type.String({ example: 'must be string' }),
    keyword: Type.String({
      description: 'The JSON Schema keyword that failed; `prototypePollution` for a member name the server refuses (`__proto__`, `constructor.prototype`).',
      example: 'type',
    }),
  },
  { $id: 'ProblemFieldError', description: 'One validation failure.' },
);

export const Problem = closedObject(
  {
    type: Type.String({ description: 'A URI naming the problem type (`urn:scope:problem:<code>`).' }),
    title: Type.String({ description: 'The problem type in words; the same for every occurrence of a code.' }),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    detail: Type.String({ description: 'What went wrong this time.' }),
    code: Type.Unsafe<ProblemCode>({ type: 'string', enum: [...problemCodes], description: 'The stable, machine-readable code.' }),
    requestId: Type.String({ description: 'The request id (also in the `x-request-id` response header).' }),
    instance: Type.String({
      description:
        'The request path this problem occurred on; `urn:scope:request:<requestId>` for a request that could not be parsed ' +
        'far enough to have one.',
    }),
    errors: Type.Optional(Type.Array(ref(ProblemFieldError), { description: 'Validation failures, when there are any.' })),
    firstAvailable: Type.Optional(
      Type.String({
        pattern: positionPattern,
        maxLength: 41,
        description:
          '`history_trimmed` only: the oldest position the log still holds. Reading without a cursor (or with `0`) starts there; ' +
          'what lay between the refused cursor and it is gone.',
        example: '1712000000000-0',
      }),
    ),
    lastPosition: Type.Optional(
      Type.String({
        pattern: positionPattern,
        maxLength: 41,
        description: '`cursor_ahead` only: the newest position the log holds; the refused cursor lies beyond it.',
        example: '1712000000000-3',
      }),
    ),
    firstAnswer: Type.Optional(
      closedObject(
        {
          answeredAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When the answer that won was admitted (null: answered before gates kept records).' }),
          provenance: Type.Unsafe<string>({ type: 'string', enum: ['human', 'api', 'policy'], description: 'How it came: the gate route, the signal path, or a policy (set by the server).' }),
          actor: Type.Union([Type.String(), Type.Null()], { description: 'Who answered, as a label (the authenticated principal when there is one).' }),
        },
        { description: '`gate_already_answered` only: the answer that came first.' },
      ),
    ),
  },
  { $id: 'Problem', description: 'An RFC 9457 problem details body (`application/problem+json`).' },
);

export const problemComponents: readonly TSchema[] = [ProblemFieldError, Problem];

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  requestId: string;
  instance: string;
  errors?: FieldError[];
  firstAvailable?: string;
  lastPosition?: string;
  firstAnswer?: FirstAnswer;
}

/** `gate_already_answered`: the answer that won (thrown as the error's `firstAnswer`). */
export interface FirstAnswer {
  readonly answeredAt: string | null;
  readonly provenance: string;
  readonly actor: string | null;
}

export interface FieldError {
  pointer: string;
  message: string;
  keyword: string;
}

export const problemMediaType = 'application/problem+json';

/** Marks a route's error response with the codes it documents (see {@link documentProblems}). */
const documentedCodes = Symbol('scope.problemCodes');

interface ProblemResponseMarker {
  readonly description: string;
  readonly [documentedCodes]: readonly ProblemCode[];
}

/**
 * The documented error responses of a route: one response per status, listing its codes. Every
 * route also gets `invalid_request` (400: each route validates its path, query or body) and a
 * `default` response (`internal_error` and the server-wide 5xx codes).
 *
 * What Fastify sees is only a description: problems are serialised by the error handler, never by
 * route schemas, so compiling a serializer per route and status would be wasted work (it was most
 * of the start-up time). The OpenAPI document gets the full form, a `$ref` to `Problem` with a
 * named example per code, through {@link documentProblems}.
 */
export function problemResponses(...codes: ProblemCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of new Set<ProblemCode>(['invalid_request', ...codes])) {
    const { status } = problemRegistry[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = marker(list.map((code) => `\`${code}\``).join(', '), list);
  }
  return { ...responses, ...serverProblemResponses() };
}

/** The `default` response alone: for routes that take no input, so no request of theirs is invalid. */
export function serverProblemResponses(): Record<string, unknown> {
  return {
    default: marker(
      'Any other problem: `internal_error` (500), `effect_outcome_unknown` (502), `runtime_stopped` and ' +
        '`committer_unavailable` (503 with Retry-After: transient), `shutting_down`, `engine_closed`, `overloaded` (503, with Retry-After when shedding load), ' +
        '`node_lease_lost` (503: this node changes no tree), `owner_unreachable` (503 with Retry-After: the tree\'s owner node did not answer a forwarded command); ' +
        '`tree_owned_elsewhere` (409, naming the owner in `scope-owner-node`/`scope-owner-url`) answers a forwarded command that reached a node which lost the tree.',
      ['internal_error'],
    ),
  };
}

function marker(description: string, codes: readonly ProblemCode[]): ProblemResponseMarker {
  return { description, [documentedCodes]: codes };
}

/**
 * The route schema as the OpenAPI document shows it (`@fastify/swagger`'s `transform`): each error
 * response made by {@link problemResponses} becomes `application/problem+json` with a `$ref` to
 * `Problem` and one named example per code. The route's own schema is not changed.
 */
export function documentProblems<S>(schema: S): S {
  const response = (schema as { response?: Record<string, unknown> } | undefined)?.response;
  if (response === undefined) return schema;
  const documented: Record<string, unknown> = {};
  for (const [status, entry] of Object.entries(response)) {
    const codes = (entry as Partial<ProblemResponseMarker> | undefined)?.[documentedCodes];
    documented[status] = codes === undefined ? entry : problemResponse((entry as ProblemResponseMarker).description, codes);
  }
  return { ...schema, response: documented };
}

/**
 * A route schema that needs a bearer token documents what guards it too: 401 `unauthorized`, 403
 * `insufficient_scope` (merged into a 403 the route already documents) and 429 `rate_limited`.
 * Public operations (probes, this document) are neither authenticated nor rate limited.
 */
export function withAuthProblems<S>(schema: S): S {
  const response = (schema as { response?: Record<string, unknown> } | undefined)?.response;
  if (response === undefined) return schema;
  const merged: Record<string, unknown> = { ...response };
  for (const code of ['unauthorized', 'insufficient_scope', 'rate_limited'] as const) {
    const status = String(problemRegistry[code].status);
    const existing = (merged[status] as Partial<ProblemResponseMarker> | undefined)?.[documentedCodes] ?? [];
    const codes = [...existing, code];
    merged[status] = marker(codes.map((entry) => `\`${entry}\``).join(', '), codes);
  }
  const ordered = Object.fromEntries(Object.entries(merged).sort(([a], [b]) => (a === 'default' ? 1 : b === 'default' ? -1 : a.localeCompare(b))));
  return { ...schema, response: ordered };
}

/** The problem codes a route documents, by status (for tests). */
export function documentedProblemCodes(response: Record<string, unknown>): Map<string, readonly ProblemCode[]> {
  const found = new Map<string, readonly ProblemCode[]>();
  for (const [status, entry] of Object.entries(response)) {
    const codes = (entry as Partial<ProblemResponseMarker> | undefined)?.[documentedCodes];
    if (codes !== undefined) found.set(status, codes);
  }
  return found;
}

function problemResponse(description: string, codes: readonly ProblemCode[]): unknown {
  return {
    description,
    content: {
      [problemMediaType]: {
        schema: ref(Problem),
        examples: Object.fromEntries(
          codes.map((code) => [code, { summary: problemRegistry[code].title, value: exampleProblem(code) }]),
        ),
      },
    },
  };
}

function exampleProblem(code: ProblemCode): ProblemBody {
  const { status, title } = problemRegistry[code];
  return { type: problemTypeUri(code), title, status, detail: title, code, requestId: 'req-1', instance: '/v1/processes' };
}

/**
 * An error thrown by a route to answer with a registry problem (e.g. a syntax check the schema
 * cannot express). Carries a stable `code` like every other error the handler understands.
 */
export class ProblemError extends Error {
  readonly code: ProblemCode;
  readonly errors: readonly FieldError[] | undefined;

  constructor(code: ProblemCode, detail: string, errors?: readonly FieldError[]) {
    super(detail);
    this.name = 'ProblemError';
    this.code = code;
    this.errors = errors;
  }
}

/**
 * Runs `action` and, if the kernel rejects a payload against its schema, roots the violations'
 * pointers at `base` (e.g. `/body/input`, or for a batch a function of the failing entry's index),
 * so they point into the request like route validation does.
 */
export async function withPointerBase<T>(base: string | ((batchIndex: number) => string), action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof SchemaValidationError) {
      const root = typeof base === 'string' ? base : base(error.batchIndex ?? 0);
      throw new ProblemError(
        'schema_validation_failed',
        error.message,
        error.details.map((v) => ({ pointer: `${root}${v.pointer}`, message: v.message, keyword: v.keyword })),
      );
    }
    throw error;
  }
}

interface Classified {
  readonly code: ProblemCode;
  readonly detail: string;
  readonly errors?: readonly FieldError[];
  /** `history_trimmed`: the oldest position the log still holds. */
  readonly firstAvailable?: string;
  /** `cursor_ahead`: the newest position the log holds. */
  readonly lastPosition?: string;
  /** `gate_already_answered`: the answer that came first. */
  readonly firstAnswer?: FirstAnswer;
  /** Logged with the error: 'info' for client mistakes, 'warn' for known 5xx, 'error' for defects. */
  readonly level: 'info' | 'warn' | 'error';
}

const validationRoots: Record<string, string> = { body: 'body', querystring: 'query', params: 'params', headers: 'headers' };

interface AjvError {
  readonly instancePath?: string;
  readonly keyword?: string;
  readonly message?: string;
  readonly params?: Record<string, unknown>;
}

/** Ajv errors → field errors whose pointer names the offending member itself (also when missing or unknown). */
export function fieldErrors(context: string, validation: readonly AjvError[]): FieldError[] {
  const root = `/${validationRoots[context] ?? context}`;
  return validation.map((error) => {
    let pointer = `${root}${error.instancePath ?? ''}`;
    const params = error.params ?? {};
    if (error.keyword === 'required' && typeof params.missingProperty === 'string') {
      pointer += `/${escapePointerToken(params.missingProperty)}`;
    } else if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
      pointer += `/${escapePointerToken(params.additionalProperty)}`;
    }
    const keyword = error.keyword ?? 'unknown';
    let message = error.message ?? 'is invalid';
    if (keyword === 'additionalProperties') message = 'is not a known member (unknown fields are rejected)';
    return { pointer, message, keyword };
  });
}

const fastifyCodes: Readonly<Record<string, ProblemCode>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_NOT_FOUND: 'route_not_found',
};

const statusCodes: Readonly<Record<number, ProblemCode>> = {
  404: 'route_not_found',
  406: 'not_acceptable',
  408: 'request_timeout',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  416: 'range_not_satisfiable',
  417: 'expectation_failed',
  431: 'request_header_fields_too_large',
};

const edgeAuthoredCodes: ReadonlySet<ProblemCode> = new Set(['overloaded', 'stream_capacity']);

function classify(error: unknown, bodyLimit: number): Classified {
  const candidate = error as Partial<FastifyError> & { errors?: readonly FieldError[] };
  if (Array.isArray(candidate.validation)) {
    const errors = fieldErrors(candidate.validationContext ?? 'body', candidate.validation);
    const detail = errors.map((e) => `${e.pointer} ${e.message}`).join('; ');
    return { code: 'invalid_request', detail: `the request does not match its schema: ${detail}`, errors, level: 'info' };
  }
  const code = typeof candidate.code === 'string' ? candidate.code : undefined;
  if (code !== undefined && isProblemCode(code)) {
    const { status, title } = problemRegistry[code];
    if (code === 'internal_error') return { code, detail: 'the server could not answer this request', level: 'error' };
    // A 5xx's message may come from deep inside (a store, a driver) and is not sent; the edge's own
    // refusals (shedding, stream capacity) say what to do and keep theirs.
    // An error may also say its detail is written for the client (a latched tree's next step).
    const authored = edgeAuthoredCodes.has(code) || (error as { detailIsPublic?: unknown }).detailIsPublic === true;
    if (status >= 500 && !authored) return { code, detail: `${title}: retry later`, level: 'warn' };
    const message = typeof candidate.message === 'string' && candidate.message !== '' ? candidate.message : title;
    const errors = Array.isArray(candidate.errors) ? candidate.errors : undefined;
    const firstAvailable = (error as { firstAvailable?: unknown }).firstAvailable;
    if (code === 'history_trimmed' && typeof firstAvailable === 'string') return { code, detail: message, firstAvailable, level: 'info' };
    const lastPosition = (error as { lastPosition?: unknown }).lastPosition;
    if (code === 'cursor_ahead' && typeof lastPosition === 'string') return { code, detail: message, lastPosition, level: 'info' };
    const firstAnswer = (error as { firstAnswer?: FirstAnswer }).firstAnswer;
    if (code === 'gate_already_answered' && typeof firstAnswer === 'object' && firstAnswer !== null) return { code, detail: message, firstAnswer, level: 'info' };
    return errors === undefined ? { code, detail: message, level: 'info' } : { code, detail: message, errors, level: 'info' };
  }
  // The client closed the connection before its body arrived (Node's `aborted`, which Fastify's body
  // reader passes on as a 400): the client's doing, not a defect, and nobody is left to answer.
  if (code === 'ECONNRESET' && candidate.message === 'aborted') {
    return { code: 'invalid_request', detail: 'the client closed the connection before the request body arrived', level: 'info' };
  }
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return { code: 'payload_too_large', detail: `the request body exceeds ${bodyLimit} bytes`, level: 'info' };
  }
  if (code !== undefined && fastifyCodes[code] !== undefined) {
    return { code: fastifyCodes[code], detail: String(candidate.message ?? 'invalid request'), level: 'info' };
  }
  // Fastify's other client errors (and plugins': e.g. 406 from an event-stream route) keep their meaning,
  // and so do client errors of the http-errors kind, which mark themselves `expose` (the docs' static
  // files: 416 for a Range beyond the file).
  const status = candidate.statusCode;
  const exposed = code?.startsWith('FST_') === true || (error as { expose?: unknown }).expose === true;
  if (exposed && typeof status === 'number' && status >= 400 && status < 500) {
    return { code: statusCodes[status] ?? 'invalid_request', detail: String(candidate.message ?? 'invalid request'), level: 'info' };
  }
  return { code: 'internal_error', detail: 'the server could not answer this request', level: 'error' };
}

/**
 * Bounds on what a problem repeats of the request: a detail or message may quote input (an id, a
 * member name), and a hostile request must not get itself echoed at length, nor a body with ten
 * thousand errors a response ten thousand entries long.
 */
export const problemBounds = { detailChars: 1_000, messageChars: 300, pointerChars: 512, instanceChars: 512, errors: 100 } as const;

function bounded(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (truncated)` : text;
}

function render(request: FastifyRequest, code: ProblemCode, detail: string, errors?: readonly FieldError[], positions: Pick<Classified, 'firstAvailable' | 'lastPosition' | 'firstAnswer'> = {}): ProblemBody {
  const { status, title } = problemRegistry[code];
  const listed = errors === undefined ? undefined : errors.slice(0, problemBounds.errors);
  const omitted = errors === undefined ? 0 : errors.length - (listed?.length ?? 0);
  const body: ProblemBody = {
    type: problemTypeUri(code),
    title,
    status,
    detail: `${bounded(detail, problemBounds.detailChars)}${omitted > 0 ? ` (${omitted} more errors not listed)` : ''}`,
    code,
    requestId: String(request.id),
    instance: bounded(request.url.split('?')[0] ?? request.url, problemBounds.instanceChars),
  };
  if (listed !== undefined && listed.length > 0) {
    body.errors = listed.map((error) => ({
      ...error,
      pointer: bounded(error.pointer, problemBounds.pointerChars),
      message: bounded(error.message, problemBounds.messageChars),
    }));
  }
  if (positions.firstAvailable !== undefined) body.firstAvailable = positions.firstAvailable;
  if (positions.lastPosition !== undefined) body.lastPosition = positions.lastPosition;
  if (positions.firstAnswer !== undefined) body.firstAnswer = { answeredAt: positions.firstAnswer.answeredAt, provenance: positions.firstAnswer.provenance, actor: positions.firstAnswer.actor };
  return body;
}

/** Sends a problem. Serialised here (not by route schemas) so no field is ever dropped or coerced. */
export function sendProblem(reply: FastifyReply, body: ProblemBody): FastifyReply {
  return reply.code(body.status).type(problemMediaType).send(JSON.stringify(body));
}

/** Errors Fastify's router raises before any route or hook runs (the `frameworkErrors` option). */
function classifyFrameworkError(error: FastifyError, bodyLimit: number): Classified {
  if (error.code === 'FST_ERR_BAD_URL') {
    return { code: 'invalid_request', detail: 'the request path is not valid percent-encoding', level: 'info' };
  }
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return { code: 'invalid_request', detail: 'a path parameter is longer than this server reads (identities are at most 256 characters)', level: 'info' };
  }
  return classify(error, bodyLimit);
}

export interface FrameworkErrorHandlerOptions {
  /** The body limit in bytes, named in 413 details. */
  readonly bodyLimit: number;
  /** Called when the problem has been sent, with the seconds it took (HTTP metrics). */
  readonly answered?: (request: FastifyRequest, reply: FastifyReply, seconds: number) => void;
}

/**
 * Fastify's `frameworkErrors` option: a path that is not valid percent-encoding (`%zz`) or a path
 * parameter over `maxParamLength` is found while routing, before any hook runs, and would be
 * answered with Fastify's own JSON. Here it is a problem like any other, with its `x-request-id`.
 */
export function frameworkErrorHandler(options: FrameworkErrorHandlerOptions): (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void {
  return (error, request, reply) => {
    const started = performance.now();
    const classified = classifyFrameworkError(error, options.bodyLimit);
    if (classified.level === 'error') request.log.error({ err: error, code: classified.code }, 'request failed with an unexpected error');
    else request.log.info({ code: classified.code, detail: classified.detail }, 'request rejected');
    // Fastify runs no onResponse hook for these answers, nor times them.
    if (options.answered !== undefined) reply.raw.once('finish', () => options.answered?.(request, reply, (performance.now() - started) / 1000));
    reply.header('x-request-id', request.id);
    sendProblem(reply, render(request, classified.code, classified.detail, classified.errors));
  };
}

/**
 * Retry-After of a transient 503 whose error names no time of its own: a stopped tree's runtime (its
 * owner restores it from the stored head within about a second) and storage that did not answer.
 */
const transientRetryAfterSeconds: Readonly<Record<string, number>> = { runtime_stopped: 1, committer_unavailable: 1 };

export interface ProblemDetailsOptions {
  /** The body limit in bytes, named in 413 details. */
  readonly bodyLimit: number;
  /**
   * Runs first with each route error: `true` when it answered the request itself (a command
   * forwarded to the tree's owner, src/app/forwarding.ts), else the error to answer with.
   */
  readonly intercept?: (error: unknown, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

/**
 * Installs the error and not-found handlers on the instance it is registered on (and everything
 * registered below it): register it at the root, before the resource plugins.
 */
async function installProblemDetails(app: FastifyInstance, options: ProblemDetailsOptions): Promise<void> {
  app.setErrorHandler(async (thrown, request, reply) => {
    const error = options.intercept === undefined ? thrown : await options.intercept(thrown, request, reply);
    if (error === true) return reply;
    const classified = classify(error, options.bodyLimit);
    const log = { err: error, code: classified.code };
    if (classified.level === 'error') request.log.error(log, 'request failed with an unexpected error');
    else if (classified.level === 'warn') request.log.warn(log, 'request failed');
    else request.log.info({ code: classified.code, detail: classified.detail }, 'request rejected');
    if (reply.sent || reply.raw.headersSent) return;
    // A 416 says which range there is (RFC 9110 §15.5.17); the static file server puts it on the error.
    const contentRange = (error as { headers?: Record<string, unknown> }).headers?.['Content-Range'];
    if (classified.code === 'range_not_satisfiable' && typeof contentRange === 'string') reply.header('content-range', contentRange);
    const own = (error as { retryAfterSeconds?: unknown } | null)?.retryAfterSeconds;
    const retryAfter = typeof own === 'number' && Number.isInteger(own) && own > 0 ? own : transientRetryAfterSeconds[classified.code];
    if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
    return sendProblem(reply, render(request, classified.code, classified.detail, classified.errors, classified));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = (request.url.split('?')[0] ?? '').slice(0, 256);
    return sendProblem(reply, render(request, 'route_not_found', `no route for ${request.method} ${path}`));
  });
}

/** Not encapsulated (fastify-plugin): the handlers apply to the instance that registers the plugin. */
const problemDetails = fastifyPlugin(installProblemDetails, { name: 'problem-details', fastify: '5.x' });

export default problemDetails;
