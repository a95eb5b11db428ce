/**
 * The seeded CI version of `npm run fuzz`: 1,000 cases against a real `scope serve` in each mode
 * (embedded, and Redis mode over a private redis-server), run side by side. Any violation fails:
 * a 5xx other than load shedding, a crash, an error that is not a catalogued problem+json, an
 * error logged by the server, an RSS over 1 GiB, an acknowledged write missing afterwards or a tree
 * that does not restore. The report names the seed and the smallest failing request to replay.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatReport } from '../../scripts/fuzz/report.js';
import { runFuzz } from '../../scripts/fuzz/run.js';

const seed = 20_260_101;
const count = 1_000;

test(`fuzz: ${count} seeded hostile cases per mode leave no violation (seed ${seed})`, async () => {
  const reports = await Promise.all([runFuzz({ mode: 'embedded', seed, count }), runFuzz({ mode: 'redis', seed, count })]);
  for (const report of reports) {
    const text = formatReport(report);
    console.log(text);
    assert.ok(report.requests >= count, `${report.mode}: ${report.requests} requests sent`);
    assert.ok(report.verification !== undefined && report.verification.roots > 0, `${report.mode}: the trees were read back`);
    assert.deepEqual(report.violations, [], text);
  }
});
