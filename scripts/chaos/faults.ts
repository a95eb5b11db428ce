/**
 * The fault schedule: at seeded random moments, SIGKILL a random API node or worker, and restart it
 * (same name, port and node id) after a seeded random delay. Kills may overlap restarts, but at
 * least one node and one worker always stay up (the workload needs somewhere to go).
 */
import type { Cluster, Member } from './cluster.js';
import type { Prng } from './prng.js';

export interface FaultOptions {
  /** Stop after this many kills. */
  readonly kills: number;
  /** Gap between kills, ms. */
  readonly gapMs: readonly [number, number];
  /** Time a killed member stays down, ms. */
  readonly downMs: readonly [number, number];
}

export interface KillEvent {
  readonly at: number;
  readonly member: string;
}

export class Faults {
  readonly kills: KillEvent[] = [];
  readonly #cluster: Cluster;
  readonly #rng: Prng;
  readonly #options: FaultOptions;
  readonly #restarts = new Set<Promise<void>>();
  #stopped = false;
  /** How long each restart took, from spawn to ready (ms). */
  readonly restartMs: number[] = [];
  /** A restart that failed (a member that would not start again is a finding too). */
  readonly problems: string[] = [];

  constructor(cluster: Cluster, rng: Prng, options: FaultOptions) {
    this.#cluster = cluster;
    this.#rng = rng;
    this.#options = options;
  }

  get done(): boolean {
    return this.kills.length >= this.#options.kills;
  }

  /** Kills until the count is reached or {@link stop} is called; resolves once every restart finished. */
  async run(): Promise<void> {
    const started = Date.now();
    while (!this.#stopped && !this.done) {
      await new Promise((resolve) => setTimeout(resolve, this.#rng.int(...this.#options.gapMs)));
      if (this.#stopped) break;
      const target = this.#pick();
      if (target === undefined) continue;
      await this.#cluster.kill(target);
      this.kills.push({ at: Date.now() - started, member: target.name });
      const restart = this.#restartLater(target, this.#rng.int(...this.#options.downMs));
      this.#restarts.add(restart);
      void restart.finally(() => this.#restarts.delete(restart));
    }
    await Promise.all([...this.#restarts]);
  }

  stop(): void {
    this.#stopped = true;
  }

  #pick(): Member | undefined {
    const nodes = this.#cluster.liveNodes();
    const workers = this.#cluster.liveWorkers();
    const candidates = [...(nodes.length > 1 ? nodes : []), ...(workers.length > 1 ? workers : [])];
    return candidates.length === 0 ? undefined : this.#rng.pick(candidates);
  }

  async #restartLater(member: Member, delayMs: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    const began = Date.now();
    try {
      await this.#cluster.restart(member);
      this.restartMs.push(Date.now() - began);
    } catch (error) {
      this.problems.push(`${member.name} did not restart: ${(error as Error).message}`);
    }
  }
}
