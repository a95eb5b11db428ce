import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Budget } from '../../src/kernel/budget.js';
import type { DeltaEmitter, Dispatcher, ReplayPolicy } from '../../src/kernel/definition.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import type { Effect, EffectRequest } from '../../src/kernel/effect.js';
import { Engine } from '../../src/kernel/engine.js';
import { Payload } from '../../src/kernel/payload.js';
import { Quota } from '../../src/kernel/quota.js';
import { Settlement } from '../../src/kernel/settlement.js';
import type { TreeCommitter } from '../../src/kernel/tree-committer.js';
import { researchSearchDispatcher } from '../../src/server/dispatchers/research-search.js';
import { researchTools } from '../../src/server/examples/interaction.js';
import { ModelDispatcher } from '../../src/server/model/model-dispatcher.js';
import { ScriptedModelServer } from '../../src/server/model/scripted-model-server.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { define } from '../../strategies/interaction/definition.js';
import { encodeModelReply } from '../../strategies/interaction/model-wire.js';
import { startRedisServer } from '../../test/helpers/redis-server.js';
import { killedOnExit } from './scope-serve.js';
import { CountingCommitter } from './counting-committer.js';

/**
 * The interaction strategy's cost per turn (issue 15): a 20-turn ReAct run — 19 turns that each call
 * the `search` tool (a child Process of the research ToolSet) and a final answer — against the
 * scripted OpenAI-compatible model server (`scope model-server`, in a process of its own as a model API
 * would be; `BENCH_AGENT_MODEL_INPROCESS=1` runs it in the bench's process) over real HTTP, every model
 * reply delayed by 50 ms, through the real model dispatcher (the official openai client, streaming).
 * Embedded (memory committer) and Redis (a private redis-server, appendonly no). Per turn: wall time,
 * the model wait (time inside the model dispatcher: the 50 ms delay plus HTTP and stream parsing),
 * Scope's overhead (the rest: steps, commits, the tool child, the search), and commits (every
 * activation, Effect boundary and checkpoint the committer acknowledged, the tool children's included).
 * Beside them, the process CPU of the median run per turn, split into Scope's and the model
 * dispatcher's (the openai client, undici and stream parsing; the busy wait on `paused`): CPU counts
 * every thread of the process, and no idle wait. `BENCH_AGENT_RUNS` (default 3) runs per committer
 * after a warm-up; the median run is shown; `BENCH_AGENT_TURNS` (default 20) sets the turns per run (a
 * longer run shows how a turn's cost grows with the context); `BENCH_AGENT_COMMITTERS` (default
 * `embedded,instant,paused,redis`) picks the lines (e.g. `embedded` alone under `--cpu-prof`). Goal:
 * embedded overhead < 5% of the 50 ms call.
 *
 * A service runs thousands of turns, so its code is optimised by the JIT; a fresh process is not. The
 * `embedded (cold)` line is measured first, after one warm-up run; then `BENCH_AGENT_WARMUP` (default 40)
 * in-process runs (the `instant` agent: the same Engine, strategy and commit code, no HTTP wait, about
 * 2 s) bring the process to that steady state, and every later line is measured in it.
 *
 * A third line, `instant`, runs the same agent embedded with a model dispatcher that answers from the
 * script in-process at once (no HTTP, no delay): the whole run is Scope's work, so it shows the hot
 * per-turn cost apart from what a 50 ms idle wait adds to the work that follows it (caches and branch
 * predictors gone cold, the VM's CPU parked), which no change to Scope removes.
 *
 * A fourth, `paused`, is `instant` whose model call busy-waits 50 ms (counted as model wait) touching no
 * memory and allocating nothing (`busyWait`): no sleep, no HTTP, no client. What it adds over `instant` is
 * what 50 ms of wall time between turns costs the work after it on this machine (presumably caches the
 * host's other work reclaims meanwhile); when `paused` is close to `embedded`, the model client and HTTP
 * are not where the embedded overhead goes. `BENCH_AGENT_PAUSE_MS` sets the wait, to see how the
 * overhead grows with it. (Until 2026-12-07 the wait read the clock in a tight loop, and every read
 * allocated: 16 MB of garbage and a scavenge per turn, which this line then counted.)
 */

/** Turns per run (default 20, the issue's): more turns show how a turn's cost grows with the context. */
const turns = Number(process.env.BENCH_AGENT_TURNS ?? 20);
if (!Number.isSafeInteger(turns) || turns < 2 || turns > 1000) throw new Error(`BENCH_AGENT_TURNS must be an integer in 2..1000, not ${process.env.BENCH_AGENT_TURNS}`);
const modelDelayMs = 50;
const runs = Number(process.env.BENCH_AGENT_RUNS ?? 3);
const warmupRuns = Number(process.env.BENCH_AGENT_WARMUP ?? 40);
/** The `paused` line's busy wait (default the model's 50 ms): its overhead against the wait's length shows what the wait itself costs. */
const pauseMs = Number(process.env.BENCH_AGENT_PAUSE_MS ?? modelDelayMs);
const committerNames = new Set((process.env.BENCH_AGENT_COMMITTERS ?? 'embedded,instant,paused,redis').split(','));
const systemPrompt = 'bench.agent: search once per turn, then answer.';

