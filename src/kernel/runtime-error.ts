import type { Digest } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { FailureClassification } from './failure.js';
import type { EffectId, ProcessId, TreeIncarnationId } from './identity.js';

/**
 * An instance failure, not a logical one: a commit was not acknowledged (or capacity ran out), so
 * this writer stopped. It never invents a termination. `headDigest` is the last head acknowledged
 * to this instance — the store may be ahead of it (a lost reply, a newer writer) — so recovery
 * must load the store's authoritative head. `cause` is the committer or capacity error.
 */
export class RuntimeError extends KernelError {
  readonly processId: ProcessId;
  readonly incarnationId: TreeIncarnationId;
  readonly headDigest: Digest;
  readonly #unresolved: readonly EffectId[];

  constructor(options: {
    processId: ProcessId;
    incarnationId: TreeIncarnationId;
    headDigest: Digest;
    unresolvedEffectIds: readonly EffectId[];
    cause: unknown;
  }) {
    const cause = options.cause;
    super(
      ErrorCode.runtimeStopped,
      `runtime stopped for ${options.processId}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = 'RuntimeError';
    this.processId = options.processId;
    this.incarnationId = options.incarnationId;
    this.headDigest = options.headDigest;
    const unique = new Map(options.unresolvedEffectIds.map((id) => [id.toString(), id]));
    this.#unresolved = Object.freeze([...unique.values()].sort((a, b) => a.compare(b)));
  }

  /** Sorted, distinct Effects whose outcome this instance could not adopt or establish durably. */
  get unresolvedEffectIds(): EffectId[] {
    return [...this.#unresolved];
  }

  /** The stable part of the cause, for the `agent.runtime.stopped` event. */
  classification(): FailureClassification {
    return classifyRuntimeCause(this.cause);
  }

  /** The kernel error code of the cause (`commit_conflict`, `tree_incarnation_conflict`, …). */
  get causeCode(): string | undefined {
    return this.cause instanceof KernelError ? this.cause.code : undefined;
  }
}

/** kernel-contract §4.18: how a stopped writer's cause is classified. */
export function classifyRuntimeCause(cause: unknown): FailureClassification {
  const code = cause instanceof KernelError ? cause.code : undefined;
  if (code === ErrorCode.resourceLimitExceeded) return FailureClassification.of('execution', 'engine.limit.snapshot');
  if (code === ErrorCode.commitConflict) return FailureClassification.of('contract', 'engine.tree.committer_conflict');
  if (code === ErrorCode.treeIncarnationConflict) {
    return FailureClassification.of('external', 'engine.tree.incarnation_conflict');
  }
  return FailureClassification.of('external', 'engine.tree.committer_failed');
}
