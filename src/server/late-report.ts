import { decodeInboxEntry } from '../transport/bullmq/job-data.js';
import type { Json, LateReportView } from './host.js';

/**
 * The report an effect's inbox holds (entries by attempt id): a definite one when any attempt left
 * one (a `never` effect has at most one attempt), else a worker's own doubt; undefined when there is
 * nothing readable.
 */
export function lateReportOf(inbox: Readonly<Record<string, string>>): LateReportView | undefined {
  let doubt: LateReportView | undefined;
  for (const attemptId of Object.keys(inbox).sort()) {
    let entry: ReturnType<typeof decodeInboxEntry>;
    try {
      entry = decodeInboxEntry(inbox[attemptId] as string);
    } catch {
      continue;
    }
    if (entry.outcome === 'unknown' || entry.settlement.status === 'unknown') {
      doubt ??= { attemptId, status: 'unknown', payload: entry.outcome === 'unknown' ? null : entry.settlement.payload.decode<Json>(), reason: entry.outcome === 'unknown' ? entry.reason : null };
      continue;
    }
    return { attemptId, status: entry.settlement.status, payload: entry.settlement.payload.decode<Json>(), reason: null };
  }
  return doubt;
}
