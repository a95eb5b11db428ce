import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { Payload, Settlement } from '../../kernel/index.js';

/**
 * How a model call ends, as a Settlement. The line between definite and Unknown is whether the
 * endpoint may have seen the request without us seeing its definite answer (it may have generated,
 * and billed, a reply):
 *
 * | what happened                                                   | settlement | `status` |
 * |-----------------------------------------------------------------|------------|----------|
 * | the endpoint answered a complete reply                           | succeeded  | –        |
 * | the endpoint answered 4xx (400, 401, 404, 429 …)                 | failed     | the 4xx  |
 * | nothing was sent: malformed payload, key variable unset, refused connection, unknown host, canceled first | failed | null |
 * | 5xx, timeout, connection lost after sending, stream cut or errored before its finish, a reply we cannot read, canceled in flight | unknown | the 5xx or null |
 *
 * Every payload is `{"error":{"code","message","status"}}`. Messages are bounded and never carry the
 * API key (the caller passes `redact`, which blanks it wherever an endpoint echoed it).
 */
export interface ModelCallProblem {
  readonly code: string;
  readonly message: string;
  readonly status: number | null;
}

export const modelErrorCodes = Object.freeze({
  invalidRequest: 'model.invalid_request',
  apiKeyMissing: 'model.api_key_missing',
  canceled: 'model.canceled',
  unreachable: 'model.unreachable',
  rejected: 'model.rejected',
  serverError: 'model.server_error',
  timeout: 'model.timeout',
  interrupted: 'model.interrupted',
  connectionLost: 'model.connection_lost',
  streamCut: 'model.stream_cut',
  streamError: 'model.stream_error',
  invalidReply: 'model.invalid_reply',
  notConfigured: 'model.not_configured',
});

const maxMessageLength = 1_000;

/** Connection failures that happen before a byte of the request leaves: nothing was sent. */
const notSentCodes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ERR_INVALID_URL']);

function payloadOf(problem: ModelCallProblem): Payload {
  const message = problem.message.length > maxMessageLength ? `${problem.message.slice(0, maxMessageLength)}…` : problem.message;
  return Payload.encode({ error: { code: problem.code, message, status: problem.status } });
}

export function failedCall(problem: ModelCallProblem): Settlement {
  return Settlement.of('failed', payloadOf(problem));
}

export function unknownCall(problem: ModelCallProblem): Settlement {
  return Settlement.of('unknown', payloadOf(problem));
}

/** The `code`s along an error's cause chain (undici puts the system error a level or two down). */
function causeCodes(error: unknown): string[] {
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
}

export interface CallContext {
  /** The call's own deadline passed. */
  readonly timedOut: boolean;
  /** The Effect's abort signal fired (terminal intent, shutdown). */
  readonly canceled: boolean;
  /** Blanks the API key wherever it appears. */
  readonly redact: (text: string) => string;
}

/** The settlement for an error thrown by the client during a call that was (possibly) sent. */
export function settlementForError(error: unknown, context: CallContext): Settlement {
  const { redact } = context;
  // Our deadline and the Effect's abort both reach the client as an abort: ours decides which.
  if (context.timedOut) return unknownCall({ code: modelErrorCodes.timeout, message: 'the model call timed out; the endpoint may have answered', status: null });
  if (context.canceled || error instanceof APIUserAbortError) {
    return unknownCall({ code: modelErrorCodes.interrupted, message: 'the model call was canceled in flight; the endpoint may have answered', status: null });
  }
  if (error instanceof APIConnectionTimeoutError) return unknownCall({ code: modelErrorCodes.timeout, message: 'the model endpoint did not answer in time; it may have answered', status: null });
  if (error instanceof APIConnectionError) {
    const codes = causeCodes(error);
    const notSent = codes.find((code) => notSentCodes.has(code));
    if (notSent !== undefined) return failedCall({ code: modelErrorCodes.unreachable, message: `the model endpoint could not be reached (${notSent}); nothing was sent`, status: null });
    return unknownCall({ code: modelErrorCodes.connectionLost, message: `the connection to the model endpoint failed (${codes.join(', ') || 'no code'}); it may have answered`, status: null });
  }
  if (error instanceof APIError) {
    const status = typeof error.status === 'number' ? error.status : null;
    const detail = redact(error.message);
    if (status !== null && status >= 400 && status < 500) return failedCall({ code: modelErrorCodes.rejected, message: `the model endpoint refused the request: ${detail}`, status });
    if (status !== null && status >= 500) return unknownCall({ code: modelErrorCodes.serverError, message: `the model endpoint failed (${status}); it may have answered: ${detail}`, status });
    // An error event inside a stream that had started: the endpoint was working on it.
    return unknownCall({ code: modelErrorCodes.streamError, message: `the model stream reported an error: ${detail}`, status });
  }
  // A stream torn mid-body (undici's "terminated"), or anything else: the request was sent.
  const codes = causeCodes(error);
  const text = error instanceof Error ? error.message : 'a non-error value was thrown';
  return unknownCall({ code: modelErrorCodes.connectionLost, message: redact(`the model call broke off after sending (${codes.join(', ') || text}); the endpoint may have answered`), status: null });
}
