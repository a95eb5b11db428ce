/**
 * One chaos run: start the processes, run the workload while the fault schedule kills and restarts
 * nodes and workers, drain (every trial settled, every member up again, every reader caught up),
 * then check everything the run acknowledged against what Redis holds. Waits are on observable
 * conditions with deadlines; nothing sleeps a fixed time to let things settle.
 */
import { Redis } from 'ioredis';
import { checkAcknowledged, checkCancels, checkChain, checkExecutions, checkFinal, checkReader, type FinalState } from './checks.js';
import { Client } from './client.js';
import { Cluster, type MemberKind } from './cluster.js';
import { Faults } from './faults.js';
import { Ledger } from './ledger.js';
import { Owners } from './owners.js';
import { Prng } from './prng.js';
import type { RecoveryMode } from './recovery.js';
import { readStoredTree, type StoredTree } from './stored.js';
import { Workload } from './workload.js';

export interface ChaosOptions {
  readonly seed: number;
  /** Kill events to cause. */
  readonly kills: number;
  /** Trials run at once. */
  readonly concurrency: number;
  /** At most this many trials; at least `minTrials` even when the kills are done sooner. */
  readonly maxTrials: number;
  readonly minTrials: number;
  readonly recovery: RecoveryMode;
  readonly gapMs: readonly [number, number];
  readonly downMs: readonly [number, number];
  /** Nodes release parked trees idle this long (0: never); short, so wakes happen under the kills. */
  readonly hibernateMs?: number;
  /** How long a (re)started member may take to be ready (default the cluster's 60 s). */
  readonly startTimeoutMs?: number;
  readonly progress?: (line: string) => void;
}

export interface ChaosReport {
  readonly seed: number;
  readonly recovery: RecoveryMode;
  readonly trials: number;
  readonly kills: number;
  readonly killsByMember: Readonly<Record<string, number>>;
  readonly acknowledgedStarts: number;
  readonly acknowledgedSignals: number;
  readonly acknowledgedCancels: number;
  readonly operatorRestores: number;
  readonly requests: number;
  readonly retries: number;
  readonly readers: number;
  readonly readerReconnects: number;
  readonly outcomes: Readonly<Record<string, number>>;
  /** Restart times of killed members (spawn to ready), median and longest, ms. */
  readonly restartMs: { readonly p50: number; readonly max: number };
  /** Parked trees released and woken again, counted by the nodes since their last start. */
  readonly hibernation: { readonly hibernated: number; readonly woken: number };
  readonly violations: readonly string[];
  readonly wallMs: number;
}

const prefix = 'chaos';
/** Parked trees leave their node's memory a quarter second after their last activity: commands then wake them, kills or not. */
export const defaultHibernateMs = 250;
const terminal = new Set(['completed', 'failed', 'canceled', 'timed_out', 'killed']);

/** Short transport timings, so a dead worker's attempt turns Unknown (and a redelivery is refused) within a second or two. */
function environment(kind: MemberKind, hibernateMs: number): Record<string, string> {
  return {
    SCOPE_HIBERNATE_AFTER_MS: String(hibernateMs),
    SCOPE_KEY_PREFIX: prefix,
    // Workers announce readiness at info; nodes at warn (request logs would cost more than the run).
    SCOPE_LOG_LEVEL: kind === 'worker' ? 'info' : 'warn',
    SCOPE_TRANSPORT_LEASE_MS: '900',
    SCOPE_TRANSPORT_LOCK_MS: '1500',
    SCOPE_TRANSPORT_STALL_MS: '700',
    SCOPE_TRANSPORT_CLAIM_MS: '8000',
    SCOPE_TRANSPORT_DEADLINE_MS: '30000',
    SCOPE_SHUTDOWN_MS: '1000',
    SCOPE_EVENT_LOG_MAXLEN: '1000000',
    SCOPE_RATE_LIMIT: 'off',
    // Node leases (read once nodes own trees; ignored before): a dead node's trees are free within ~2 s.
    SCOPE_NODE_LEASE_MS: '1500',
    SCOPE_NODE_RENEW_MS: '400',
  };
}