const script = {
  conversations: [
    {
      name: 'bench',
      match: 'bench.agent',
      replies: [
        ...Array.from({ length: turns - 1 }, (_, index) => ({
          toolCalls: [{ id: `call_${index}`, name: 'search', arguments: '{"query":"durable execution"}' }],
          finishReason: 'tool_calls',
          delayMs: modelDelayMs,
        })),
        { content: 'Done: durable execution, as found.', finishReason: 'stop', delayMs: modelDelayMs },
      ],
    },
  ],
};

/** Measures the time spent inside the model dispatcher, and the process CPU used meanwhile (the model client's). */
class TimedModel implements Dispatcher {
  waitMs = 0;
  cpuMs = 0;
  calls = 0;
  constructor(private readonly inner: Dispatcher) {}
  async dispatch(request: EffectRequest, emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
    const started = performance.now();
    const cpu = process.cpuUsage();
    try {
      return await this.inner.dispatch(request, emit, signal);
    } finally {
      this.cpuMs += cpuMsSince(cpu);
      this.waitMs += performance.now() - started;
      this.calls += 1;
    }
  }
  replayPolicy(effect: Effect): ReplayPolicy {
    return this.inner.replayPolicy(effect);
  }
}

/**
 * Spins until `ms` have passed since `started` without sleeping and without allocating: the clock
 * (whose every read allocates a heap number, 16 MB of garbage in 50 ms) is read only between runs of
 * small-integer arithmetic.
 */
function busyWait(started: number, ms: number): number {
  let sum = 0;
  do {
    for (let index = 0; index < 100_000; index += 1) sum = (sum + index) | 0;
  } while (performance.now() - started < ms);
  return sum;
}

/** Answers each model call from the script in-process: at once (`instant`), or after a busy wait of `pauseMs` (`paused`). */
class InstantModel implements Dispatcher {
  waitMs = 0;
  cpuMs = 0;
  calls = 0;
  constructor(private readonly pauseMs = 0) {}
  /** Keeps the busy wait's arithmetic observable, so it is not optimised away. */
  spin = 0;
  async dispatch(): Promise<Settlement> {
    if (this.pauseMs > 0) {
      const started = performance.now();
      const cpu = process.cpuUsage();
      this.spin ^= busyWait(started, this.pauseMs);
      this.cpuMs += cpuMsSince(cpu);
      this.waitMs += performance.now() - started;
    }
    const reply = script.conversations[0]?.replies[this.calls] as (typeof script.conversations)[0]['replies'][number] | undefined;
    this.calls += 1;
    if (reply === undefined) return Settlement.of('failed', Payload.encode({ code: 'bench.script_exhausted' }));
    const calls = 'toolCalls' in reply ? reply.toolCalls : [];
    return Settlement.of(
      'succeeded',
      encodeModelReply({ message: { content: 'content' in reply ? reply.content : null, toolCalls: calls }, finishReason: reply.finishReason, usage: null, model: 'instant' }),
    );
  }
  replayPolicy(): ReplayPolicy {
    return 'same_identity';
  }
}

/** Process CPU (every thread: the JS thread, GC helpers, libuv) since `start`, in ms. */
function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

interface Run {
  readonly ms: number;
  readonly modelMs: number;
  /** Process CPU during the run, and the part of it spent while the model dispatcher ran. */
  readonly cpuMs: number;
  readonly modelCpuMs: number;
  readonly commits: number;
}

const digests = (name: string) => ({ implementationDigest: Digest.of(`bench:${name}`), configurationDigest: Digest.of(`bench:${name}`) });

/** The model a run calls: the scripted server at `baseUrl`, or in-process after `pauseMs` of busy wait. */
type ModelSource = { readonly baseUrl: string } | { readonly pauseMs: number };

const atOnce: ModelSource = { pauseMs: 0 };

