// `npm run bench <suite>`: runs one named benchmark suite (or all) and prints its table.
const suites: Record<string, () => Promise<void>> = {
  engine: async () => {
    const { benchEngine } = await import('./bench/engine.js');
    await benchEngine();
  },
  kernel: async () => {
    const { benchPayload } = await import('./bench/kernel-payload.js');
    const { benchSnapshot } = await import('./bench/kernel-snapshot.js');
    await benchPayload();
    await benchSnapshot();
  },
  redis: async () => {
    const { benchRedis } = await import('./bench/redis.js');
    await benchRedis();
  },
  'redis-wait': async () => {
    const { benchRedisWait } = await import('./bench/redis-wait.js');
    await benchRedisWait();
  },
  http: async () => {
    const { benchHttp } = await import('./bench/http.js');
    await benchHttp();
  },
  transport: async () => {
    const { benchTransport } = await import('./bench/transport.js');
    await benchTransport();
  },
  tree: async () => {
    const { benchTree } = await import('./bench/tree.js');
    await benchTree();
  },
  // Issue 12's scale figures, one part after another (`BENCH_SCALE_PARTS=sse,…` picks some).
  scale: async () => {
    const parts: Record<string, () => Promise<void>> = {
      sse: async () => {
        const { benchScaleSse } = await import('./bench/scale-sse.js');
        await benchScaleSse();
      },
      hibernation: async () => {
        const { benchScaleHibernation } = await import('./bench/scale-hibernation.js');
        await benchScaleHibernation();
      },
    };
    const chosen = process.env.BENCH_SCALE_PARTS?.split(',') ?? Object.keys(parts);
    for (const name of chosen) {
      const part = parts[name];
      if (part === undefined) throw new Error(`unknown scale part ${JSON.stringify(name)}; known: ${Object.keys(parts).join(', ')}`);
      await part();
    }
  },
  // Issue 13's acceptance: Scope vs the floor prototypes and Restate, one run (`-- --quick`: ≤ 2 min).
  compare: async () => {
    const { benchCompare } = await import('./bench/compare.js');
    await benchCompare();
  },
  inbox: async () => {
    const { benchInbox } = await import('./bench/inbox.js');
    await benchInbox();
  },
  // Issue 14: a 100-item workflow map in windows of 10, embedded and Redis.
  strategies: async () => {
    const { benchStrategies } = await import('./bench/strategies.js');
    await benchStrategies();
  },
  // Issue 13: accepting one signal with 0 / 1,000 / 4,000 retained inputs.
  signal: async () => {
    const { benchSignal } = await import('./bench/signal.js');
    await benchSignal();
  },
  // Issue 15: a 20-turn ReAct run against the scripted model server, embedded and Redis.
  agent: async () => {
    const { benchAgent } = await import('./bench/agent.js');
    await benchAgent();
  },
  // Issue 17: the console's load time with many processes present.
  console: async () => {
    const { benchConsole } = await import('./bench/console.js');
    await benchConsole();
  },
  supervisor: async () => {
    const { benchSupervisor } = await import('./bench/supervisor.js');
    await benchSupervisor();
  },
};

// Flags (`--quick`) belong to the suites, which read them from process.argv themselves.
const requested = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
// `compare` drives the shared harness outside the repo (and may install its peers): only when named.
const names = requested.length > 0 ? requested : Object.keys(suites).filter((name) => name !== 'compare');
for (const name of names) {
  const suite = suites[name];
  if (suite === undefined) {
    console.error(`unknown benchmark suite ${JSON.stringify(name)}; known: ${Object.keys(suites).join(', ')}`);
    process.exit(2);
  }
  console.log(`# bench ${name}`);
  await suite();
}
