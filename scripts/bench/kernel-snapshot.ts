import { performance } from 'node:perf_hooks';
import { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { treeWithChildren } from '../../src/testing/snapshot-fixtures.js';
import { TreeLimits } from '../../src/kernel/tree-limits.js';

/**
 * TreeSnapshot benchmark: digest (cold: a fresh snapshot each time, so the cached digest does not
 * hide the hashing), parse (strict decode + all domain checks), canonical JSON access and create
 * (the per-commit cost: tree validation around cached process records, plus the digest), for trees
 * of 1, 100 and 1000 real Processes (a root with a breadth-first tree of completed children,
 * fanout 10, each child keeping 4 consumed inputs).
 */

const warmupMs = 200;
const measureMs = 1_000;

interface Measurement {
  readonly perOpMs: number;
  readonly ops: number;
}

function measure(run: () => unknown): Measurement {
  const warmupEnd = performance.now() + warmupMs;
  while (performance.now() < warmupEnd) run();
  let ops = 0;
  const start = performance.now();
  let now = start;
  while (now - start < measureMs) {
    run();
    ops += 1;
    now = performance.now();
  }
  return { perOpMs: (now - start) / ops, ops };
}

function format(m: Measurement): string {
  return `${m.perOpMs.toFixed(3).padStart(10)} ms/op (${m.ops} ops)`;
}

export async function benchSnapshot(): Promise<void> {
  const limits = TreeLimits.of({ maxActiveChildren: 1_000 });
  console.log('## kernel snapshot (trees of real child Processes: completed children, fanout 10, 4 consumed inputs each)');
  for (const size of [1, 100, 1_000]) {
    const tree = treeWithChildren({ processes: size, fanout: 10, childSignals: 4, treeLimits: limits });
    const text = tree.json();
    const parse = measure(() => TreeSnapshot.parse(text));
    // A fresh snapshot per run (withIncarnation keeps the processes' cached JSON), so the
    // digest is really computed: header + spliced canonical process bytes, then sha256.
    const digest = measure(() => tree.withIncarnation(tree.incarnationId).digest);
    const json = measure(() => tree.json());
    // What the Engine pays per commit: re-validating the tree around cached process records.
    const processes = tree.processSnapshots();
    const create = measure(() =>
      TreeSnapshot.create({ incarnationId: tree.incarnationId, treeLimits: tree.treeLimits, processes }).digest,
    );
    console.log(`processes=${String(size).padStart(5)} bytes=${String(tree.encodedSize).padStart(9)}`);
    console.log(`  parse  ${format(parse)}`);
    console.log(`  digest ${format(digest)}`);
    console.log(`  json   ${format(json)}`);
    console.log(`  create ${format(create)} (TreeSnapshot.create + digest from cached process records)`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchSnapshot();
}
