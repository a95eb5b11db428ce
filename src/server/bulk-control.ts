import { invalidRequest } from '../errors.js';
import { bulkMaxTrees, type BulkControlOutcome, type BulkControlRequest, type ControlAction, type Page, type ProcessListQuery, type ProcessSummary, type TreeControlOutcome } from './host.js';

/**
 * `POST /v1/processes:bulk`: one control applied to every root process a filter of the process list
 * matches, tree by tree (each tree is controlled as `POST /v1/trees/{rootId}/…` would: one commit per
 * tree). A call covers at most {@link bulkMaxTrees} roots of the list; `truncated` and `nextCursor` say
 * where the next call continues. A dry run reads the same part of the list and changes nothing, so its
 * `matched` is what a real run with the same filter and cursor acts on.
 */
export { bulkMaxTrees };

/** Trees controlled at once within one call (each is its own commit on its own tree). */
const concurrency = 8;

export interface BulkControlPorts {
  readonly list: (query: ProcessListQuery) => Promise<Page<ProcessSummary>>;
  readonly control: (rootId: string, action: ControlAction, reason: string | undefined) => Promise<TreeControlOutcome>;
  /** Told about a failure that carries no problem code (it is reported as `internal_error`). */
  readonly unexpected?: (rootId: string, error: unknown) => void;
}

export async function bulkControl(ports: BulkControlPorts, request: BulkControlRequest): Promise<BulkControlOutcome> {
  const limit = request.limit ?? bulkMaxTrees;
  if (!Number.isInteger(limit) || limit < 1 || limit > bulkMaxTrees) throw invalidRequest(`limit must be an integer in 1..${bulkMaxTrees}`);
  const from = instant(request.filter.startedFrom, 'filter.startedFrom');
  const before = instant(request.filter.startedBefore, 'filter.startedBefore');
  const page = await ports.list({
    status: request.filter.status,
    deployment: request.filter.deployment,
    limit,
    cursor: request.cursor,
    tenant: request.tenant,
    hasUnknown: request.filter.hasUnknown,
    hasOpenGate: request.filter.hasOpenGate,
  });
  const matched = page.items.filter((item) => {
    const started = Date.parse(item.startedAt);
    return (from === undefined || started >= from) && (before === undefined || started < before);
  });
  const dryRun = request.dryRun === true;
  const outcome = { affected: 0, processesAffected: 0, skipped: 0, failed: [] as { rootId: string; code: string; message: string }[] };
  if (!dryRun) {
    const queue = [...matched];
    const worker = async (): Promise<void> => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
        const rootId = item.processId;
        try {
          const { affected } = await ports.control(rootId, request.action, request.reason);
          if (affected > 0) {
            outcome.affected += 1;
            outcome.processesAffected += affected;
          } else {
            outcome.skipped += 1;
          }
        } catch (error) {
          const code = codeOf(error);
          if (code === undefined) ports.unexpected?.(rootId, error);
          outcome.failed.push({ rootId, code: code ?? 'internal_error', message: code === undefined ? 'the control failed unexpectedly' : messageOf(error) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, matched.length) }, worker));
  }
  return {
    action: request.action,
    dryRun,
    matched: matched.length,
    ...outcome,
    truncated: page.nextCursor !== null,
    nextCursor: page.nextCursor,
  };
}

function instant(text: string | undefined, name: string): number | undefined {
  if (text === undefined) return undefined;
  const value = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(text) || Number.isNaN(value)) throw invalidRequest(`${name} must be an RFC 3339 date-time`);
  return value;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[a-z][a-z0-9_.]*$/.test(code) ? code : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message.slice(0, 1024) : String(error).slice(0, 1024);
}
