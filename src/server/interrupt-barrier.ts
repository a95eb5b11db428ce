import { ClassifiedError, type ProcessAdmission } from '../kernel/index.js';
import type { Logger } from 'pino';

/**
 * The interrupt barrier of tree control (the session-runtime seed's admission barrier): from the moment
 * a tree-wide pause, cancel or kill is accepted until every process of the tree is paused or ended, no
 * child starts in that tree — a `start_child` reaching admission settles failed with
 * `engine.child.interrupt_pending` (through the Engine's ProcessAdmitter), so an interrupted agent cannot
 * open fresh work while the interrupt lands. User input is not held: signals keep queuing as always.
 *
 * The barrier is held on the node that owns the tree (the one whose runtime admits its children), and
 * recorded beside the tree's head with the control's commit (interrupt-record.ts), so a node that takes
 * the tree over holds it again ({@link rearm}) for what is left of its time. It is released when the
 * tree settles, by a resume, or — so that a process that never reaches a boundary cannot hold a tree's
 * starts forever — after `releaseMs`, which is logged.
 */
export interface InterruptBarrierOptions {
  readonly releaseMs: number;
  /** Whether every process of the tree is paused or terminal (false when this node does not hold it). */
  readonly settled: (root: string) => boolean;
  readonly logger?: Logger;
}

export const interruptPending = new ClassifiedError(
  'execution',
  'engine.child.interrupt_pending',
  'the tree is being interrupted: no child starts until every process is paused or ended',
);

export class InterruptBarrier {
  readonly #options: InterruptBarrierOptions;
  readonly #held = new Map<string, { readonly action: string; readonly timer: NodeJS.Timeout }>();

  constructor(options: InterruptBarrierOptions) {
    this.#options = options;
  }

  get releaseMs(): number {
    return this.#options.releaseMs;
  }

  /** Holds child starts in `root` (again, with a fresh cap, when already held), for `forMs` (default: the cap). */
  hold(root: string, action: string, forMs: number = this.#options.releaseMs): void {
    this.lift(root);
    const timer = setTimeout(() => {
      if (this.#held.get(root)?.timer !== timer) return;
      this.#held.delete(root);
      this.#options.logger?.warn({ rootId: root, action, releaseMs: this.#options.releaseMs }, 'interrupt barrier released by its time cap before the tree settled');
    }, forMs);
    timer.unref();
    this.#held.set(root, { action, timer });
  }

  /**
   * A restore of `root` here (a takeover, a wake): holds child starts again when its stored interrupt
   * is still in force — recorded, before its deadline (`until`, ms since the epoch), and the head not
   * settled — for what is left of its time. Called before the new incarnation runs anything.
   */
  rearm(root: string, record: { readonly action: string; readonly until: number } | undefined, settled: boolean, now: number): void {
    if (record === undefined || settled || this.#held.has(root)) return;
    const left = record.until - now;
    if (left <= 0) return;
    this.hold(root, record.action, Math.min(left, this.#options.releaseMs));
    this.#options.logger?.info({ rootId: root, action: record.action, releaseInMs: Math.round(left) }, 'interrupt barrier held again after a restore');
  }

  lift(root: string): void {
    const held = this.#held.get(root);
    if (held === undefined) return;
    clearTimeout(held.timer);
    this.#held.delete(root);
  }

  holds(root: string): boolean {
    return this.#held.has(root);
  }

  /** A pause or an end in `root` was committed: lifts the barrier once the whole tree has settled. */
  observe(root: string): void {
    if (this.#held.has(root) && this.#options.settled(root)) this.lift(root);
  }

  /** The ProcessAdmitter: refuses a child start in a held tree (roots are never held back). */
  admit(admission: ProcessAdmission): void {
    if (admission.relation.parentId === undefined) return;
    if (this.#held.has(admission.relation.rootId.toString())) throw interruptPending.wrap(`tree ${admission.relation.rootId.toString()}`);
  }

  close(): void {
    for (const root of [...this.#held.keys()]) this.lift(root);
  }
}
