/** What the tree view shows of a tree's policy breaker (`policyBreaker`). */
export interface PolicyBreakerView {
  /** Policy failures in a row in this tree (a throw, an invalid answer, a refused delivery). */
  readonly consecutiveFailures: number;
  /** Once tripped, no policy runs in this tree on this owner again. */
  readonly tripped: boolean;
  readonly trippedAt: string | null;
  /** The failure that tripped it (or the last one). */
  readonly lastFailure: string | null;
}

/** The default number of failures in a row that trips a tree's breaker (`SCOPE_POLICY_BREAKER_FAILURES`). */
export const defaultPolicyBreakerFailures = 3;

/**
 * A per-tree breaker for gate policies: after `threshold` consecutive failures in one tree, policies
 * stop running there, so a rule that keeps failing cannot keep a tree busy (its gates wait for
 * people). An admitted answer resets the count; an abstention or a lost race neither counts nor
 * resets. Kept by the tree's owner in memory: a new owner starts with a closed breaker.
 */
export class PolicyBreaker {
  readonly #threshold: number;
  readonly #now: () => Date;
  readonly #trees = new Map<string, { failures: number; trippedAt: string | null; lastFailure: string | null }>();

  constructor(threshold: number, now: () => Date = () => new Date()) {
    this.#threshold = threshold;
    this.#now = now;
  }

  tripped(root: string): boolean {
    return this.#trees.get(root)?.trippedAt != null;
  }

  /** Counts a failure; true when it is the one that trips the breaker. */
  failed(root: string, cause: string): boolean {
    const state = this.#trees.get(root) ?? { failures: 0, trippedAt: null, lastFailure: null };
    state.failures += 1;
    state.lastFailure = cause;
    const trips = state.trippedAt === null && state.failures >= this.#threshold;
    if (trips) state.trippedAt = this.#now().toISOString();
    this.#trees.set(root, state);
    return trips;
  }

  succeeded(root: string): void {
    const state = this.#trees.get(root);
    if (state !== undefined && state.trippedAt === null) state.failures = 0;
  }

  /** Undefined while no policy of the tree failed here. */
  view(root: string): PolicyBreakerView | undefined {
    const state = this.#trees.get(root);
    if (state === undefined) return undefined;
    return { consecutiveFailures: state.failures, tripped: state.trippedAt !== null, trippedAt: state.trippedAt, lastFailure: state.lastFailure };
  }

  forget(root: string): void {
    this.#trees.delete(root);
  }
}
