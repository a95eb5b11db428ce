import { createHash, randomBytes } from 'node:crypto';
import type { KernelError } from '../../kernel/index.js';
import { codedError, HostErrorCode } from '../../errors.js';
import type { AnswerOutcome, HostGateRecord, HostGateStore } from '../../store/host-gates.js';
import type { Json } from '../host.js';
import { answerSchemaProblems, checkAnswer } from './answer-schema.js';
import type { GateConfig } from './gate-config.js';
import { GateTokens } from './gate-token.js';
import { type HostGateAnswerView, type HostGateView, hostGateViewOf } from './host-gate-view.js';

/** `POST /v1/gates`: what the opener sends (the route's schema has checked the shapes). */
export interface HostGateOpenRequest {
  readonly kind: string;
  readonly prompt?: string;
  readonly answerSchema?: Json;
  readonly url?: string;
  readonly timeoutMs?: number;
  readonly requestId?: string;
  /** Who opens it: the principal with authentication on, else the caller's label. */
  readonly actor: string | null;
  readonly tenant: string;
}

export interface HostGateOpened {
  /** False when the request id had opened this gate before (the same body). */
  readonly created: boolean;
  readonly gate: HostGateView;
  /** `open_url`: where the visited page posts the answer, with the one-time token. */
  readonly callbackUrl: string | null;
}

export interface HostGateAnswered {
  readonly accepted: boolean;
  readonly gate: HostGateView;
}

/** `GET /v1/gates/{id}/answer`: the gate as it stands, and its answer while it is answered. */
export interface HostGateAnswerPoll {
  readonly gate: HostGateView;
  readonly answer: Json | null;
}

/** The longest `waitMs` of an answer poll. */
export const maxAnswerWaitMs = 60_000;

const hostGatePrefix = 'hostgate:';
const hostGateIdPattern = /^hostgate:[0-9a-f]{32}$/;

export function isHostGateId(gateId: string): boolean {
  return hostGateIdPattern.test(gateId);
}

/**
 * Host-owned gates (README "Host-owned gates"): an external system opens one to get a person's
 * answer, reads the answer with a long poll, and closes it. Bound to no wait, so the store decides
 * everything: the caps (counted with the reservation, before the record exists), the first answer
 * (one atomic step that refuses a closed or expired gate), the close (which deletes the answer).
 * Everything a caller sends is checked before anything is written; provenance is set here.
 */
export class HostGates {
  readonly #store: HostGateStore;
  readonly #config: GateConfig;
  readonly #shutdown: AbortSignal | undefined;
  readonly #waiting: { inc(): void; dec(): void } | undefined;
  #tokens: Promise<GateTokens> | undefined;

  constructor(options: { readonly store: HostGateStore; readonly config: GateConfig; readonly shutdown?: AbortSignal; readonly waiting?: { inc(): void; dec(): void } }) {
    this.#store = options.store;
    this.#config = options.config;
    this.#shutdown = options.shutdown;
    this.#waiting = options.waiting;
  }

