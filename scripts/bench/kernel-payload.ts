import { performance } from 'node:perf_hooks';
import { canonicalize, parseJson } from '../../src/kernel/canonical-json.js';
import { Payload } from '../../src/kernel/payload.js';

/**
 * Payload benchmark: canonical JSON against the engine's native JSON on one ~1 MB document, so a
 * regression in the hand-written tokenizer or writer shows up as a ratio, not a feeling.
 */

const targetBytes = 1_000_000;
const warmupMs = 300;
const measureMs = 2_000;
const batchMs = 100;

/** A small deterministic PRNG (mulberry32), so every run measures the same document. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const words = ['agent', 'step', 'signal', 'effect', 'runtime', 'commit', 'tree', 'snapshot', 'wait', 'budget'];
const phrases = [
  'plain text',
  'quoted "text" with a \\ backslash',
  'markup <b>bold</b> & more',
  'line one\nline two\ttabbed',
  'unicode é ü ß 漢字 😀',
  'path /var/lib/scope',
];

/** Builds a realistic event-log-like document of roughly `bytes` canonical bytes. */
export function buildDocument(bytes: number): unknown {
  const next = random(0x5c09e);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const records: unknown[] = [];
  let size = 2;
  for (let index = 0; size < bytes; index++) {
    const record = {
      id: `evt-${String(index).padStart(6, '0')}`,
      type: `${pick(words)}.${pick(words)}`,
      sequence: index,
      score: Math.round(next() * 1e6) / 1e6,
      ratio: next() * 1000 - 500,
      active: next() < 0.5,
      note: next() < 0.2 ? null : pick(phrases),
      tags: Array.from({ length: 1 + Math.floor(next() * 4) }, () => pick(words)),
      attributes: {
        region: pick(['eu-west-1', 'us-east-2', 'ap-south-1']),
        retries: Math.floor(next() * 5),
        limits: { steps: Math.floor(next() * 1000), effects: Math.floor(next() * 100), signals: null },
        history: Array.from({ length: Math.floor(next() * 4) }, (_, k) => ({ at: k * 1000, what: pick(phrases) })),
      },
    };
    size += JSON.stringify(record).length + 1;
    records.push(record);
  }
  return { version: 1, generator: 'scope bench', records };
}

interface Case {
  readonly name: string;
  readonly run: () => number;
  /** Milliseconds per operation of each measured batch. */
  readonly batches: number[];
  spent: number;
}

interface Measurement {
  readonly name: string;
  /** From the median batch. */
  readonly opsPerSecond: number;
  readonly megabytesPerSecond: number;
  /** Milliseconds per operation in the fastest batch: the figure least disturbed by other load. */
  readonly bestMsPerOp: number;
}

let sink = 0;

function runBatch(entry: Case, budgetMs: number): number {
  let iterations = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < budgetMs || iterations === 0) {
    sink += entry.run();
    iterations++;
    elapsed = performance.now() - start;
  }
  entry.spent += elapsed;
  return elapsed / iterations;
}

/**
 * Measures the cases in interleaved rounds of short batches until each has run for `measureMs`,
 * and reports the median batch, so that load from other processes on a shared machine skews every
 * case alike instead of whichever case happened to run during a spike.
 */
function measureAll(cases: ReadonlyArray<{ name: string; run: () => number }>, bytes: number): Measurement[] {
  const entries: Case[] = cases.map((entry) => ({ ...entry, batches: [], spent: 0 }));
  for (const entry of entries) runBatch(entry, warmupMs);
  for (const entry of entries) entry.spent = 0;
  while (entries.some((entry) => entry.spent < measureMs)) {
    for (const entry of entries) {
      if (entry.spent < measureMs) entry.batches.push(runBatch(entry, batchMs));
    }
  }
  return entries.map((entry) => {
    const sorted = [...entry.batches].sort((a, b) => a - b);
    const msPerOp = sorted[sorted.length >> 1]!;
    const opsPerSecond = 1000 / msPerOp;
    return { name: entry.name, opsPerSecond, megabytesPerSecond: (opsPerSecond * bytes) / 1e6, bestMsPerOp: sorted[0]! };
  });
}

