/** Gates: the person-facing face of every external wait. */
import { type Static, Type, type TSchema } from '@sinclair/typebox';
import { anyJson, closedObject, identity, nullable, qualifiedName, ref, stringEnum, timestamp } from '../shared.js';
import type { HostGate } from './host-schemas.js';

export const gateKinds = ['approval', 'form', 'open_url'] as const;
export const gateStates = ['open', 'answered', 'closed'] as const;
const provenances = ['human', 'api', 'policy'] as const;

const gateIdExample = 'gate:cHJvY2VzczowMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OWFiY2RlZiB3YWl0OjAxMjNhYmNk';

export const GateField = closedObject(
  {
    name: Type.String(),
    type: nullable(Type.String({ description: 'The JSON type the answer schema gives the field.' })),
    required: Type.Boolean(),
    description: nullable(Type.String()),
  },
  { $id: 'GateField', description: 'One field of the form, read off the answer schema.' },
);

export const GateAnswer = closedObject(
  {
    answeredAt: nullable(timestamp('When the answer was admitted (the committed `agent.signal.accepted`).')),
    provenance: stringEnum(provenances, { description: 'Set by the server: `human` (this route), `api` (a signal addressed to the wait), `policy` (an auto-decision).' }),
    actor: nullable(Type.String({ description: 'Who answered, as a label: the authenticated principal when authentication is on, else what the caller said.' })),
    requestId: nullable(Type.String({ description: 'The request id the answer came with (this route only).' })),
    rule: nullable(Type.String({ description: 'The rule that fired (policy answers only).' })),
    signalId: Type.String({ description: 'The signal that answered the wait (in `GET /v1/processes/{id}/signals`).' }),
  },
  { $id: 'GateAnswer', description: 'How the gate was answered (the answer itself is in the process’s mailbox until consumed).' },
);

export const Gate = closedObject(
  {
    gateId: identity('Derived from the process and wait ids: every node computes the same.', gateIdExample),
    owner: stringEnum(['process'], { description: 'Process-owned: the face of an external wait.' }),
    kind: stringEnum(gateKinds, { description: '`approval` when the answer must carry a boolean `approved`; else `form`.' }),
    state: stringEnum(gateStates, { description: '`open` while the wait is, `answered` once the head holds its answer, `closed` when the wait ended unanswered.' }),
    subject: closedObject({
      processId: Type.String(),
      rootId: Type.String(),
      deployment: Type.String(),
      waitId: Type.String(),
      key: Type.String(),
    }),
    prompt: closedObject(
      {
        text: nullable(Type.String({ description: 'The prompt the wait carried, else the deployment’s description of the wait.' })),
        fields: Type.Array(ref(GateField)),
      },
      { description: 'Derived from the wait’s own validated facts: what a person sees cannot disagree with what the answer is checked against.' },
    ),
    answerSchema: anyJson('The JSON Schema the answer must satisfy (null: any JSON value).'),
    openedAt: nullable(timestamp('When the wait opened (null once the gate is no longer open).')),
    answer: nullable(ref(GateAnswer)),
  },
  { $id: 'Gate', description: 'A gate: a wait as a person answers it.' },
);

/** A host-owned gate (host-schemas.ts imports this file's GateField, so the reference is by name). */
const hostGateRef = Type.Unsafe<Static<typeof HostGate>>({ $ref: 'HostGate#' });

/** A gate of either owner. */
export const AnyGate = Type.Union([ref(Gate), hostGateRef]);

export const GateList = closedObject(
  {
    items: Type.Array(AnyGate),
    nextCursor: nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last page.' })),
  },
  { $id: 'GateList', description: 'A page of gates, oldest first.' },
);

export const GateQuery = closedObject({
  owner: Type.Optional(stringEnum(['process', 'host'], { description: 'Only process-owned or only host-owned gates (default both; `rootId` and `deployment` name process-owned gates only).' })),
  state: Type.Optional(stringEnum(gateStates, { description: 'Default `open`. `answered` and `closed` process-owned gates are listed per tree (with `rootId`); host-owned ones with `owner=host`.' })),
  kind: Type.Optional(stringEnum(gateKinds)),
  deployment: Type.Optional(qualifiedName('Only gates of processes of this deployment.', 'demo.approval')),
  rootId: Type.Optional(identity('Only gates in this tree.', 'process:0123456789abcdef0123456789abcdef')),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'From a previous page’s `nextCursor`.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Page size (default 1000).', example: 100 })),
});

export const GateParams = closedObject({
  gateId: identity('The gate id (URL-encoded where it appears in the path).', gateIdExample),
});

export const GateAnswerRequest = closedObject(
  {
    answer: anyJson('The answer, checked against the gate’s answer schema before anything is recorded.'),
    requestId: identity('The caller’s id for this answer: sending it again with the same answer is a no-op (200).', 'answer-7f3a'),
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Who answers, kept as a label (ignored when authentication is on: the principal is recorded).' })),
  },
  {
    $id: 'GateAnswerRequest',
    description: 'An answer to a gate. Provenance is set by the server; a body that names one is refused.',
    example: { answer: { approved: true }, requestId: 'answer-1', actor: 'ada' },
  },
);

export const GateAnswerOutcome = closedObject(
  {
    accepted: Type.Boolean({ description: 'False when this request id had been admitted before with the same answer.' }),
    gate: AnyGate,
  },
  { $id: 'GateAnswerOutcome', description: 'The answer is in the head: the gate as it stands now.' },
);

export const gateComponents: readonly TSchema[] = [GateField, GateAnswer, Gate, GateList, GateAnswerRequest, GateAnswerOutcome];
