import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compareVariants, type VariantRow } from './compare-variants.js';

/**
 * Issue 13's acceptance in one run: Scope's demo.echo over HTTP beside the floor prototypes and Restate,
 * through the shared harness (`../shared/bench`, or BENCH_SHARED): `floor/floor.sh` (Scope embedded, Redis
 * AOF off and `appendfsync always`, interleaved with the floor servers) at 1 client, then
 * `peers/compare_echo.sh` with DURABLE=1 (Scope on both Redis modes vs Restate, 1 and 20 clients). The ratios
 * the acceptance names are printed last. `--quick` (or BENCH_COMPARE_QUICK=1) shrinks every phase so that
 * the whole run stays under two minutes; BENCH_COMPARE_RESTATE=0 skips Restate; BENCH_COMPARE_TOTAL sets the
 * processes per floor round (default 600, after a third as many to warm up); BENCH_SCOPE_CHECKOUT measures
 * another checkout (with its own node_modules) through the same harness, for before/after figures.
 * Then this checkout's variants (compare-variants.ts): the Effects on a `scope worker` (BullMQ) and bearer
 * auth on, each beside plain Redis mode. Compare ratios within one run only: the machine is shared.
 */

const root = resolve(import.meta.dirname, '../..');
const shared = resolve(process.env.BENCH_SHARED ?? join(root, '../shared/bench'));
/** The Scope checkout under test (this one unless BENCH_SCOPE_CHECKOUT names another). */
const scope = resolve(process.env.BENCH_SCOPE_CHECKOUT ?? root);

interface FloorRow {
  readonly label: string;
  readonly cpuMsPerProcess: number;
  readonly p50: number;
  readonly p99: number;
  readonly perSecond: number;
  readonly failures: number;
}

interface PeerSystem {
  readonly seq: { readonly p50_ms: number; readonly p99_ms: number; readonly ops_per_s: number };
  readonly conc: { readonly p50_ms: number; readonly ops_per_s: number; readonly concurrency: number };
  readonly cpu_per_call?: { readonly conc?: { readonly total_ms: number } };
}

/** Runs a harness script, stderr passed through (its progress), stdout collected and echoed. */
function runScript(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      process.stderr.write(chunk);
    });
    child.once('error', reject);
    child.once('close', (code) => resolveRun({ code: code ?? 1, stdout }));
  });
}

/** floor.sh prints `<label> cpu_ms_per_process=<ms> <load.mjs JSON>` per run; rounds of one label are averaged. */
function parseFloor(stdout: string): Map<string, FloorRow> {
  const samples = new Map<string, FloorRow[]>();
  for (const line of stdout.split('\n')) {
    const match = /^(\S+) cpu_ms_per_process=([\d.]+) (\{.*\})$/.exec(line.trim());
    if (match === null) continue;
    const load = JSON.parse(match[3] as string) as { p50: number; p99: number; perSecond: number; failures: number };
    const row: FloorRow = { label: match[1] as string, cpuMsPerProcess: Number(match[2]), p50: load.p50, p99: load.p99, perSecond: load.perSecond, failures: load.failures };
    samples.set(row.label, [...(samples.get(row.label) ?? []), row]);
  }
  const mean = (rows: readonly FloorRow[], pick: (row: FloorRow) => number) => rows.reduce((sum, row) => sum + pick(row), 0) / rows.length;
  return new Map([...samples].map(([label, rows]) => [label, {
    label,
    cpuMsPerProcess: mean(rows, (row) => row.cpuMsPerProcess),
    p50: mean(rows, (row) => row.p50),
    p99: mean(rows, (row) => row.p99),
    perSecond: mean(rows, (row) => row.perSecond),
    failures: rows.reduce((sum, row) => sum + row.failures, 0),
  }]));
}

const fixed = (value: number, digits = 2) => value.toFixed(digits);

/** One acceptance line: the measured ratio, the bound, and whether it holds. */
function verdict(name: string, ratio: number, bound: number, atMost: boolean): string {
  const met = atMost ? ratio <= bound : ratio >= bound;
  return `${name.padEnd(58)} ${fixed(ratio, 3).padStart(7)}  (${atMost ? '≤' : '≥'} ${bound})  ${met ? 'met' : 'NOT met'}`;
}

