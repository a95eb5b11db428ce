import type { ChaosReport } from './run.js';

/** The closing lines of a run: the counts, then every violation with its explanation. */
export function formatReport(report: ChaosReport): string {
  const lines = [
    `chaos: seed ${report.seed}, recovery ${report.recovery}`,
    `  trials ${report.trials}; kills ${report.kills} (${Object.entries(report.killsByMember).map(([member, count]) => `${member} ${count}`).join(', ')})`,
    `  acknowledged inputs ${report.acknowledgedStarts + report.acknowledgedSignals + report.acknowledgedCancels}: ` +
      `${report.acknowledgedStarts} starts, ${report.acknowledgedSignals} signals, ${report.acknowledgedCancels} cancels`,
    `  restarts: p50 ${report.restartMs.p50} ms, max ${report.restartMs.max} ms (spawn to ready)`,
    `  hibernation (nodes' counts since their last start): ${report.hibernation.hibernated} trees released, ${report.hibernation.woken} woken by a command`,
    `  trees ended: ${Object.entries(report.outcomes).map(([status, count]) => `${status} ${count}`).join(', ')}`,
    `  operator restores ${report.operatorRestores}; requests ${report.requests} (${report.retries} sent again); ` +
      `SSE readers ${report.readers} (${report.readerReconnects} reconnects)`,
    `  violations ${report.violations.length}; wall time ${(report.wallMs / 1000).toFixed(1)} s`,
    ...report.violations.map((violation) => `  VIOLATION: ${violation}`),
    report.violations.length === 0 ? `chaos: passed (seed ${report.seed})` : `chaos: FAILED (seed ${report.seed})`,
  ];
  return lines.join('\n');
}
