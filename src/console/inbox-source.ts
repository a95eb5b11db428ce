/**
 * Where inbox items come from and how they are answered: the one module to change when the inbox moves
 * to gates. Today an item is an open wait (`GET /v1/waits`), answered by a signal addressed to it
 * (`POST /v1/processes/{id}/signals` with `waitId`).
 */
import { api, enc, type Page } from './api';

export interface InboxItem {
  /** Stable across refreshes: the item's own identity. */
  readonly key: string;
  readonly processId: string;
  readonly rootId: string;
  readonly deployment: string;
  readonly kind: string;
  readonly since: string;
  readonly prompt: string | null;
  readonly description: string | null;
  /** The JSON Schema an answer must satisfy (null: any JSON value). */
  readonly answerSchema: unknown;
  readonly waitId: string;
}

interface WaitWire {
  readonly processId: string;
  readonly rootId: string;
  readonly waitId: string;
  readonly waitKind: string;
  readonly deployment: string;
  readonly since: string;
  readonly answerSchema: unknown;
  readonly prompt: string | null;
  readonly description: string | null;
}

/** Every open item, oldest first (follows the cursor; the server bounds a page to 1,000). */
export async function listInbox(): Promise<InboxItem[]> {
  const items: InboxItem[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<WaitWire> = await api<Page<WaitWire>>('GET', cursor === null ? '/v1/waits' : `/v1/waits?cursor=${enc(cursor)}`);
    for (const wait of page.items) {
      items.push({
        key: wait.waitId,
        processId: wait.processId,
        rootId: wait.rootId,
        deployment: wait.deployment,
        kind: wait.waitKind,
        since: wait.since,
        prompt: wait.prompt,
        description: wait.description,
        answerSchema: wait.answerSchema,
        waitId: wait.waitId,
      });
    }
    cursor = page.nextCursor;
  } while (cursor !== null);
  return items;
}

/** Answers one item; a rejected answer throws the server's problem (ApiError). */
export async function answerInbox(item: InboxItem, payload: unknown): Promise<void> {
  const id = `console-${crypto.randomUUID()}`;
  await api('POST', `/v1/processes/${enc(item.processId)}/signals`, { signals: [{ id, waitId: item.waitId, payload }] });
}