export async function benchCompare(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const quick = argv.includes('--quick') || process.env.BENCH_COMPARE_QUICK === '1';
  const withRestate = process.env.BENCH_COMPARE_RESTATE !== '0';
  if (!existsSync(join(shared, 'floor/floor.sh'))) throw new Error(`the shared harness is not at ${shared} (set BENCH_SHARED)`);
  const started = Date.now();

  // Phase 1: 1 client, interleaved rounds, server CPU from /proc.
  // BENCH_COMPARE_TOTAL: processes per round (a third as many again warm each server up first). The
  // default 600 keeps figures comparable across sessions; with 3000 the figure is a long-running
  // server's steady state rather than partly JIT warm-up, which weighs more on Scope's larger code.
  const [total, rounds] = quick ? ['150', '1'] : [process.env.BENCH_COMPARE_TOTAL ?? '600', '2'];
  console.error(`== floor.sh ${scope} 1 ${total} ${rounds}`);
  const floorRun = await runScript('bash', [join(shared, 'floor/floor.sh'), scope, '1', total, rounds], {});
  const floor = parseFloor(floorRun.stdout);

  // Phase 2: Scope (AOF off, appendfsync always) vs Restate, 1 and 20 clients.
  let peers: { systems: Record<string, PeerSystem> } | undefined;
  let peersNote = 'skipped (BENCH_COMPARE_RESTATE=0)';
  if (withRestate) {
    const out = await mkdtemp(join(tmpdir(), 'scope-bench-compare-'));
    const knobs = quick
      ? { BLOCKS: '2', BLOCK_N: '30', WARM_N: '30', CONC_WARM_N: '100', CONC_N: '400', CONC_PARTS: '2', IDLE_S: '1' }
      : {};
    console.error(`== peers/compare_echo.sh ${scope} (DURABLE=1, results in ${out})`);
    const peerRun = await runScript('bash', [join(shared, 'peers/compare_echo.sh'), scope], { DURABLE: '1', BENCH_OUT: out, ...knobs });
    const file = join(out, 'compare_echo.json');
    if (existsSync(file)) {
      peers = JSON.parse(readFileSync(file, 'utf8')) as { systems: Record<string, PeerSystem> };
      peersNote = peerRun.code === 0 ? file : `${file} (exit ${peerRun.code}: some calls failed)`;
    } else {
      peersNote = `failed (exit ${peerRun.code}; Restate could not be installed or started: see the output above)`;
    }
  }

  // Phase 3: this checkout's variants (Effects on a `scope worker`, bearer auth) against plain Redis mode.
  let variants: Map<string, VariantRow> | undefined;
  if (scope === root) {
    const [variantTotal, variantRounds] = quick ? [100, 1] : [400, 2];
    console.error(`== variants: ${variantTotal} processes × ${variantRounds} rounds each`);
    variants = await compareVariants(variantTotal, variantRounds);
  }

  console.log(`# bench compare${quick ? ' --quick' : ''}: demo.echo over HTTP, loopback, ${scope}, ${Math.round((Date.now() - started) / 1000)} s`);
  console.log('## 1 client, interleaved with the floor prototypes (floor.sh; server CPU from /proc)');
  console.log(`${'system'.padEnd(22)} ${'cpu ms/process'.padStart(15)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'per s'.padStart(8)} failures`);
  for (const row of floor.values()) {
    console.log(`${row.label.padEnd(22)} ${fixed(row.cpuMsPerProcess).padStart(15)} ${fixed(row.p50).padStart(8)} ${fixed(row.p99).padStart(8)} ${fixed(row.perSecond, 1).padStart(8)} ${row.failures}`);
  }
  console.log(`## vs Restate (compare_echo.sh DURABLE=1): ${peersNote}`);
  if (peers !== undefined) {
    console.log(`${'system'.padEnd(22)} ${'seq p50'.padStart(8)} ${'seq p99'.padStart(8)} ${'conc p50'.padStart(9)} ${'conc /s'.padStart(8)} cpu ms/call (conc)`);
    for (const [name, system] of Object.entries(peers.systems)) {
      const cpu = system.cpu_per_call?.conc?.total_ms;
      console.log(`${name.padEnd(22)} ${fixed(system.seq.p50_ms).padStart(8)} ${fixed(system.seq.p99_ms).padStart(8)} ${fixed(system.conc.p50_ms).padStart(9)} ${fixed(system.conc.ops_per_s, 0).padStart(8)} ${cpu === undefined ? '-' : fixed(cpu)}`);
    }
  }

  if (variants === undefined) {
    console.log('## variants: skipped (they run this checkout only, not BENCH_SCOPE_CHECKOUT)');
  } else {
    console.log('## variants, Redis AOF off, 1 client, interleaved (compare-variants.ts)');
    console.log(`${'system'.padEnd(22)} ${'cpu ms/process'.padStart(15)} ${'+ worker'.padStart(9)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'per s'.padStart(8)} failures`);
    for (const row of variants.values()) {
      const worker = row.workerCpuMs === undefined ? '-' : fixed(row.workerCpuMs);
      console.log(`${row.label.padEnd(22)} ${fixed(row.serverCpuMs).padStart(15)} ${worker.padStart(9)} ${fixed(row.p50).padStart(8)} ${fixed(row.p99).padStart(8)} ${fixed(row.perSecond, 1).padStart(8)} ${row.failures}`);
    }
    const plain = variants.get('scope-redis');
    for (const name of ['scope-redis-worker', 'scope-redis-auth']) {
      const row = variants.get(name);
      if (plain === undefined || row === undefined) continue;
      const cpu = (row.serverCpuMs + (row.workerCpuMs ?? 0)) / plain.serverCpuMs;
      console.log(`(info) ${name} / scope-redis: CPU/process ${fixed(cpu, 3)} (server${row.workerCpuMs === undefined ? '' : ' + worker'}), p50 ${fixed(row.p50 / plain.p50, 3)}`);
    }
  }

  // The acceptance ratios (issue 13), last.
  console.log('## ratios (issue 13 acceptance)');
  const ratio = (a: string, b: string, pick: (row: FloorRow) => number) => {
    const x = floor.get(a);
    const y = floor.get(b);
    return x === undefined || y === undefined ? undefined : pick(x) / pick(y);
  };
  const twoCommit = ratio('scope-redis', 'floor-redis', (row) => row.cpuMsPerProcess);
  if (twoCommit !== undefined) console.log(`${'(info) server CPU/process scope-redis / floor-redis (2 commits)'.padEnd(58)} ${fixed(twoCommit, 3).padStart(7)}`);
  const lines: Array<[string, number | undefined, number, boolean]> = [
    ['server CPU/process scope-redis / floor-redis4', ratio('scope-redis', 'floor-redis4', (row) => row.cpuMsPerProcess), 1.5, true],
    ['server CPU/process scope-redis-fsync / floor-redis4-fsync', ratio('scope-redis-fsync', 'floor-redis4-fsync', (row) => row.cpuMsPerProcess), 1.5, true],
    ['p50 1 client scope-redis / floor-redis4 (AOF off)', ratio('scope-redis', 'floor-redis4', (row) => row.p50), 1.3, true],
    ['p50 1 client scope-redis-fsync / floor-redis4-fsync', ratio('scope-redis-fsync', 'floor-redis4-fsync', (row) => row.p50), 1.5, true],
  ];
  const aof = peers?.systems.scope_aof;
  const restate = peers?.systems.restate;
  if (aof !== undefined && restate !== undefined) {
    lines.push(['p50 1 client scope_aof / restate (both durable)', aof.seq.p50_ms / restate.seq.p50_ms, 0.75, true]);
    lines.push([`throughput ${aof.conc.concurrency} clients scope_aof / restate`, aof.conc.ops_per_s / restate.conc.ops_per_s, 1.5, false]);
  }
  for (const [name, value, bound, atMost] of lines) {
    console.log(value === undefined || !Number.isFinite(value) ? `${name.padEnd(58)} not measured` : verdict(name, value, bound, atMost));
  }
}
