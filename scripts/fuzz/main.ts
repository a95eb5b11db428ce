/**
 * `npm run fuzz [-- --seed N --count M --mode embedded|redis|both --max-rss-mib B]`: hostile
 * requests against a real `scope serve`, in both modes by default, 10,000 cases each from a random
 * seed (printed, so a failure can be replayed). Exits 1 on any violation.
 */
import { formatReport } from './report.js';
import { runFuzz, type FuzzReport, type Mode } from './run.js';

function parse(argv: readonly string[]): { seed: number; count: number; modes: Mode[]; maxRssBytes: number } {
  const options = { seed: Math.floor(Math.random() * 2 ** 31), count: 10_000, modes: ['embedded', 'redis'] as Mode[], maxRssBytes: 1024 * 1024 * 1024 };
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index];
    const value = argv[index + 1];
    const number = Number(value);
    if (flag === '--seed' && Number.isSafeInteger(number)) options.seed = number;
    else if (flag === '--count' && Number.isSafeInteger(number) && number > 0) options.count = number;
    else if (flag === '--mode' && (value === 'embedded' || value === 'redis' || value === 'both')) options.modes = value === 'both' ? ['embedded', 'redis'] : [value];
    else if (flag === '--max-rss-mib' && number > 0) options.maxRssBytes = number * 1024 * 1024;
    else throw new Error(`usage: npm run fuzz -- [--seed N] [--count M] [--mode embedded|redis|both] [--max-rss-mib B] (bad ${flag} ${value ?? ''})`);
    index += 1;
  }
  return options;
}

const options = parse(process.argv.slice(2));
console.log(`fuzz: seed ${options.seed}, ${options.count} cases per mode, modes ${options.modes.join(', ')}`);
const reports: FuzzReport[] = [];
for (const mode of options.modes) {
  const report = await runFuzz({ mode, seed: options.seed, count: options.count, maxRssBytes: options.maxRssBytes, progress: (line) => console.log(line) });
  reports.push(report);
  console.log(formatReport(report));
}
const failed = reports.some((report) => report.violations.length > 0);
console.log(failed ? `fuzz: FAILED (seed ${options.seed})` : `fuzz: passed (seed ${options.seed})`);
process.exit(failed ? 1 : 0);
