/** Host-owned gates: opened by an external system with `POST /v1/gates`, bound to no wait. */
import { Type, type TSchema } from '@sinclair/typebox';
import { anyJson, closedObject, identity, nullable, ref, stringEnum, timestamp } from '../shared.js';
import { GateField } from './schemas.js';

const hostGateIdExample = 'hostgate:6f1c2a9e0b7d4c3a8e5f1029384756ab';

export const HostGateAnswer = closedObject(
  {
    answeredAt: timestamp('When the answer won (the store’s clock).'),
    provenance: stringEnum(['human', 'api'], { description: 'Set by the server: `human` (the answer route), `api` (the `open_url` callback).' }),
    actor: nullable(Type.String({ description: 'Who answered, as a label: the authenticated principal when authentication is on, else what the caller said.' })),
    requestId: nullable(Type.String({ description: 'The request id the answer came with (the answer route only).' })),
    digest: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'sha256 of the answer’s JSON text: what is kept of the answer once the gate is closed.' }),
  },
  { $id: 'HostGateAnswer', description: 'Who answered a host-owned gate and when (the answer itself: `GET /v1/gates/{gateId}/answer`, until closed).' },
);

export const HostGate = closedObject(
  {
    gateId: identity('`hostgate:` and 32 hex digits.', hostGateIdExample),
    owner: stringEnum(['host'], { description: 'Host-owned: opened with `POST /v1/gates`, bound to no wait.' }),
    kind: stringEnum(['form', 'open_url'], { description: '`form`: answered against its JSON Schema; `open_url`: a page to visit, answered through its callback (or the answer route).' }),
    state: stringEnum(['open', 'answered', 'closed'], { description: '`closed` once its opener closed it or it expired (`closedReason`).' }),
    closedReason: nullable(stringEnum(['closed', 'expired'])),
    subject: closedObject({ tenant: Type.String({ description: 'The tenant that opened it (`default` with authentication off).' }) }),
    prompt: closedObject(
      { text: nullable(Type.String()), fields: Type.Array(ref(GateField)) },
      { description: 'The opener’s prompt, and the fields read off the answer schema.' },
    ),
    answerSchema: anyJson('The JSON Schema the answer must satisfy (null: any JSON value).'),
    url: nullable(Type.String({ format: 'uri', description: '`open_url`: the page a person visits.' })),
    openedAt: timestamp('When it was opened.'),
    expiresAt: timestamp('When it closes by itself (at most `SCOPE_GATE_MAX_TIMEOUT_MS` after opening).'),
    closedAt: nullable(timestamp('When it closed (its expiry, for an expired gate).')),
    openedBy: nullable(Type.String({ description: 'Who opened it: the principal with authentication on, else the `actor` sent.' })),
    answer: nullable(ref(HostGateAnswer)),
  },
  { $id: 'HostGate', description: 'A host-owned gate: an external system’s question to a person.' },
);

export const HostGateOpenRequest = closedObject(
  {
    kind: stringEnum(['approval', 'form', 'open_url'], { description: '`form` or `open_url` (`approval` gates are the faces of process waits: 422 `gate_kind_mismatch`).' }),
    prompt: Type.Optional(Type.String({ minLength: 1, maxLength: 4000, description: 'What a person is asked.' })),
    answerSchema: Type.Optional(anyJson('`form` (required): a JSON Schema (draft 2020-12), checked as a schema before anything is written. `open_url` (optional): the callback answer’s schema.')),
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: '`open_url` (required): the absolute http(s) URL a person visits.' })),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1, description: 'How long it stays open, at most `SCOPE_GATE_MAX_TIMEOUT_MS` (the default).' })),
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Who opens it, as a label (ignored when authentication is on: the principal is recorded).' })),
    requestId: Type.Optional(identity('The caller’s id for this create: sending it again with the same body returns the same gate (200).', 'open-7f3a')),
  },
  {
    $id: 'HostGateOpenRequest',
    description: 'A host-owned gate to open. Checked for its kind before anything is written (422 with pointers).',
    example: { kind: 'form', prompt: 'Ship v2?', answerSchema: { type: 'object', properties: { ship: { type: 'boolean' } }, required: ['ship'] }, requestId: 'open-1', actor: 'ci' },
  },
);

export const HostGateOpened = closedObject(
  {
    gate: ref(HostGate),
    callbackUrl: nullable(Type.String({ description: '`open_url`: the path the visited page posts its answer to, carrying the one-time signed token (shown only here).' })),
  },
  { $id: 'HostGateOpened', description: 'The gate as opened.' },
);

export const HostGateAnswerOutcome = closedObject(
  {
    accepted: Type.Boolean({ description: 'False when this request id had answered before with the same answer.' }),
    gate: ref(HostGate),
  },
  { $id: 'HostGateAnswerOutcome', description: 'The answer is stored: the gate as it stands now.' },
);

export const HostGateAnswerPoll = closedObject(
  {
    gate: ref(HostGate),
    answer: anyJson('The answer while the gate is `answered`; null while it is open (the wait ran out) and once it is closed.'),
  },
  { $id: 'HostGateAnswerPoll', description: 'A host-owned gate’s answer, for its opener.' },
);

export const HostGateAnswerQuery = closedObject({
  waitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 60000, description: 'How long to wait for an answer or a close (default 0: answer at once).', example: 30000 })),
});

export const HostGateCallbackQuery = closedObject({
  token: Type.String({ minLength: 1, maxLength: 256, description: 'The one-time token of the gate’s `callbackUrl`.' }),
});

export const HostGateCallbackRequest = closedObject(
  { answer: anyJson('The answer, checked against the gate’s answer schema when it has one.') },
  { $id: 'HostGateCallbackRequest', description: 'An `open_url` gate’s answer, posted by the visited page.', example: { answer: { signed: true } } },
);

export const hostGateComponents: readonly TSchema[] = [HostGateAnswer, HostGate, HostGateOpenRequest, HostGateOpened, HostGateAnswerOutcome, HostGateAnswerPoll, HostGateCallbackRequest];
