/**
 * The short CI version of `npm run chaos`: a fixed seed, about 20 kill events of API nodes and
 * workers (real processes on loopback, Redis with AOF everysec), then every end check. Any
 * violation fails the test with the report that names it. The long run (>= 200 kills) is a
 * documented command: `npm run chaos -- --kills 200 --seed 1`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatReport } from '../../scripts/chaos/report.js';
import { runChaos } from '../../scripts/chaos/run.js';

const seed = 20_261_201;
const kills = 20;

test(`chaos: ${kills} seeded kills of nodes and workers leave no violation (seed ${seed})`, { timeout: 10 * 60_000 }, async () => {
  const report = await runChaos({
    seed,
    kills,
    concurrency: 6,
    // The kills pace the run (each waits for the restart of the one before): trials only bound it.
    maxTrials: 3_000,
    minTrials: 20,
    // Nobody restores anything: the nodes take a dead node's trees over themselves.
    recovery: 'automatic',
    gapMs: [300, 1_200],
    downMs: [100, 1_000],
    // CI runs another test file beside this one: a restart (tsx compiles ~4 s of CPU at start) took
    // up to 43 s there, so readiness gets more room than the long run's 60 s.
    startTimeoutMs: 150_000,
  });
  const text = formatReport(report);
  console.log(text);
  assert.equal(report.kills, kills, 'every scheduled kill happened');
  assert.ok(report.acknowledgedStarts >= 20 && report.acknowledgedSignals > 0, 'the workload was acknowledged starts and signals');
  assert.ok(report.readers > 0, 'SSE readers followed trees');
  assert.deepEqual(report.violations, [], text);
});
