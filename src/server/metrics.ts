import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Event } from '../kernel/index.js';
import type { StreamEndReason } from './host.js';
import type { ServedRefView } from '../transport/bullmq/worker-readiness.js';
import { RedisWorkerRegistry, type LiveWorker } from '../store/redis/worker-registry.js';

/**
 * The server's Prometheus metrics, on a registry of its own (one per Host, so tests can run several
 * Hosts in one process). The Host feeds the event-derived counters from its event listener and the
 * commit histogram from its committer decorator; the stream plugin reports SSE clients through
 * `Host.telemetry`. The app may register its HTTP metrics on {@link HostMetrics.registry}.
 */
export class HostMetrics {
  readonly registry = new Registry();
  readonly processes: Gauge;
  readonly residentProcesses: Gauge<'status'>;
  readonly processesFinished: Counter<'status' | 'cause'>;
  readonly steps: Counter<'status'>;
  readonly stepsCommitted: Counter;
  readonly effects: Counter<'status'>;
  readonly effectsResolved: Counter<'status'>;
  readonly commitDuration: Histogram<'kind' | 'outcome'>;
  readonly sseClients: Gauge;
  readonly gateAnswerPolls: Gauge;
  readonly sseStreamsEnded: Counter<'reason'>;
  readonly logAppendFailures: Counter;
  readonly treesHibernated: Counter;
  readonly treesWoken: Counter;
  readonly treesTakenOver: Counter;
  readonly timersFired: Counter;
  readonly timersWoken: Counter;
  readonly timersWaiting: Gauge;
  readonly queueJobs: Gauge<'queue' | 'state'>;
  readonly liveWorkers: Gauge<'ref'>;
  readonly workerProcessKeys: Gauge<'ref' | 'key' | 'state'>;
  readonly followedAttempts: Gauge;

