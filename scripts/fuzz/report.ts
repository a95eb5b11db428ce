/** The run's figures and, on failure, what to replay: as text for a terminal or a CI log. */
import { mib, type FuzzReport } from './run.js';

export function formatReport(report: FuzzReport): string {
  const lines: string[] = [];
  const statuses = Object.entries(report.statuses)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, count]) => `${status}:${count}`)
    .join(' ');
  lines.push(
    `${report.mode}: seed ${report.seed}, ${report.cases} cases, ${report.requests} requests in ${(report.durationMs / 1000).toFixed(1)} s`,
    `  statuses ${statuses}`,
    ...Object.entries(report.byKind)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, counts]) => `    ${kind.padEnd(20)} ${Object.entries(counts).map(([status, count]) => `${status}:${count}`).join(' ')}`),
    `  acknowledged writes: ${report.acknowledged.starts} starts, ${report.acknowledged.signalBatches} signal batches`,
    `  max RSS ${mib(report.maxRssBytes)} MiB`,
    `  slow-loris sockets ${report.loris.opened} (${Object.entries(report.loris.outcomes).map(([key, count]) => `${key}:${count}`).join(' ') || 'none'})`,
  );
  if (report.verification !== undefined) {
    const v = report.verification;
    lines.push(`  read back: ${v.processes} acknowledged starts, ${v.roots} trees (${v.restored} restores), ${v.signals} acknowledged signals`);
  }
  if (report.violations.length === 0) {
    lines.push('  no violations');
    return lines.join('\n');
  }
  lines.push(`  ${report.violations.length} violation(s):`);
  for (const violation of report.violations.slice(0, 20)) lines.push(`    [${violation.rule}] ${violation.detail}`);
  if (report.failure !== undefined) {
    const failure = report.failure;
    lines.push(
      `  minimal failing case (seed ${failure.seed}${failure.path === undefined ? '' : `, path ${failure.path}`}):`,
      `    ${JSON.stringify(abridged(failure.counterexample))}`,
      '  its request(s):',
      ...failure.requests.map((request) => `    ${JSON.stringify(request)}`),
      `  replay: npm run fuzz -- --mode ${report.mode} --seed ${failure.seed} --count ${report.cases}`,
    );
  }
  return lines.join('\n');
}

/** A printable copy: strings over 300 characters cut, nesting below 12 levels and arrays past 20 items elided. */
function abridged(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.length > 300 ? `${value.slice(0, 300)}…(${value.length})` : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= 12) return '…';
  if (Array.isArray(value)) {
    const items = value.slice(0, 20).map((item) => abridged(item, depth + 1));
    return value.length > 20 ? [...items, `…(${value.length} items)`] : items;
  }
  return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, abridged(member, depth + 1)]));
}
