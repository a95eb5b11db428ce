import { invalidRequest } from '../../errors.js';
import type { Page } from '../host.js';
import type { GateView } from './gate-view.js';
import type { HostGateView } from './host-gate-view.js';

/** Default and largest page, like `/v1/waits`. */
export const maxGatePage = 1_000;

type Position = readonly [string, string, string];

function positionOf(gate: GateView | HostGateView): Position {
  // A host-owned gate's id stands in for the process (`hostgate:` never equals a process id).
  return gate.owner === 'host' ? [gate.openedAt, gate.gateId, ''] : [gate.openedAt ?? '', gate.subject.processId, gate.subject.waitId];
}

function compare(a: Position, b: Position): number {
  for (let index = 0; index < 3; index += 1) {
    if (a[index] !== b[index]) return (a[index] as string) < (b[index] as string) ? -1 : 1;
  }
  return 0;
}

/**
 * One page of gates, oldest first by (openedAt, process, wait) — a total order, so the cursor (the
 * last gate of the previous page) is exact, as on `/v1/waits`.
 */
export function gatePage<View extends GateView | HostGateView>(gates: readonly View[], cursor: string | undefined, limit: number | undefined): Page<View> {
  const size = limit ?? maxGatePage;
  if (!Number.isInteger(size) || size < 1 || size > maxGatePage) throw invalidRequest(`limit must be an integer in 1..${maxGatePage}`);
  const after = cursor === undefined ? undefined : decode(cursor);
  const ordered = [...gates].sort((a, b) => compare(positionOf(a), positionOf(b)));
  const start = after === undefined ? 0 : ordered.findIndex((gate) => compare(positionOf(gate), after) > 0);
  const items = start < 0 ? [] : ordered.slice(start, start + size);
  const last = items.at(-1);
  const more = start >= 0 && start + size < ordered.length;
  return { items, nextCursor: more && last !== undefined ? Buffer.from(JSON.stringify(positionOf(last))).toString('base64url') : null };
}

function decode(cursor: string): Position {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 3 && value.every((part) => typeof part === 'string')) return value as unknown as Position;
  } catch {
    // falls through to the refusal
  }
  throw invalidRequest('cursor is not a cursor of this list');
}
