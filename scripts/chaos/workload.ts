/**
 * The chaos workload: bounded trials, each one tree of a seeded kind, driven to its end by a client
 * that keeps going through node deaths. demo.approval is answered (and sometimes sent notes) by a
 * client that sends each signal again under its own id until it is acknowledged, and sometimes once
 * more after; demo.sleep is sometimes canceled; demo.echo, demo.unreliable and demo.fanout run to
 * their end. An Effect left Unknown by a dead worker is replayed (or, for a `never` Effect,
 * resolved as failed), as its user would. Every acknowledgement goes into the {@link Ledger}.
 */
import { GiveUp, type Answer, type Client } from './client.js';
import type { Cluster } from './cluster.js';
import type { Ledger, TrialKind } from './ledger.js';
import type { Owners } from './owners.js';
import type { Prng } from './prng.js';
import { operatorRestore, type RecoveryMode, type RestoreOutcome } from './recovery.js';
import { StreamFollower } from './stream-follower.js';

export interface WorkloadOptions {
  readonly seed: number;
  readonly recovery: RecoveryMode;
  /** How long one trial may take to settle before it counts as stuck. */
  readonly trialDeadlineMs: number;
  /** The share of trees an SSE reader follows. */
  readonly streamShare: number;
}

const kinds: readonly TrialKind[] = ['approval', 'approval', 'echo', 'sleep', 'unreliable', 'fanout'];
const terminal = new Set(['completed', 'failed', 'canceled', 'timed_out', 'killed']);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const path = (id: string) => encodeURIComponent(id);

interface ProcessView {
  readonly processId: string;
  readonly status: string;
  readonly waitId: string | null;
  readonly unknownEffectIds: string[];
}

export class Workload {
  readonly followers: StreamFollower[] = [];
  /** Roots whose trial is still driving them (the operator's sweep looks only at these). */
  readonly open = new Set<string>();
  readonly #cluster: Cluster;
  readonly #client: Client;
  readonly #owners: Owners;
  readonly #ledger: Ledger;
  readonly #options: WorkloadOptions;
  readonly #restoring = new Map<string, Promise<RestoreOutcome>>();
  readonly #refusedAt = new Map<string, number>();
  /** Operator restores the harness performed. */
  restores = 0;

  constructor(cluster: Cluster, client: Client, owners: Owners, ledger: Ledger, options: WorkloadOptions) {
    this.#cluster = cluster;
    this.#client = client;
    this.#owners = owners;
    this.#ledger = ledger;
    this.#options = options;
  }

