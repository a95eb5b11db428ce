import type { HostGateRecord } from '../../store/host-gates.js';
import type { Json } from '../host.js';
import { type GatePrompt, gatePromptOf } from './gate-view.js';

/** Who answered a host-owned gate and when; what the log keeps of the answer is its digest. */
export interface HostGateAnswerView {
  readonly answeredAt: string;
  readonly provenance: 'human' | 'api';
  readonly actor: string | null;
  readonly requestId: string | null;
  /** sha256 (hex) of the answer's JSON text: kept after close, when the answer itself is gone. */
  readonly digest: string;
}

export interface HostGateView {
  readonly gateId: string;
  readonly owner: 'host';
  readonly kind: 'form' | 'open_url';
  readonly state: 'open' | 'answered' | 'closed';
  /** Why a closed gate closed: its opener closed it, or it expired. */
  readonly closedReason: 'closed' | 'expired' | null;
  readonly subject: { readonly tenant: string };
  readonly prompt: GatePrompt;
  readonly answerSchema: Json | null;
  /** `open_url`: the page a person visits. */
  readonly url: string | null;
  readonly openedAt: string;
  readonly expiresAt: string;
  readonly closedAt: string | null;
  /** Who opened it (the principal with authentication on, else the caller's label). */
  readonly openedBy: string | null;
  readonly answer: HostGateAnswerView | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The view of a record at `now`: a gate past its expiry is closed, whatever its stored state. */
export function hostGateViewOf(record: HostGateRecord, now: number): HostGateView {
  const expired = record.state !== 'closed' && record.expiresAt <= now;
  const state = record.state === 'closed' || expired ? 'closed' : record.state;
  const answerSchema = record.answerSchema === null ? null : (JSON.parse(record.answerSchema) as Json);
  const meta = record.answerMeta;
  return {
    gateId: record.id,
    owner: 'host',
    kind: record.kind,
    state,
    closedReason: state !== 'closed' ? null : expired || (record.closedAt !== null && record.closedAt >= record.expiresAt) ? 'expired' : 'closed',
    subject: { tenant: record.tenant },
    prompt: gatePromptOf(record.prompt, answerSchema),
    answerSchema,
    url: record.url,
    openedAt: iso(record.createdAt),
    expiresAt: iso(record.expiresAt),
    closedAt: record.closedAt !== null ? iso(record.closedAt) : expired ? iso(record.expiresAt) : null,
    openedBy: record.actor,
    answer: meta === null ? null : { answeredAt: iso(meta.answeredAt), provenance: meta.provenance, actor: meta.actor, requestId: meta.requestId, digest: meta.digest },
  };
}
