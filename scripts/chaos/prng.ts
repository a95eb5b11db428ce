/**
 * A small seeded PRNG (mulberry32): the harness's every random choice comes from one, so a seed
 * names the same workload, fault schedule and node picks (the processes' own timing still varies).
 */
export class Prng {
  readonly #seed: number;
  #state: number;

  constructor(seed: number) {
    this.#seed = seed >>> 0;
    this.#state = this.#seed;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** An independent generator for one part (a trial, the fault schedule), so parts do not shift each other's draws. */
  fork(label: number): Prng {
    return new Prng((Math.imul(this.#seed ^ 0x85ebca6b, 0x9e3779b1) + Math.imul(label + 1, 0xc2b2ae35)) >>> 0);
  }
}
