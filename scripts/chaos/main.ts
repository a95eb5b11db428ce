/**
 * `npm run chaos [-- options]`: three API nodes, two workers and Redis (AOF everysec) as real
 * processes on loopback, a seeded mixed workload, SIGKILLs and restarts at seeded moments, then
 * the checks. Exits 1 on any violation. See `--help`.
 */
import { formatReport } from './report.js';
import { runChaos, type ChaosOptions } from './run.js';

const help = `usage: npm run chaos -- [options]

Runs 3 \`scope serve\` nodes (Redis mode, BullMQ transport), 2 \`scope worker\` processes and one
redis-server (appendonly yes, appendfsync everysec) on loopback; drives a seeded workload of
demo.approval (answered and noted by a client that retries each signal by its id), demo.echo,
demo.sleep (some canceled), demo.unreliable and demo.fanout through random nodes; SIGKILLs random
nodes and workers at seeded moments and restarts them; then checks that every acknowledged start and
signal is in its tree exactly once, no never-replay effect executed twice (claim-time counts in
Redis), no tree's log/head chain forked, every tree ended terminal or parked and restorable, and SSE
readers (resuming with Last-Event-ID across node deaths) saw every committed event once, in order.
Prints the counts and every violation; exits 1 on any.

options:
  --seed N               the PRNG seed (default: random; printed, so a run can be replayed)
  --kills N              kill events to cause (default 20)
  --concurrency N        trials at once (default 6)
  --max-trials N         at most this many trials (default 10000)
  --min-trials N         at least this many, even when the kills are done sooner (default 30)
  --gap-ms A-B           time between kills (default 400-2000)
  --down-ms A-B          time a killed member stays down (default 100-1500)
  --hibernate-ms N       nodes release parked trees idle this long (default 250; 0 = never)
  --operator-restore     the harness also restores, on a live node, each tree whose node died
  --no-operator-restore  rely on the nodes' automatic takeover alone (default)
  --help                 this text

The long run (the acceptance figure, >= 200 kill events):
  npm run chaos -- --kills 200 --seed 1
`;

function range(text: string | undefined): readonly [number, number] | undefined {
  const match = /^(\d+)-(\d+)$/.exec(text ?? '');
  if (match === null) return undefined;
  const low = Number(match[1]);
  const high = Number(match[2]);
  return low <= high ? [low, high] : undefined;
}

function parse(argv: readonly string[]): ChaosOptions | 'help' {
  let options: ChaosOptions = {
    seed: Math.floor(Math.random() * 2 ** 31),
    kills: 20,
    concurrency: 6,
    maxTrials: 10_000,
    minTrials: 30,
    recovery: 'automatic',
    gapMs: [400, 2_000],
    downMs: [100, 1_500],
  };
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index];
    const value = argv[index + 1];
    const number = Number(value);
    const count = Number.isSafeInteger(number) && number >= 0 ? number : undefined;
    if (flag === '--help' || flag === '-h') return 'help';
    if (flag === '--operator-restore') options = { ...options, recovery: 'operator-restore' };
    else if (flag === '--no-operator-restore') options = { ...options, recovery: 'automatic' };
    else {
      index += 1;
      if (flag === '--seed' && count !== undefined) options = { ...options, seed: count };
      else if (flag === '--kills' && count !== undefined) options = { ...options, kills: count };
      else if (flag === '--concurrency' && count !== undefined && count > 0) options = { ...options, concurrency: count };
      else if (flag === '--max-trials' && count !== undefined && count > 0) options = { ...options, maxTrials: count };
      else if (flag === '--min-trials' && count !== undefined) options = { ...options, minTrials: count };
      else if (flag === '--gap-ms' && range(value) !== undefined) options = { ...options, gapMs: range(value) as [number, number] };
      else if (flag === '--down-ms' && range(value) !== undefined) options = { ...options, downMs: range(value) as [number, number] };
      else if (flag === '--hibernate-ms' && count !== undefined) options = { ...options, hibernateMs: count };
      else throw new Error(`bad option ${flag} ${value ?? ''}\n\n${help}`);
    }
  }
  return options;
}

let options: ChaosOptions | 'help';
try {
  options = parse(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`${(error as Error).message}`);
  process.exit(2);
}
if (options === 'help') {
  process.stdout.write(help);
  process.exit(0);
}
console.log(`chaos: seed ${options.seed}, ${options.kills} kills, recovery ${options.recovery} (replay: npm run chaos -- --seed ${options.seed} --kills ${options.kills})`);
const report = await runChaos({ ...options, progress: (line) => console.log(line) });
console.log(formatReport(report));
process.exit(report.violations.length > 0 ? 1 : 0);