  /** One trial, start to settled (terminal, or parked on nothing the client can do). */
  async trial(index: number, rng: Prng): Promise<void> {
    const kind = rng.pick(kinds);
    const input = inputOf(kind, rng);
    const replayForbidden = kind === 'unreliable' && (input as { replayable: boolean }).replayable === false;
    let started: Answer;
    try {
      started = await this.#client.request('POST', '/v1/processes', {
        body: { deployment: `demo.${kind}`, input },
        headers: { 'idempotency-key': `chaos-${this.#options.seed}-${index}` },
        // A key whose first request is still being committed (or died committing) answers 409 for a while.
        retryOn: (status, body) => status >= 500 || (status === 409 && body?.code !== 'idempotency_key_conflict'),
      });
    } catch (error) {
      if (error instanceof GiveUp) return; // never acknowledged: nothing is owed
      throw error;
    }
    if (started.status !== 201 && started.status !== 200) {
      this.#ledger.problems.push(`trial ${index} (${kind}): start answered ${started.status} ${JSON.stringify(started.body)}`);
      return;
    }
    const rootId = started.body.processId as string;
    this.#ledger.starts.push({ trial: index, kind, rootId, status: started.status, replayForbidden });
    // A replayed start (200) was committed by an earlier try, maybe on a node that died since.
    const first = started.status === 200 ? started.tried[0] : undefined;
    if (first !== undefined) this.#owners.set(rootId, first.node, first.generation);
    else this.#owners.set(rootId, started.node, started.generation);
    this.open.add(rootId);
    if (rng.chance(this.#options.streamShare)) {
      const follower = new StreamFollower(this.#cluster, rng.fork(index), rootId);
      this.followers.push(follower);
      follower.start();
    }
    const deadline = Date.now() + this.#options.trialDeadlineMs;
    try {
      // One approval in ten is never answered: it ends parked, and the end checks restore it.
      const parked = kind === 'approval' && rng.chance(0.1);
      if (kind === 'approval') await this.#answer(rootId, index, rng, deadline, !parked);
      if (kind === 'sleep' && rng.chance(0.5)) await this.#cancelLater(rootId, rng.int(0, 1_500));
      const outcome = parked ? undefined : await this.#settle(rootId, deadline);
      if (outcome !== undefined) this.#ledger.problems.push(`trial ${index} (${kind}, ${rootId}): ${outcome}`);
    } catch (error) {
      this.#ledger.problems.push(`trial ${index} (${kind}, ${rootId}): ${(error as Error).message}`);
    } finally {
      this.open.delete(rootId);
    }
  }

  /** Restores, once at a time per tree, a tree whose owner died (operator mode only). */
  recover(rootId: string): Promise<RestoreOutcome> {
    if (this.#options.recovery !== 'operator-restore') return Promise.resolve('refused');
    let pending = this.#restoring.get(rootId);
    if (pending === undefined) {
      // A tree another node holds is not asked for again at once (the sweep runs five times a second).
      if (Date.now() - (this.#refusedAt.get(rootId) ?? 0) < 1_000) return Promise.resolve('refused');
      this.restores += 1;
      pending = operatorRestore(this.#client, this.#owners, rootId)
        .then((outcome) => {
          if (outcome === 'refused') this.#refusedAt.set(rootId, Date.now());
          else this.#refusedAt.delete(rootId);
          return outcome;
        })
        .finally(() => this.#restoring.delete(rootId));
      this.#restoring.set(rootId, pending);
    }
    return pending;
  }

  /**
   * A command for a tree: to a random node first; where that node does not hold the tree (409
   * `tree_not_active`), to the node that does, restoring the tree first when that one died.
   */
  async #command(rootId: string, route: string, body: unknown, deadline: number): Promise<Answer> {
    let previous: Answer | undefined;
    for (let round = 0; ; round += 1) {
      let node: Answer['node'] | undefined;
      if (round > 0 && this.#options.recovery === 'operator-restore') {
        // Finished: nothing to restore (the caller reads the 409 against the stored result).
        // Refused: another node holds or takes the tree; the command goes to a random node again.
        if (this.#owners.live(rootId) === undefined && (await this.recover(rootId)) === 'finished') return previous as Answer;
        node = this.#owners.live(rootId);
      }
      const answer = await this.#client.request('POST', route, {
        body,
        ...(node === undefined ? {} : { node }),
        deadlineMs: Math.max(1_000, deadline - Date.now()),
        // 503 is the tree's answer (its writer stopped, or this node may not write): routed again below.
        retryOn: (status) => status >= 500 && status !== 503,
      });
      previous = answer;
      const notHere = answer.status === 409 && answer.body?.code === 'tree_not_active';
      if ((!notHere && answer.status !== 503) || Date.now() > deadline) return answer;
      await pause(Math.min(500, 25 * 2 ** Math.min(round, 5)));
    }
  }

  /**
   * A refusal because the process is finished: 409 `process_finished`, or — from a node that does not
   * hold a finished tree whose node died (nothing to restore) — 409 `tree_not_active`. Not an
   * acknowledgement; nothing is owed.
   */
  async #finishedAnswer(rootId: string, answer: Answer, deadline: number): Promise<boolean> {
    if (answer.status !== 409) return false;
    if (answer.body?.code === 'process_finished') return true;
    if (answer.body?.code !== 'tree_not_active') return false;
    return terminal.has((await this.#inspect(rootId, deadline)).status);
  }

  async #inspect(processId: string, deadline: number): Promise<ProcessView> {
    const answer = await this.#client.request('GET', `/v1/processes/${path(processId)}`, { deadlineMs: Math.max(1_000, deadline - Date.now()) });
    if (answer.status !== 200) throw new Error(`inspection of ${processId} answered ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body as ProcessView;
  }

  /** demo.approval: 0–2 notes, then (unless told not to) the answer; each sent until acknowledged, some sent once more. */
  async #answer(rootId: string, index: number, rng: Prng, deadline: number, answer: boolean): Promise<void> {
    let waitId: string | null = null;
    while (waitId === null) {
      if (Date.now() > deadline) throw new Error('the approval never opened its wait');
      const view = await this.#inspect(rootId, deadline);
      if (terminal.has(view.status)) return;
      waitId = view.waitId;
      if (waitId === null) await pause(100);
    }
    const notes = rng.int(0, 2);
    for (let note = 0; note < notes; note += 1) {
      await this.#signal(rootId, { id: `t${index}-note-${note}`, payload: { note: `note ${note} of trial ${index}` } }, rng, deadline);
    }
    if (answer) await this.#signal(rootId, { id: `t${index}-answer`, waitId, payload: { approved: rng.chance(0.7) } }, rng, deadline);
  }

  async #signal(rootId: string, signal: { id: string; waitId?: string; payload: unknown }, rng: Prng, deadline: number): Promise<void> {
    const sends = rng.chance(0.4) ? 2 : 1;
    for (let send = 0; send < sends; send += 1) {
      const answer = await this.#command(rootId, `/v1/processes/${path(rootId)}/signals`, { signals: [signal] }, deadline);
      if (answer.status >= 200 && answer.status < 300) {
        this.#ledger.signals.push({ rootId, processId: rootId, signalId: signal.id, status: answer.status, accepted: answer.body?.accepted === true });
      } else if (!(await this.#finishedAnswer(rootId, answer, deadline))) {
        this.#ledger.problems.push(`signal ${signal.id} to ${rootId} answered ${answer.status} ${JSON.stringify(answer.body)}`);
        return;
      }
    }
  }

  async #cancelLater(rootId: string, delayMs: number): Promise<void> {
    await pause(delayMs);
    const answer = await this.#command(rootId, `/v1/processes/${path(rootId)}/cancel`, { reason: 'chaos' }, Date.now() + 30_000);
    if (answer.status === 202) this.#ledger.controls.push({ rootId, processId: rootId, action: 'cancel', status: answer.status });
    else if (!(answer.status === 409 && answer.body?.code === 'invalid_process_control') && !(await this.#finishedAnswer(rootId, answer, Date.now() + 30_000))) {
      this.#ledger.problems.push(`cancel of ${rootId} answered ${answer.status} ${JSON.stringify(answer.body)}`);
    }
  }

  /**
   * Waits until the root is terminal, settling Unknown Effects on the way (a replay for a replayable
   * one, a `failed` resolution for a `never` one). Resolves with why not, if the deadline passed.
   */
  async #settle(rootId: string, deadline: number): Promise<string | undefined> {
    let settled = 0;
    for (;;) {
      if (Date.now() > deadline) return `did not settle within ${this.#options.trialDeadlineMs} ms (the last view: ${JSON.stringify(await this.#inspect(rootId, Date.now() + 10_000).catch(() => 'none'))})`;
      const asked = Date.now();
      const result = await this.#client.request('GET', `/v1/processes/${path(rootId)}/result?waitMs=2000`, { deadlineMs: Math.max(1_000, deadline - Date.now()) });
      if (result.status === 200) return undefined;
      // A node that answers the long poll at once (it does not hold the tree) is not asked in a tight loop.
      if (Date.now() - asked < 500) await pause(250);
      const tree = await this.#client.request('GET', `/v1/trees/${path(rootId)}`, { deadlineMs: Math.max(1_000, deadline - Date.now()) });
      const processes = (tree.body?.processes ?? []) as Array<{ processId: string }>;
      for (const entry of processes) {
        // A child the owner's view lists may not be in the stored head another node reads yet.
        const view = await this.#inspect(entry.processId, deadline).catch(() => undefined);
        if (view === undefined) continue;
        for (const effectId of view.unknownEffectIds) {
          settled += 1;
          if (settled > 20) return `kept finding Unknown effects (${view.processId} ${effectId})`;
          await this.#settleUnknown(rootId, view.processId, effectId, deadline);
        }
      }
    }
  }

  async #settleUnknown(rootId: string, processId: string, effectId: string, deadline: number): Promise<void> {
    const effect = `/v1/processes/${path(processId)}/effects/${path(effectId)}`;
    const replay = await this.#command(rootId, `${effect}/replay`, {}, deadline);
    if (replay.status === 422 && replay.body?.code === 'effect_replay_forbidden') {
      await this.#command(rootId, `${effect}/resolution`, { status: 'failed', payload: { attempts: 0 } }, deadline);
    }
  }
}

function inputOf(kind: TrialKind, rng: Prng): unknown {
  switch (kind) {
    case 'approval':
      return { subject: `subject ${rng.int(0, 9_999)}` };
    case 'echo':
      return { value: `value-${rng.int(0, 9_999)}` };
    case 'sleep':
      return { ms: rng.int(100, 2_500) };
    case 'unreliable':
      return { mode: rng.pick(['ok', 'ok', 'fail', 'unknown'] as const), replayable: rng.chance(0.5) };
    case 'fanout':
      return { values: Array.from({ length: rng.int(2, 6) }, (_, index) => `v${index}`) };
  }
}