  constructor(options: {
    /** Root processes that exist (the root index: every server's, in Redis mode). */
    rootProcesses: () => Promise<number>;
    /** Processes resident in this server's runtime, by status. */
    residentByStatus: () => ReadonlyMap<string, number>;
    defaultMetrics?: boolean;
  }) {
    const registers = [this.registry];
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    this.processes = new Gauge({
      name: 'scope_processes',
      help: 'Root processes that exist in the store (from the root index, shared by every server on one Redis)',
      registers,
      async collect() {
        // Storage down: the last known value stays (readiness reports the outage), /metrics still answers.
        const count = await options.rootProcesses().catch(() => undefined);
        if (count !== undefined) this.set(count);
      },
    });
    this.residentProcesses = new Gauge({
      name: 'scope_resident_processes',
      help: "Processes resident in this server's runtime (owned here and in memory), by status",
      labelNames: ['status'],
      registers,
      collect() {
        this.reset();
        for (const [status, count] of options.residentByStatus()) this.set({ status }, count);
      },
    });
    this.processesFinished = new Counter({
      name: 'scope_processes_finished_total',
      help: 'Processes whose terminal checkpoint committed, by status and cause',
      labelNames: ['status', 'cause'],
      registers,
    });
    this.steps = new Counter({
      name: 'scope_steps_total',
      help: 'Steps run, by outcome (succeeded, failed, discarded)',
      labelNames: ['status'],
      registers,
    });
    this.treesHibernated = new Counter({
      name: 'scope_trees_hibernated_total',
      help: 'Parked trees released from memory after their idle time (their heads stay in the store)',
      registers,
    });
    this.treesWoken = new Counter({
      name: 'scope_trees_woken_total',
      help: 'Hibernated trees restored into memory by a command',
      registers,
    });
    this.treesTakenOver = new Counter({
      name: 'scope_trees_taken_over_total',
      help: "Trees this node's sweep took over from nodes whose lease lapsed (or from its own earlier epoch)",
      registers,
    });
    this.timersFired = new Counter({
      name: 'scope_timers_fired_total',
      help: 'Durable timer dispatches this node ended at (or after) their due instant',
      registers,
    });
    this.timersWoken = new Counter({
      name: 'scope_timers_woken_total',
      help: 'Trees out of memory (hibernated, ownerless) that this node restored for a due timer',
      registers,
    });
    this.timersWaiting = new Gauge({
      name: 'scope_timers_waiting',
      help: 'Durable timer dispatches waiting in this node for their instant (hibernated trees wait in the index, not here)',
      registers,
    });
    this.stepsCommitted = new Counter({ name: 'scope_steps_committed_total', help: 'Steps whose result committed', registers });
    this.effects = new Counter({
      name: 'scope_effects_settled_total',
      help: 'Dispatch attempts finished, by settlement status (succeeded, failed, unknown)',
      labelNames: ['status'],
      registers,
    });
    this.effectsResolved = new Counter({
      name: 'scope_effects_resolved_total',
      help: 'Unknown effects resolved by replay or host adjudication, by settlement status',
      labelNames: ['status'],
      registers,
    });
    this.commitDuration = new Histogram({
      name: 'scope_commit_duration_seconds',
      help: 'Latency of tree commits (start, checkpoint, effect, activation), by outcome',
      labelNames: ['kind', 'outcome'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.sseClients = new Gauge({ name: 'scope_sse_clients', help: 'Connected SSE stream clients', registers });
    this.gateAnswerPolls = new Gauge({ name: 'scope_gate_answer_polls', help: 'Long polls on this server waiting for a host-owned gate to be answered or closed', registers });
    this.sseStreamsEnded = new Counter({
      name: 'scope_sse_streams_ended_total',
      help: 'SSE streams ended, by reason (completed, client_closed, dropped, shutdown, error)',
      labelNames: ['reason'],
      registers,
    });
    this.queueJobs = new Gauge({
      name: 'scope_transport_jobs',
      help: 'BullMQ effect jobs per deployment queue, by state (waiting, active)',
      labelNames: ['queue', 'state'],
      registers,
    });
    this.liveWorkers = new Gauge({
      name: 'scope_transport_live_workers',
      help: 'Live scope worker processes holding each DeploymentRef (by ref digest)',
      labelNames: ['ref'],
      registers,
    });
    // Summed over the live workers, never labelled by worker: ids are new with every worker process.
    this.workerProcessKeys = new Gauge({
      name: 'scope_transport_worker_process_keys',
      help: 'Live workers running a process dispatcher key for each queued DeploymentRef (by ref digest), by state (ok, unresolvable, start_failed)',
      labelNames: ['ref', 'key', 'state'],
      registers,
    });
    this.followedAttempts = new Gauge({
      name: 'scope_transport_followed_attempts',
      help: 'Effect attempts this server awaits a settlement for through the BullMQ transport (first attempts enqueued behind their pending commit included)',
      registers,
    });
    this.logAppendFailures = new Counter({
      name: 'scope_event_log_append_failures_total',
      help: 'Best-effort event log entries (attempt events, deltas) lost to failed appends',
      registers,
    });
  }

  /** The BullMQ transport's queues, live workers and their process keys per queued ref, as last read. */
  observeQueues(queues: ReadonlyMap<string, { waiting: number; active: number }>, workers: readonly LiveWorker[], refs: ReadonlyMap<string, ServedRefView>): void {
    this.queueJobs.reset();
    for (const [queue, counts] of queues) {
      this.queueJobs.set({ queue, state: 'waiting' }, counts.waiting);
      this.queueJobs.set({ queue, state: 'active' }, counts.active);
    }
    this.liveWorkers.reset();
    for (const [ref, count] of RedisWorkerRegistry.counts(workers)) this.liveWorkers.set({ ref }, count);
    this.workerProcessKeys.reset();
    for (const [ref, served] of refs) {
      for (const worker of served.workers) {
        for (const key of worker.processes) {
          const state = !key.resolvable ? 'unresolvable' : key.check === 'ok' ? 'ok' : 'start_failed';
          this.workerProcessKeys.inc({ ref, key: key.key, state });
        }
      }
    }
  }

  /** Counts what one published event reports. */
  observe(event: Event): void {
    switch (event.name) {
      case 'agent.step.finished': {
        const status = event.stepFinished()?.status;
        if (status !== undefined) this.steps.inc({ status });
        break;
      }
      case 'agent.step.committed':
        this.stepsCommitted.inc();
        break;
      case 'agent.effect.finished': {
        const status = event.effectFinished()?.settlementStatus;
        if (status !== undefined) this.effects.inc({ status });
        break;
      }
      case 'agent.effect.resolved': {
        const status = event.effectResolved()?.settlementStatus;
        if (status !== undefined) this.effectsResolved.inc({ status });
        break;
      }
      case 'agent.process.finished': {
        const finished = event.processFinished();
        if (finished !== undefined) this.processesFinished.inc({ status: finished.status, cause: finished.cause });
        break;
      }
      default:
        break;
    }
  }

  /** An SSE client connected; the returned function records its end (only the first call counts). */
  sseClientConnected(): (reason?: StreamEndReason) => void {
    this.sseClients.inc();
    let ended = false;
    return (reason = 'client_closed') => {
      if (ended) return;
      ended = true;
      this.sseClients.dec();
      this.sseStreamsEnded.inc({ reason });
    };
  }
}
