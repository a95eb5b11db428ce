import { invalidRequest } from '../errors.js';
import type { EffectView, Page, UnknownEffectQuery, UnknownEffectView } from './host.js';
import type { UnknownRef } from './tree-marks.js';

export interface UnknownEffectSources {
  /** Every Unknown effect there is, in any order (embedded: the committer's memory; Redis: the verified index). */
  readonly refs: () => Promise<UnknownRef[]>;
  /** The full effect views of one process (attempts, diagnostic, late report). */
  readonly effectsOf: (processId: string) => Promise<readonly EffectView[]>;
  readonly tenantOf: (root: string) => Promise<string>;
}

/**
 * Every Unknown effect, ordered by (process, effect) so the cursor (the last entry of the previous page)
 * is exact. The refs come from heads (each process knows its `unknownEffectIds`): no log is scanned to
 * find them; only the processes on the returned page have their effect views read, for the evidence.
 */
export async function unknownEffectPage(sources: UnknownEffectSources, query: UnknownEffectQuery, limit: number): Promise<Page<UnknownEffectView>> {
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const refs: UnknownRef[] = [];
  const tenants = new Map<string, string>();
  for (const ref of await sources.refs()) {
    if (query.tenant !== undefined) {
      let tenant = tenants.get(ref.rootId);
      if (tenant === undefined) {
        tenant = await sources.tenantOf(ref.rootId);
        tenants.set(ref.rootId, tenant);
      }
      if (tenant !== query.tenant) continue;
    }
    refs.push(ref);
  }
  refs.sort(compareRefs);
  const start = after === undefined ? 0 : refs.findIndex((ref) => compareRefs(ref, after) > 0);
  const chosen = start < 0 ? [] : refs.slice(start, start + limit);
  const views = new Map<string, Map<string, EffectView>>();
  for (const processId of new Set(chosen.map((ref) => ref.processId))) {
    views.set(processId, new Map((await sources.effectsOf(processId)).map((view) => [view.effectId, view])));
  }
  const items: UnknownEffectView[] = [];
  for (const ref of chosen) {
    const effect = views.get(ref.processId)?.get(ref.effectId);
    // Resolved between the index walk and the read: no longer Unknown, so not listed.
    if (effect === undefined || effect.status !== 'unknown') continue;
    items.push({ processId: ref.processId, rootId: ref.rootId, deployment: ref.deployment, effect });
  }
  const last = chosen.at(-1);
  const more = start >= 0 && start + limit < refs.length;
  return { items, nextCursor: more && last !== undefined ? encodeCursor(last) : null };
}

function compareRefs(a: Pick<UnknownRef, 'processId' | 'effectId'>, b: Pick<UnknownRef, 'processId' | 'effectId'>): number {
  if (a.processId !== b.processId) return a.processId < b.processId ? -1 : 1;
  if (a.effectId !== b.effectId) return a.effectId < b.effectId ? -1 : 1;
  return 0;
}

function encodeCursor(ref: UnknownRef): string {
  return Buffer.from(JSON.stringify([ref.processId, ref.effectId])).toString('base64url');
}

function decodeCursor(cursor: string): Pick<UnknownRef, 'processId' | 'effectId'> {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && value.every((part) => typeof part === 'string')) {
      return { processId: value[0] as string, effectId: value[1] as string };
    }
  } catch {
    // falls through to the refusal
  }
  throw invalidRequest('cursor is not a cursor of this list');
}
