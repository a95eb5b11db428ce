/**
 * Where inbox items come from and how they are answered: the open gates (`GET /v1/gates?state=open`),
 * each answered through its gate (`POST /v1/gates/{gateId}/answer`), so the answer is checked against the
 * gate's schema, recorded with its provenance, and admitted exactly once.
 */
import { api, ApiError, enc, type Page } from './api';

export interface InboxItem {
  /** Stable across refreshes: the item's own identity (the gate id). */
  readonly key: string;
  readonly gateId: string;
  readonly processId: string;
  readonly rootId: string;
  readonly deployment: string;
  /** The gate's kind: `approval` or `form`. */
  readonly kind: string;
  readonly since: string | null;
  readonly prompt: string | null;
  /** The JSON Schema an answer must satisfy (null: any JSON value). */
  readonly answerSchema: unknown;
  readonly waitId: string;
}

interface GateWire {
  readonly gateId: string;
  readonly kind: string;
  readonly subject: { readonly processId: string; readonly rootId: string; readonly deployment: string; readonly waitId: string };
  readonly prompt: { readonly text: string | null };
  readonly answerSchema: unknown;
  readonly openedAt: string | null;
}

/** Every open gate, oldest first (follows the cursor; the server bounds a page to 1,000). */
export async function listInbox(): Promise<InboxItem[]> {
  const items: InboxItem[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<GateWire> = await api<Page<GateWire>>('GET', cursor === null ? '/v1/gates?state=open' : `/v1/gates?state=open&cursor=${enc(cursor)}`);
    for (const gate of page.items) {
      items.push({
        key: gate.gateId,
        gateId: gate.gateId,
        processId: gate.subject.processId,
        rootId: gate.subject.rootId,
        deployment: gate.subject.deployment,
        kind: gate.kind,
        since: gate.openedAt,
        prompt: gate.prompt.text,
        answerSchema: gate.answerSchema,
        waitId: gate.subject.waitId,
      });
    }
    cursor = page.nextCursor;
  } while (cursor !== null);
  return items;
}

/** A fresh request id for one form submission (kept by the caller, so a retry of it is idempotent). */
export function newRequestId(): string {
  return `console-${crypto.randomUUID()}`;
}

/**
 * Answers one item with the submission's request id: the same id with the same answer is a no-op on the
 * server, so resending after a lost response cannot answer twice. A refusal throws the server's problem.
 */
export async function answerInbox(item: InboxItem, payload: unknown, requestId: string): Promise<void> {
  await api('POST', `/v1/gates/${enc(item.gateId)}/answer`, { answer: payload, requestId });
}

/** The answer that came first, as a 409 `gate_already_answered` names it. */
export interface FirstAnswer {
  readonly answeredAt: string | null;
  readonly provenance: string;
  readonly actor: string | null;
}

/** The first answer when `error` is the server saying the gate was answered already; else undefined. */
export function firstAnswerOf(error: unknown): FirstAnswer | undefined {
  if (!(error instanceof ApiError) || error.status !== 409 || error.problem.code !== 'gate_already_answered') return undefined;
  const first = error.problem.firstAnswer;
  if (typeof first !== 'object' || first === null) return undefined;
  const { answeredAt, provenance, actor } = first as Record<string, unknown>;
  return {
    answeredAt: typeof answeredAt === 'string' ? answeredAt : null,
    provenance: typeof provenance === 'string' ? provenance : 'unknown',
    actor: typeof actor === 'string' ? actor : null,
  };
}