function counterValue(metrics: string, name: string): number {
  const line = metrics.split('\n').find((entry) => entry.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1)) || 0;
}

async function until(what: string, deadlineMs: number, condition: () => boolean | Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const began = Date.now();
  const say = options.progress ?? (() => undefined);
  const root = new Prng(options.seed);
  const hibernateMs = options.hibernateMs ?? defaultHibernateMs;
  const cluster = await Cluster.start({
    nodes: 3,
    workers: 2,
    env: (kind) => environment(kind, hibernateMs),
    ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }),
  });
  say(`chaos: redis ${cluster.redis.url}, nodes ${cluster.nodes.map((node) => node.url).join(' ')}, 2 workers`);
  const redis = new Redis(cluster.redis.url, { maxRetriesPerRequest: null });
  const violations: string[] = [];
  try {
    const ledger = new Ledger();
    const owners = new Owners();
    const client = new Client(cluster, root.fork(1));
    const workload = new Workload(cluster, client, owners, ledger, {
      seed: options.seed,
      recovery: options.recovery,
      trialDeadlineMs: 120_000,
      streamShare: 0.5,
    });
    const faults = new Faults(cluster, root.fork(2), { kills: options.kills, gapMs: options.gapMs, downMs: options.downMs });
    const faulting = faults.run();

    // The operator's sweep: a tree whose owner died is restored on a live node (operator mode only).
    let sweeping = true;
    const sweep = (async () => {
      while (sweeping) {
        if (options.recovery === 'operator-restore') await Promise.all(owners.orphans(workload.open).map((rootId) => workload.recover(rootId)));
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();

    let trials = 0;
    const lanes = Array.from({ length: options.concurrency }, async () => {
      while (trials < options.maxTrials && (!faults.done || trials < options.minTrials)) {
        const index = trials;
        trials += 1;
        await workload.trial(index, root.fork(1_000 + index));
        if (trials % 10 === 0) say(`chaos: ${trials} trials, ${faults.kills.length} kills, ${ledger.acknowledged} acknowledged inputs`);
      }
    });
    await Promise.all(lanes);
    faults.stop();
    await faulting;
    violations.push(...ledger.problems, ...faults.problems);
    for (const member of cluster.members) if (!member.up) await cluster.restart(member);
    say(`chaos: workload done (${trials} trials, ${faults.kills.length} kills); draining`);

    // Drain: every reader at the end of its tree's log. (Trees are not restored here: a restore
    // commits new entries after a finished tree's stream ended; the parked ones are restored below.)
    const roots = [...new Set(ledger.starts.map((start) => start.rootId))];
    sweeping = false;
    await sweep;
    const trees = new Map<string, StoredTree>();
    const readAll = async () => {
      for (const rootId of roots) trees.set(rootId, await readStoredTree(redis, prefix, rootId));
    };
    await readAll();
    const lastCommitted = (rootId: string) => trees.get(rootId)?.entries.filter((entry) => entry.phase === 'committed').at(-1)?.id;
    const behind = () => workload.followers.filter((follower) => !follower.ended && follower.committedIds().at(-1) !== lastCommitted(follower.rootId));
    const caughtUp = await until('readers caught up', 30_000, async () => {
      for (const follower of behind()) trees.set(follower.rootId, await readStoredTree(redis, prefix, follower.rootId));
      return behind().length === 0;
    });
    if (!caughtUp) violations.push('the SSE readers did not catch up with the stored logs within 30 s of the drain');
    await Promise.all(workload.followers.map((follower) => follower.stop()));
    await readAll();

    // The tree's end state: terminal, or parked and restorable.
    const states: FinalState[] = [];
    const outcomes: Record<string, number> = {};
    for (const rootId of roots) {
      const state = await finalState(client, options.recovery, rootId);
      states.push(state);
      outcomes[state.status] = (outcomes[state.status] ?? 0) + 1;
    }
    violations.push(...checkAcknowledged(ledger, trees), ...checkExecutions(ledger, trees));
    for (const tree of trees.values()) violations.push(...checkChain(tree));
    violations.push(...checkFinal(states), ...checkCancels(ledger, states));
    for (const follower of workload.followers) {
      const ids = follower.messages.flatMap((message) => (message.id === undefined || message.id === '' ? [] : [message.id]));
      violations.push(...checkReader({ rootId: follower.rootId, ids, committedIds: follower.committedIds(), ended: follower.ended }, trees.get(follower.rootId)));
    }

    // What hibernation did, as the nodes count it since their last start (a lower bound over the run).
    const hibernation = { hibernated: 0, woken: 0 };
    for (const node of cluster.nodes) {
      const text = await fetch(`${node.url}/metrics`).then((response) => response.text()).catch(() => '');
      hibernation.hibernated += counterValue(text, 'scope_trees_hibernated_total');
      hibernation.woken += counterValue(text, 'scope_trees_woken_total');
    }

    const killsByMember: Record<string, number> = {};
    for (const kill of faults.kills) killsByMember[kill.member] = (killsByMember[kill.member] ?? 0) + 1;
    return {
      seed: options.seed,
      recovery: options.recovery,
      trials,
      kills: faults.kills.length,
      killsByMember,
      acknowledgedStarts: ledger.starts.length,
      acknowledgedSignals: ledger.signals.length,
      acknowledgedCancels: ledger.controls.length,
      operatorRestores: workload.restores,
      requests: client.requests,
      retries: client.retries,
      readers: workload.followers.length,
      readerReconnects: workload.followers.reduce((sum, follower) => sum + follower.reconnects, 0),
      outcomes,
      restartMs: { p50: [...faults.restartMs].sort((a, b) => a - b)[Math.floor(faults.restartMs.length / 2)] ?? 0, max: Math.max(0, ...faults.restartMs) },
      hibernation,
      violations,
      wallMs: Date.now() - began,
    };
  } finally {
    redis.disconnect();
    await cluster.stop();
  }
}

interface TreeProcess {
  readonly processId: string;
  readonly status: string;
}

/** Terminal; or parked — then restored (200) and its head loaded again — or still busy. */
async function finalState(client: Client, recovery: RecoveryMode, rootId: string): Promise<FinalState> {
  const encoded = encodeURIComponent(rootId);
  const tree = await client.request('GET', `/v1/trees/${encoded}`);
  const processes = (tree.body?.processes ?? []) as TreeProcess[];
  const status = processes.find((entry) => entry.processId === rootId)?.status ?? `unreadable (${tree.status})`;
  if (terminal.has(status)) return { rootId, status, settled: 'terminal', restorable: undefined };
  let parked = processes.length > 0;
  for (const entry of processes) {
    if (terminal.has(entry.status) || entry.status === 'waiting' || entry.status === 'paused') continue;
    const view = await client.request('GET', `/v1/processes/${encodeURIComponent(entry.processId)}`);
    // A running process blocked on an Unknown effect waits for a person: parked.
    if (!(view.body?.unknownEffectIds?.length > 0 && ['idle', 'inactive'].includes(view.body?.work))) parked = false;
  }
  if (!parked) return { rootId, status, settled: 'busy', restorable: undefined };
  // The operator proves a parked tree restorable by restoring it; with automatic takeover a restore
  // would take a tree from a healthy owner, so the head is only loaded.
  const restored = recovery === 'operator-restore' ? await client.request('POST', `/v1/trees/${encoded}/restore`, { body: {} }) : undefined;
  const head = restored === undefined || restored.status === 200 ? await client.request('GET', `/v1/trees/${encoded}/snapshot`) : undefined;
  return { rootId, status, settled: 'parked', restorable: head?.status === 200 };
}
