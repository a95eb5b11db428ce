import type { Deployment, ProcessSnapshot, Result, RuntimeError, Usage } from '../kernel/index.js';
import { codedError, HostErrorCode } from '../errors.js';
import { budgetView, safeNumber } from './authority.js';
import type {
  DeploymentView,
  FailureView,
  Json,
  ProcessSummary,
  ProcessView,
  ResultView,
  RuntimeErrorView,
  UsageView,
} from './host.js';

/**
 * Kernel values → the Host's wire views (host.ts): camelCase, identities as strings, uint64
 * counters as JSON-safe numbers. Pure functions; nothing here reads state.
 */

/** A uint64 as a JSON number; beyond 2^53 − 1 it is `value_not_representable` (never expected). */
export function toNumber(value: bigint, what: string): number {
  const number = safeNumber(value);
  if (number === undefined) throw codedError(HostErrorCode.valueNotRepresentable, `${what} ${value} does not fit a JSON-safe number`);
  return number;
}

export function usageView(usage: Usage): UsageView {
  return {
    committedSteps: toNumber(usage.committedSteps, 'usage.committedSteps'),
    preparedEffects: toNumber(usage.preparedEffects, 'usage.preparedEffects'),
    acceptedSignals: toNumber(usage.acceptedSignals, 'usage.acceptedSignals'),
    droppedDeltas: toNumber(usage.droppedDeltas, 'usage.droppedDeltas'),
  };
}

export function failureView(failure: { kind: string; code: string; message: string } | undefined): FailureView | null {
  return failure === undefined ? null : { kind: failure.kind, code: failure.code, message: failure.message };
}

export function resultView(result: Result): ResultView {
  const termination = result.termination;
  return {
    processId: result.processId.toString(),
    status: result.status,
    cause: termination.cause,
    reason: termination.reason === '' ? null : termination.reason,
    output: result.output === undefined ? null : result.output.decode<Json>(),
    failure: failureView(termination.failure),
    unresolvedEffectIds: termination.unresolvedEffectIds.map((id) => id.toString()),
    startedAt: result.startedAt,
    finishedAt: result.finishedAt,
    usage: usageView(result.usage),
  };
}

export function runtimeErrorView(error: RuntimeError): RuntimeErrorView {
  return {
    code: error.classification().code,
    message: error.message,
    headDigest: error.headDigest.toString(),
    incarnationId: error.incarnationId.toString(),
    unresolvedEffectIds: error.unresolvedEffectIds.map((id) => id.toString()),
  };
}

/**
 * One process. Signal receipts and settlements are not inlined (a mailbox is append-only and may
 * hold thousands): the view carries their counts, and `GET …/signals` and `…/effects` page them.
 */
export function processView(snapshot: ProcessSnapshot, work: string, runtimeError: RuntimeError | undefined): ProcessView {
  const relation = snapshot.relation;
  const result = snapshot.result();
  return {
    processId: snapshot.processId.toString(),
    status: snapshot.status,
    rootId: relation.rootId.toString(),
    parentId: relation.parentId?.toString() ?? null,
    depth: relation.depth,
    deployment: snapshot.deploymentRef.name,
    deploymentRef: snapshot.deploymentRef.toString(),
    startedAt: snapshot.startedAt,
    usage: usageView(snapshot.usage()),
    budget: budgetView(snapshot.budget, (value, what) => toNumber(value, what)),
    capabilities: snapshot.capabilities.values(),
    waitId: snapshot.waitId?.toString() ?? null,
    waitKind: snapshot.waitKind ?? null,
    pauseReason: snapshot.pauseReason ?? null,
    unknownEffectIds: snapshot.unknownEffectIds().map((id) => id.toString()),
    receiptCount: snapshot.mailbox.length,
    result: result === undefined ? null : resultView(result),
    work,
    runtimeError: runtimeError === undefined ? null : runtimeErrorView(runtimeError),
  };
}

/** A root's summary without its tree's marks (tree-marks.ts: the process list adds them). */
export function summaryOf(snapshot: ProcessSnapshot): Omit<ProcessSummary, 'hasUnknown' | 'hasOpenGate'> {
  return {
    processId: snapshot.processId.toString(),
    deployment: snapshot.deploymentRef.name,
    status: snapshot.status,
    startedAt: snapshot.startedAt,
  };
}

export function deploymentView(deployment: Deployment): DeploymentView {
  const descriptor = deployment.descriptor;
  return {
    name: descriptor.name,
    description: descriptor.description,
    deploymentRef: deployment.ref.toString(),
    inputSchema: JSON.parse(descriptor.inputSchema.json()) as Json,
    outputSchema: JSON.parse(descriptor.outputSchema.json()) as Json,
    signalSchema: JSON.parse(descriptor.signalSchema.json()) as Json,
    waits: descriptor.waits().map((wait) => ({
      key: wait.key.toString(),
      description: wait.description,
      answerSchema: JSON.parse(wait.answerSchema.json()) as Json,
    })),
  };
}