/** Runs every case on one ~1 MB document and prints ops/s, MB/s (10^6 bytes) and the ratios. */
export async function benchPayload(): Promise<void> {
  const value = buildDocument(targetBytes);
  const text = JSON.stringify(value);
  const pretty = JSON.stringify(value, null, 2);
  const bytes = new TextEncoder().encode(text);
  const size = bytes.length;
  const canonical = canonicalize(text);
  if (canonicalize(pretty) !== canonical) throw new Error('bench document does not canonicalise stably');

  const results = measureAll(
    [
      { name: 'JSON.stringify(value)', run: () => JSON.stringify(value).length },
      { name: 'JSON.parse(text)', run: () => (JSON.parse(text) as { records: unknown[] }).records.length },
      { name: 'JSON.parse + JSON.stringify', run: () => JSON.stringify(JSON.parse(text)).length },
      { name: 'canonicalize(text)', run: () => canonicalize(text).length },
      { name: 'canonicalize(bytes)', run: () => canonicalize(bytes).length },
      { name: 'canonicalize(pretty text)', run: () => canonicalize(pretty).length },
      { name: 'canonicalize(canonical text)', run: () => canonicalize(canonical).length },
      { name: 'parseJson(text)', run: () => (parseJson(text).kind === 'object' ? 1 : 0) },
      { name: 'Payload.parse(text)', run: () => Payload.parse(text).size },
      { name: 'Payload.encode(value)', run: () => Payload.encode(value).size },
    ],
    size,
  );

  const width = Math.max(...results.map((result) => result.name.length));
  console.log(
    `payload benchmark: document of ${size} bytes (${(size / 1e6).toFixed(2)} MB), ` +
      `${measureMs} ms per case, median of interleaved ${batchMs} ms batches`,
  );
  console.log(
    `${'case'.padEnd(width)}  ${'ops/s'.padStart(9)}  ${'MB/s'.padStart(9)}  ${'ms/op'.padStart(8)}  ${'best ms/op'.padStart(10)}`,
  );
  for (const result of results) {
    console.log(
      `${result.name.padEnd(width)}  ${result.opsPerSecond.toFixed(1).padStart(9)}  ` +
        `${result.megabytesPerSecond.toFixed(1).padStart(9)}  ${(1000 / result.opsPerSecond).toFixed(3).padStart(8)}  ` +
        `${result.bestMsPerOp.toFixed(3).padStart(10)}`,
    );
  }
  const find = (name: string): Measurement => results.find((result) => result.name === name)!;
  const ratio = (slower: string, faster: string): string => {
    const median = find(faster).opsPerSecond / find(slower).opsPerSecond;
    const best = find(slower).bestMsPerOp / find(faster).bestMsPerOp;
    return `${median.toFixed(2)}x median, ${best.toFixed(2)}x best`;
  };
  const ratios: Array<[string, string]> = [
    ['canonicalize(text) / JSON.stringify', ratio('canonicalize(text)', 'JSON.stringify(value)')],
    ['canonicalize(bytes) / JSON.stringify', ratio('canonicalize(bytes)', 'JSON.stringify(value)')],
    ['canonicalize(text) / (JSON.parse + JSON.stringify)', ratio('canonicalize(text)', 'JSON.parse + JSON.stringify')],
    ['parseJson(text) / JSON.parse', ratio('parseJson(text)', 'JSON.parse(text)')],
    ['Payload.encode(value) / JSON.stringify', ratio('Payload.encode(value)', 'JSON.stringify(value)')],
  ];
  const label = Math.max(...ratios.map(([name]) => name.length));
  for (const [name, value] of ratios) console.log(`ratio ${name.padEnd(label)}  ${value}`);
  if (sink === -1) console.log('unreachable');
}
