/**
 * The kernel's public surface: what a Host, a store adapter or a strategy author builds on.
 *
 * Curated, not a barrel: each name here is a promise, and `test/architecture/public-surface.test.ts`
 * pins the list. Internals (the tree runtime, mailboxes, prepared steps, wire codecs) stay behind it.
 * Conformance suites for third-party committers, definitions and resolvers live in `./testing`.
 */

// Canonical values and their identities.
export { maxPayloadDepth, Payload } from './payload.js';
export { Digest, computeDigest } from './digest.js';
export { canonicalize, encodeCanonical, maxPayloadBytes } from './canonical-json.js';
export { createSchemaAjv, Schema, SchemaValidationError, type SchemaViolation } from './schema.js';
export {
  ProcessId,
  EffectId,
  WaitId,
  SignalId,
  ChildKey,
  WaitKey,
  TreeIncarnationId,
  EffectAttemptId,
  isIdentityText,
  isQualifiedName,
} from './identity.js';

// Contracts: what a behaviour declares and what it may use.
export { Descriptor, type DescriptorConfig } from './descriptor.js';
export { Deployment, DeploymentRef, MapDeploymentResolver, type DeploymentConfig } from './deployment.js';
export { Quota } from './quota.js';
export { Budget, type BudgetConfig } from './budget.js';
export { TreeLimits, defaultTreeLimits, type TreeLimitsConfig } from './tree-limits.js';
export { Usage } from './usage.js';
export { CapabilitySet, parseCapability } from './capability.js';

// The execution waist: what a strategy implements.
export {
  type Definition,
  type Execution,
  type Dispatcher,
  type DeploymentResolver,
  type DeltaEmitter,
  type ReplayPolicy,
  replayPolicyValues,
  parseReplayPolicy,
} from './definition.js';
export { Transition, type TransitionKind } from './transition.js';
export { ExecutionState } from './execution-state.js';
export { Effect, EffectRequest, ChildSpec, ChildWaitSpec, ChildWaitCondition, type EffectTarget } from './effect.js';
export { Signal, SignalRequest } from './signal.js';
export { WaitDeclaration, CurrentWait, type WaitDeclarationConfig, type WaitOptions } from './wait.js';
export { Settlement, type SettlementStatus, settlementStatusValues } from './settlement.js';
export { Failure, type FailureKind, failureKindValues, validDiagnostic } from './failure.js';
export { ClassifiedError } from './classified-error.js';

// Lifecycle and outcomes.
export { Engine, type EngineConfig, type StartOptions, type ProcessAdmission, type ProcessAdmitter, type TreeInspection, type ProcessInspection } from './engine.js';
export { Process } from './process.js';
export { Result, timestampToDate } from './result.js';
export { type Status, type TerminalStatus, statusValues, terminalStatusValues, isTerminalStatus, isStatus } from './status.js';
export { Termination, type TerminationCause, terminationCauseValues } from './termination.js';
export { type Clock, systemClock } from './clock.js';

// Observation.
export { Event, eventNames, eventNameValues, type EventName } from './event.js';
export { Delta } from './delta.js';
export { type EventListener, type EventListenerLike, type DeltaListener, type DeltaListenerLike } from './observation.js';

// The commit protocol: what a store adapter implements.
export { type TreeCommitter, type TreeStore, type CommitContext } from './tree-committer.js';
export {
  TreeCheckpoint,
  EffectBoundary,
  TreeActivation,
  type TreeCheckpointKind,
  type EffectBoundaryKind,
  commitConflict,
  treeIncarnationConflict,
} from './commit.js';
export { TreeSnapshot } from './tree-snapshot.js';
export { cancelStoredTree, type StoredCancellation, type StoredCancellationOptions } from './stored-cancellation.js';
export { isParkedTree } from './parked.js';
export { ProcessSnapshot } from './process-snapshot.js';
export { ProcessRelation } from './relation.js';
export { type PreparedStep, type PreparedEffect, type EffectPhase } from './prepared-step.js';

// Errors.
export { KernelError, ErrorCode, hasCode } from './errors.js';
export { RuntimeError } from './runtime-error.js';
export { CallbackPanicError } from './callback-panic-error.js';