async function runOnce(source: ModelSource, committer: TreeCommitter): Promise<Run> {
  const model = 'baseUrl' in source ? new TimedModel(new ModelDispatcher({ baseUrl: source.baseUrl, model: 'scripted', apiKeyEnv: null })) : new InstantModel(source.pauseMs);
  const tools = Deployment.create({ definition: researchTools.definition, dispatcher: researchSearchDispatcher(), ...digests('tools') });
  const agent = Deployment.create({
    definition: define({
      name: 'bench.agent',
      description: 'A 20-turn ReAct run.',
      system: systemPrompt,
      tools: { deployment: tools, specs: researchTools.specs, budget: Budget.of({ steps: Quota.of(8), effects: Quota.of(4), signals: Quota.of(16) }) },
      maxTurns: turns,
      maxToolConcurrency: 2,
      maxContextBytes: 1024 * 1024,
    }),
    dispatcher: model,
    ...digests('agent'),
  });
  const counting = new CountingCommitter(committer);
  const engine = new Engine({ committer: counting });
  const started = performance.now();
  const cpu = process.cpuUsage();
  const result = await engine.run(agent, Payload.encode({ task: 'Research durable execution.' }));
  const ms = performance.now() - started;
  const cpuMs = cpuMsSince(cpu);
  await engine.close();
  if (result.status !== 'completed' || model.calls !== turns) throw new Error(`the bench agent did not complete its ${turns} turns: ${result.termination.json()} after ${model.calls} model calls`);
  return { ms, modelMs: model.waitMs, cpuMs, modelCpuMs: model.cpuMs, commits: counting.commits };
}

async function measure(label: string, source: ModelSource, make: (run: number) => TreeCommitter): Promise<void> {
  await runOnce(source, make(-1)); // warm-up
  const samples: Run[] = [];
  for (let run = 0; run < runs; run += 1) samples.push(await runOnce(source, make(run)));
  const sorted = [...samples].sort((a, b) => a.ms - b.ms);
  const median = sorted[Math.floor(sorted.length / 2)] as Run;
  const perTurn = median.ms / turns;
  const model = median.modelMs / turns;
  const overhead = perTurn - model;
  console.log(
    `${label.padEnd(15)} ${perTurn.toFixed(1).padStart(6)} ms/turn = model wait ${model.toFixed(1).padStart(5)} ms + Scope ${overhead.toFixed(2).padStart(5)} ms ` +
      `(${((overhead / modelDelayMs) * 100).toFixed(1)}% of the ${modelDelayMs} ms call)  ${(median.commits / turns).toFixed(1)} commits/turn  ` +
      `CPU: Scope ${((median.cpuMs - median.modelCpuMs) / turns).toFixed(2)} ms/turn, model dispatcher ${(median.modelCpuMs / turns).toFixed(2)} ms/call  ` +
      `(runs ${sorted.map((sample) => sample.ms.toFixed(0)).join(', ')} ms)`,
  );
}

/** The scripted model server in a process of its own, as a model API would be: its work is not Scope's. */
async function modelServerProcess(): Promise<{ readonly baseUrl: string; close(): Promise<void> }> {
  const directory = mkdtempSync(join(tmpdir(), 'bench-agent-'));
  const file = join(directory, 'script.json');
  writeFileSync(file, JSON.stringify(script));
  const child = spawn(process.execPath, ['bin/scope.js', 'model-server', '--port', '0', '--script', file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  killedOnExit(child);
  let output = '';
  const baseUrl = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const found = /SCOPE_MODEL_BASE_URL=(\S+)/.exec(output)?.[1];
      if (found !== undefined) resolve(found);
    });
    void exited.then(([code]) => reject(new Error(`scope model-server exited (${String(code)}): ${output}`)));
  });
  return {
    baseUrl,
    async close() {
      child.kill('SIGTERM');
      await exited;
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

export async function benchAgent(): Promise<void> {
  console.log(
    `## interaction: a ${turns}-turn ReAct run (${turns - 1} search tool children + the answer), scripted model server, ${modelDelayMs} ms per reply (median of ${runs}; after \`embedded (cold)\`, ${warmupRuns} in-process warm-up runs)`,
  );
  const server = process.env.BENCH_AGENT_MODEL_INPROCESS === '1' ? await ScriptedModelServer.start({ script: script as never }) : await modelServerProcess();
  const redisServer = await startRedisServer({ appendOnly: false });
  const redis = new Redis(redisServer.port, '127.0.0.1');
  const committers: RedisTreeCommitter[] = [];
  try {
    const remote: ModelSource = { baseUrl: server.baseUrl };
    if (committerNames.has('embedded')) await measure('embedded (cold)', remote, () => new MemoryTreeCommitter());
    for (let run = 0; run < warmupRuns; run += 1) await runOnce(atOnce, new MemoryTreeCommitter());
    if (committerNames.has('embedded')) await measure('embedded', remote, () => new MemoryTreeCommitter());
    if (committerNames.has('instant')) await measure('instant', atOnce, () => new MemoryTreeCommitter());
    if (committerNames.has('paused')) await measure('paused', { pauseMs }, () => new MemoryTreeCommitter());
    if (committerNames.has('redis')) await measure('redis', remote, (run) => {
      const committer = new RedisTreeCommitter({ redis, keyPrefix: `benchagent${process.pid}r${run + 1}`, timeoutMs: 30_000 });
      committers.push(committer);
      return committer;
    });
  } finally {
    for (const committer of committers) await committer.close();
    redis.disconnect();
    await redisServer.stop();
    await server.close();
  }
}
