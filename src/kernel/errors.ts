/**
 * Every error the kernel throws carries a stable `code`, so callers (and the HTTP layer's problem
 * registry) branch on codes, never on message wording.
 */
export class KernelError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KernelError';
    this.code = code;
  }
}

/** Stable codes of the kernel's sentinel errors (the seed's `Err…` variables, snake_cased). */
export const ErrorCode = {
  invalidPayload: 'invalid_payload',
  invalidDigest: 'invalid_digest',
  invalidIdentity: 'invalid_identity',
  invalidTreeIncarnationId: 'invalid_tree_incarnation_id',
  invalidEffectAttemptId: 'invalid_effect_attempt_id',
  invalidQualifiedName: 'invalid_qualified_name',
  invalidCapability: 'invalid_capability',
  invalidQuota: 'invalid_quota',
  invalidBudget: 'invalid_budget',
  invalidTreeLimits: 'invalid_tree_limits',
  invalidUsage: 'invalid_usage',
  invalidSchema: 'invalid_schema',
  schemaValidationFailed: 'schema_validation_failed',
  invalidDescriptor: 'invalid_descriptor',
  invalidDeployment: 'invalid_deployment',
  invalidDeploymentRef: 'invalid_deployment_ref',
  deploymentUnavailable: 'deployment_unavailable',
  invalidReplayPolicy: 'invalid_replay_policy',
  invalidFailure: 'invalid_failure',
  invalidStatus: 'invalid_status',
  invalidTermination: 'invalid_termination',
  invalidResult: 'invalid_result',
  invalidSettlement: 'invalid_settlement',
  invalidSignal: 'invalid_signal',
  invalidSignalRequest: 'invalid_signal_request',
  invalidEffect: 'invalid_effect',
  invalidChildStart: 'invalid_child_start',
  invalidChildWait: 'invalid_child_wait',
  invalidChildControl: 'invalid_child_control',
  invalidTransition: 'invalid_transition',
  invalidExecutionState: 'invalid_execution_state',
  invalidProcessRelation: 'invalid_process_relation',
  invalidSnapshot: 'invalid_snapshot',
  invalidTreeSnapshot: 'invalid_tree_snapshot',
  invalidCommit: 'invalid_commit',
  commitConflict: 'commit_conflict',
  treeIncarnationConflict: 'tree_incarnation_conflict',
  signalConflict: 'signal_conflict',
  resourceLimitExceeded: 'resource_limit_exceeded',
  counterExhausted: 'counter_exhausted',
  invalidEvent: 'invalid_event',
  invalidDelta: 'invalid_delta',
  invalidEngineConfig: 'invalid_engine_config',
  listenerReentrancy: 'listener_reentrancy',
  callbackPanic: 'callback_panic',
  /** A storage call timed out, lost its connection or was shut down: the tree head is unknown. */
  committerUnavailable: 'committer_unavailable',
  /** A store refused to purge a tree whose head still has a non-terminal Process. */
  treeLive: 'tree_live',
  runtimeStopped: 'runtime_stopped',
  processFinished: 'process_finished',
  effectNotPending: 'effect_not_pending',
  effectReplayForbidden: 'effect_replay_forbidden',
  effectOutcomeUnknown: 'effect_outcome_unknown',
  invalidProcessControl: 'invalid_process_control',
  engineClosed: 'engine_closed',
  engineHasActiveProcesses: 'engine_has_active_processes',
  processAlreadyExists: 'process_already_exists',
  treeNotFound: 'tree_not_found',
  /** The tree was released from this Engine while parked (its head stays the store's); restore it to change it. */
  treeReleased: 'tree_released',
  signalRejected: 'signal_rejected',
  processAdmissionRejected: 'process_admission_rejected',
  processStartFailed: 'process_start_failed',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** True when `error` is a KernelError with `code`. */
export function hasCode(error: unknown, code: string): boolean {
  return error instanceof KernelError && error.code === code;
}
