import { describe } from './digest.js';
import type { Deployment, DeploymentRef } from './deployment.js';
import type { Descriptor } from './descriptor.js';
import type { Effect, EffectRequest } from './effect.js';
import { ErrorCode, KernelError } from './errors.js';
import type { ExecutionState } from './execution-state.js';
import type { Payload } from './payload.js';
import type { Settlement } from './settlement.js';
import type { Signal } from './signal.js';
import type { Transition } from './transition.js';

/**
 * The execution waist: the only two interfaces a Strategy implements. A Definition owns immutable
 * behaviour; each Execution is one isolated, serialisable instance of it.
 */

/**
 * An immutable Agent behaviour definition. Its methods may be called concurrently for different
 * Processes and must not depend on Host product identities, storage protocols or mutable global
 * registration.
 */
export interface Definition {
  /**
   * The immutable, portable contract shared by every Execution of this definition. Repeated and
   * concurrent calls must return an equivalent value (same digest).
   */
  descriptor(): Descriptor;

  /**
   * Every Deployment this definition binds in its own configuration to start as a child. The
   * Deployment folds their references into its DeploymentRef (`bindings_digest`), so the same
   * definition bound to different children is a different Deployment; the Engine starts and
   * restores these children from the bindings themselves, and consults the DeploymentResolver only
   * for children named by runtime input. Repeated calls must return the same set; a leaf returns `[]`.
   */
  childDeployments(): readonly Deployment[];

  /**
   * Validates `input` against the descriptor and creates a fresh, isolated Execution.
   *
   * Determinism: local initialisation only — no I/O, clock, randomness or global reads; it must
   * return promptly. Equal input must produce an equivalent Execution. The Engine snapshots and
   * restores the result before adopting it, so the instance may be discarded at any time.
   */
  start(input: Payload): Execution | Promise<Execution>;

  /**
   * Reconstructs an Execution from a state this exact definition produced with `snapshot()` (the
   * Engine enforces the pairing through the DeploymentRef). It validates the state and strategy
   * invariants without replaying external work, and runs before every Step, so it must honour
   * `signal` (cancellation only; it carries no Host values).
   *
   * Determinism: no I/O, clock, randomness or hidden inputs; bounded; the restored Execution must
   * continue exactly as the one that produced the state would have. Results may be discarded.
   */
  restore(state: ExecutionState, signal: AbortSignal): Execution | Promise<Execution>;
}

/** One Process's Strategy state machine, advanced one candidate Step at a time. */
export interface Execution {
  /**
   * Reduces the current state and the delivered `signals` to a candidate Transition. External work
   * is only ever declared, as Effects in a `continue` Transition.
   *
   * Determinism: a pure, bounded, discardable candidate computation — no I/O, clock, randomness,
   * global reads or unowned asynchronous work. It must honour `signal` and return in bounded time.
   * The Engine may discard the result (and any error) and rebuild the Execution from the last
   * adopted state, so mutations must be confined to this instance.
   */
  step(signal: AbortSignal, signals: readonly Signal[]): Transition | Promise<Transition>;

  /** The complete opaque state, such that `restore(snapshot())` continues identically. */
  snapshot(): ExecutionState;
}

/**
 * Whether a Dispatcher can prove that repeating an Effect under the same EffectId is the same
 * logical external operation. It claims no transactionality and never permits replay under a
 * different identity.
 *
 * - `never`: forbids both restored pending replay and explicit replay of an Unknown; a Host can
 *   still supply a definite settlement.
 * - `same_identity`: the Effect may be repeated under its original identity.
 */
export type ReplayPolicy = 'never' | 'same_identity';

export const replayPolicyValues: readonly ReplayPolicy[] = Object.freeze(['never', 'same_identity']);

export function isReplayPolicy(value: unknown): value is ReplayPolicy {
  return typeof value === 'string' && (replayPolicyValues as readonly string[]).includes(value);
}

/** Throws `invalid_replay_policy` for anything but `never` or `same_identity`. */
export function parseReplayPolicy(value: unknown): ReplayPolicy {
  if (!isReplayPolicy(value)) {
    throw new KernelError(ErrorCode.invalidReplayPolicy, `invalid replay policy: ${describe(value)}`);
  }
  return value;
}

/**
 * Accepts Strategy-owned streaming payloads while `dispatch` is active. The Engine validates,
 * orders, bounds and publishes each as a best-effort Delta; it reports no observer error. It is
 * `undefined` when nobody listens, so Dispatchers must guard emission, and must not retain or call
 * it after `dispatch` settles.
 */
export type DeltaEmitter = (payload: Payload) => void;

/**
 * Executes Strategy-owned (dispatcher-target) Effects outside `Execution.step`. Implementations may
 * serve Processes concurrently, must return in bounded time and must not mutate an Execution.
 */
export interface Dispatcher {
  /**
   * Performs one frozen Effect. The returned Settlement is the definite (or explicitly unknown)
   * result; a rejected promise means the external outcome is unknown — never a definite failure.
   * Rejecting a valid request before any external work starts is a definite `failed` Settlement.
   * `signal` aborts when terminal intent reaches this Process or an ancestor; the Engine still
   * collects the result.
   */
  dispatch(request: EffectRequest, emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement>;

  /**
   * Whether this exact Effect may be repeated under its original EffectId (restored pending attempt
   * or `replayUnknownEffect`). No I/O or side effects; deterministic for equivalent Effects.
   */
  replayPolicy(effect: Effect): ReplayPolicy;

  /**
   * Optional: whether a dispatch of this Effect, once started, holds nothing a restore cannot
   * re-create — a wait for an instant the Host recorded durably (a timer). A tree whose only work
   * in flight is such dispatches counts as parked: it may be released from memory while they wait
   * (their abort signal then aborts with `tree_released`, and their outcome is ignored), and its
   * restore replays them. Only honoured with a `same_identity` replay policy. No I/O; deterministic.
   */
  parkable?(effect: Effect): boolean;
}

/**
 * One bounded, deterministic, context-free lookup of the exact Deployment for a child named by
 * runtime input. It must return a Deployment whose ref equals `ref` exactly — never a fallback by
 * name — and throw (`deployment_unavailable`) otherwise. No remote I/O, no Process re-entry.
 */
export interface DeploymentResolver {
  resolve(ref: DeploymentRef): Deployment;
}
