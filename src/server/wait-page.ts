import { invalidRequest } from '../errors.js';
import type { Page, WaitView } from './host.js';

type WaitPosition = Pick<WaitView, 'since' | 'processId' | 'waitId'>;

/**
 * One page of the inbox, oldest first by (since, process, wait) — a total order, so the cursor (the
 * last wait of the previous page) is exact: waits opened or answered in between neither repeat nor
 * shift a page.
 */
export function waitPage(waits: readonly WaitView[], cursor: string | undefined, size: number): Page<WaitView> {
  const after = cursor === undefined ? undefined : decodeWaitCursor(cursor);
  const ordered = [...waits].sort(compareWaits);
  const start = after === undefined ? 0 : ordered.findIndex((wait) => compareWaits(wait, after) > 0);
  const items = start < 0 ? [] : ordered.slice(start, start + size);
  const last = items.at(-1);
  const more = start >= 0 && start + size < ordered.length;
  return { items, nextCursor: more && last !== undefined ? encodeWaitCursor(last) : null };
}

function compareWaits(a: WaitPosition, b: WaitPosition): number {
  for (const member of ['since', 'processId', 'waitId'] as const) {
    if (a[member] !== b[member]) return a[member] < b[member] ? -1 : 1;
  }
  return 0;
}

function encodeWaitCursor(wait: WaitView): string {
  return Buffer.from(JSON.stringify([wait.since, wait.processId, wait.waitId])).toString('base64url');
}

function decodeWaitCursor(cursor: string): WaitPosition {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 3 && value.every((part) => typeof part === 'string')) {
      const [since, processId, waitId] = value as [string, string, string];
      return { since, processId, waitId };
    }
  } catch {
    // falls through to the refusal
  }
  throw invalidRequest('cursor is not a cursor of this list');
}