  async open(request: HostGateOpenRequest): Promise<HostGateOpened> {
    const spec = this.#checked(request);
    const id = request.requestId === undefined ? `${hostGatePrefix}${randomBytes(16).toString('hex')}` : `${hostGatePrefix}${sha256(`${request.tenant}\u0000${request.requestId}`).slice(0, 32)}`;
    const requestDigest = sha256(JSON.stringify([spec.kind, spec.prompt, spec.answerSchema, spec.url, spec.timeoutMs, request.actor]));
    const reserved = await this.#store.reserve({ id, tenant: request.tenant, requestDigest, timeoutMs: spec.timeoutMs }, { perTenant: this.#config.maxPerTenant, cluster: this.#config.maxOpen });
    if (reserved.kind === 'capacity') {
      const error = codedError(
        HostErrorCode.gateCapacity,
        reserved.scope === 'tenant'
          ? `this tenant holds ${this.#config.maxPerTenant} open host-owned gates (SCOPE_GATE_MAX_PER_TENANT): close one first`
          : `the cluster holds ${this.#config.maxOpen} open host-owned gates (SCOPE_GATE_MAX_OPEN): close one first`,
      );
      throw Object.assign(error, { retryAfterSeconds: Math.ceil(reserved.retryAfterMs / 1000) });
    }
    if (reserved.kind === 'existing' && reserved.requestDigest !== requestDigest) {
      throw codedError(HostErrorCode.gateRequestConflict, `request id ${JSON.stringify(request.requestId)} opened another gate (${id}) with another body`);
    }
    const record: HostGateRecord = {
      id,
      tenant: request.tenant,
      kind: spec.kind,
      prompt: spec.prompt,
      answerSchema: spec.answerSchema,
      url: spec.url,
      actor: request.actor,
      requestId: request.requestId ?? null,
      requestDigest,
      createdAt: reserved.createdAt,
      expiresAt: reserved.expiresAt,
      state: 'open',
      closedAt: null,
      answerMeta: null,
      answer: null,
      tokenUsed: false,
    };
    // A retry writes the identical record (everything in it follows from the reservation and the
    // body), so it does not matter whether the first attempt's write landed.
    await this.#store.write(record);
    const stored = (await this.#store.read(id)) ?? record;
    return { created: reserved.kind === 'reserved', gate: this.#view(stored), callbackUrl: spec.kind === 'open_url' ? await this.#callbackUrl(id) : null };
  }

  /** One gate; another tenant's is not found. */
  async gate(gateId: string, tenant: string | undefined): Promise<HostGateView> {
    return this.#view(await this.#record(gateId, tenant));
  }

  /** The tenant's retained gates (expired and closed ones included, for their retention). */
  async list(tenant: string): Promise<HostGateView[]> {
    return (await this.#store.list(tenant)).map((record) => this.#view(record));
  }

  /** `POST /v1/gates/{id}/answer`: a person's answer (provenance `human`), exactly once. */
  async answer(gateId: string, input: { readonly answer: Json; readonly requestId: string; readonly actor: string | null }, tenant: string | undefined): Promise<HostGateAnswered> {
    const record = await this.#record(gateId, tenant);
    this.#refuseSettled(record);
    checkAnswer(record.answerSchema, input.answer);
    const text = JSON.stringify(input.answer);
    const outcome = await this.#store.answer(gateId, { answer: text, digest: sha256(text), provenance: 'human', actor: input.actor, requestId: input.requestId, viaToken: false });
    return this.#answered(gateId, outcome);
  }

  /** `POST /v1/gates/{id}/callback?token=`: the visited page's answer (provenance `api`), spending the token. */
  async callback(gateId: string, token: string, answer: Json): Promise<HostGateAnswered> {
    if (!isHostGateId(gateId)) throw gateNotFound(gateId);
    if (!(await this.#gateTokens()).verify(gateId, token)) throw codedError(HostErrorCode.gateTokenInvalid, `the token is not this gate's callback token`);
    const record = await this.#record(gateId, undefined);
    if (record.kind !== 'open_url') throw codedError(HostErrorCode.gateTokenInvalid, `gate ${gateId} has no callback`);
    if (record.tokenUsed) throw tokenUsed(gateId);
    this.#refuseSettled(record);
    checkAnswer(record.answerSchema, answer);
    const text = JSON.stringify(answer);
    const outcome = await this.#store.answer(gateId, { answer: text, digest: sha256(text), provenance: 'api', actor: null, requestId: null, viaToken: true });
    return this.#answered(gateId, outcome);
  }

  /**
   * The opener's long poll: answers at once when the gate is answered or closed, else when the store
   * says it moved (an answer or a close, on any node) or its expiry came, or after `waitMs`.
   */
  async poll(gateId: string, waitMs: number, tenant: string | undefined): Promise<HostGateAnswerPoll> {
    let record = await this.#record(gateId, tenant);
    if (waitMs > 0 && this.#pending(record)) {
      const deadline = this.#store.now() + waitMs;
      let wake: () => void = () => undefined;
      // Watch first, then read again: a change between the two reads still wakes this poll.
      const unwatch = await this.#store.watch(gateId, () => wake());
      const onShutdown = () => wake();
      this.#shutdown?.addEventListener('abort', onShutdown, { once: true });
      let timer: NodeJS.Timeout | undefined;
      try {
        for (;;) {
          const woken = new Promise<void>((resolve) => {
            wake = resolve;
          });
          record = await this.#record(gateId, tenant);
          const until = Math.min(deadline, record.expiresAt);
          const now = this.#store.now();
          if (!this.#pending(record) || now >= until || this.#shutdown?.aborted === true) break;
          // A timer may fire a little early: the loop reads again and waits out the rest.
          timer = setTimeout(wake, until - now);
          this.#waiting?.inc();
          try {
            await woken;
          } finally {
            this.#waiting?.dec();
          }
          clearTimeout(timer);
        }
      } finally {
        clearTimeout(timer);
        unwatch();
        this.#shutdown?.removeEventListener('abort', onShutdown);
      }
    }
    const gate = this.#view(record);
    return { gate, answer: gate.state === 'answered' && record.answer !== null ? (JSON.parse(record.answer) as Json) : null };
  }

  /** `POST /v1/gates/{id}/close`: idempotent; the answer is deleted, who answered and its digest stay. */
  async close(gateId: string, tenant: string | undefined): Promise<HostGateView> {
    await this.#record(gateId, tenant);
    const closed = await this.#store.close(gateId);
    if (closed === undefined) throw gateNotFound(gateId);
    return this.#view(closed);
  }

  #pending(record: HostGateRecord): boolean {
    return record.state === 'open' && record.expiresAt > this.#store.now();
  }

  #refuseSettled(record: HostGateRecord): void {
    const view = this.#view(record);
    if (view.state === 'closed') throw closedError(view);
  }

  #answered(gateId: string, outcome: AnswerOutcome): HostGateAnswered {
    if (outcome.kind === 'missing') throw gateNotFound(gateId);
    const gate = this.#view(outcome.record);
    switch (outcome.kind) {
      case 'answered':
        return { accepted: true, gate };
      case 'same':
        return { accepted: false, gate };
      case 'already':
        throw alreadyAnswered(gateId, gate.answer);
      case 'token_used':
        throw tokenUsed(gateId);
      default:
        throw closedError(gate);
    }
  }

  async #record(gateId: string, tenant: string | undefined): Promise<HostGateRecord> {
    const record = isHostGateId(gateId) ? await this.#store.read(gateId) : undefined;
    // Another tenant's gate answers exactly as an unknown one does.
    if (record === undefined || (tenant !== undefined && record.tenant !== tenant)) throw gateNotFound(gateId);
    return record;
  }

  #view(record: HostGateRecord): HostGateView {
    return hostGateViewOf(record, this.#store.now());
  }

  async #callbackUrl(gateId: string): Promise<string> {
    return `/v1/gates/${encodeURIComponent(gateId)}/callback?token=${(await this.#gateTokens()).mint(gateId)}`;
  }

  #gateTokens(): Promise<GateTokens> {
    this.#tokens ??= this.#store.secret().then(
      (secret) => new GateTokens(secret),
      (error: unknown) => {
        this.#tokens = undefined;
        throw error;
      },
    );
    return this.#tokens;
  }

  /** The payload checked for its kind before anything is written: 422 with pointers into the body. */
  #checked(request: HostGateOpenRequest): { kind: 'form' | 'open_url'; prompt: string | null; answerSchema: string | null; url: string | null; timeoutMs: number } {
    if (request.kind !== 'form' && request.kind !== 'open_url') {
      throw codedError(HostErrorCode.gateKindMismatch, `a host-owned gate is a form or an open_url; ${JSON.stringify(request.kind)} gates are the faces of process waits`);
    }
    const problems: Array<{ pointer: string; message: string; keyword: string }> = [];
    if (request.kind === 'form') {
      if (request.answerSchema === undefined) problems.push({ pointer: '/body/answerSchema', message: 'a form gate needs the JSON Schema its answer must satisfy', keyword: 'required' });
      if (request.url !== undefined) problems.push({ pointer: '/body/url', message: 'a form gate has no URL (open_url gates do)', keyword: 'not' });
    } else if (request.url === undefined) {
      problems.push({ pointer: '/body/url', message: 'an open_url gate needs the absolute http(s) URL a person visits', keyword: 'required' });
    } else if (!isWebUrl(request.url)) {
      problems.push({ pointer: '/body/url', message: 'must be an absolute http:// or https:// URL without credentials', keyword: 'format' });
    }
    if (request.answerSchema !== undefined) {
      for (const problem of answerSchemaProblems(request.answerSchema)) problems.push({ pointer: `/body/answerSchema${problem.pointer}`, message: problem.message, keyword: problem.keyword });
    }
    const timeoutMs = request.timeoutMs ?? this.#config.maxTimeoutMs;
    if (timeoutMs > this.#config.maxTimeoutMs) problems.push({ pointer: '/body/timeoutMs', message: `must be at most ${this.#config.maxTimeoutMs} (SCOPE_GATE_MAX_TIMEOUT_MS)`, keyword: 'maximum' });
    if (problems.length > 0) {
      const error = codedError(HostErrorCode.gatePayloadInvalid, `the ${request.kind} gate's payload is invalid: ${problems.map((problem) => `${problem.pointer} ${problem.message}`).join('; ')}`);
      throw Object.assign(error, { errors: problems });
    }
    return {
      kind: request.kind,
      prompt: request.prompt ?? null,
      answerSchema: request.answerSchema === undefined ? null : JSON.stringify(request.answerSchema),
      url: request.url ?? null,
      timeoutMs,
    };
  }
}

function isWebUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function gateNotFound(gateId: string): KernelError {
  return codedError(HostErrorCode.gateNotFound, `no gate ${gateId}`);
}

function tokenUsed(gateId: string): KernelError {
  return codedError(HostErrorCode.gateTokenUsed, `the callback token of gate ${gateId} was used already`);
}

function closedError(gate: HostGateView): KernelError {
  return codedError(HostErrorCode.gateClosed, `gate ${gate.gateId} is closed${gate.closedReason === 'expired' ? ` (it expired at ${gate.expiresAt})` : ''}: it takes no answer`);
}

function alreadyAnswered(gateId: string, answer: HostGateAnswerView | null): KernelError {
  const error = codedError(
    HostErrorCode.gateAlreadyAnswered,
    `gate ${gateId} was answered already${answer === null ? '' : ` (${answer.provenance}${answer.actor === null ? '' : ` by ${answer.actor}`} at ${answer.answeredAt})`}`,
  );
  if (answer !== null) Object.assign(error, { firstAnswer: { answeredAt: answer.answeredAt, provenance: answer.provenance, actor: answer.actor } });
  return error;
}
