import { DeploymentRef, Effect, EffectAttemptId, EffectRequest, ProcessId, ProcessRelation, Settlement, TreeIncarnationId } from '../../kernel/index.js';

/**
 * The wire form of one effect attempt, as a job's data: everything a worker needs to rebuild the
 * exact EffectRequest (deployment ref, process, relation, effect, step position, incarnation and
 * attempt). Kernel values travel in their canonical JSON; the worker re-validates them all.
 */
export interface EffectJobData {
  readonly rootId: string;
  readonly deploymentRef: string;
  readonly processId: string;
  readonly relation: string;
  readonly stepSequence: string;
  readonly batchIndex: number;
  readonly effect: string;
  readonly incarnationId: string;
  readonly attemptId: string;
}

export function jobDataOf(request: EffectRequest): EffectJobData {
  const { attemptId, incarnationId } = request;
  if (attemptId === undefined || incarnationId === undefined) throw new TypeError('a dispatched request carries its attempt and incarnation');
  return {
    rootId: request.relation.rootId.toString(),
    deploymentRef: request.deploymentRef.json(),
    processId: request.processId.toString(),
    relation: request.relation.json(),
    stepSequence: request.stepSequence.toString(),
    batchIndex: request.batchIndex,
    effect: request.effect.json(),
    incarnationId: incarnationId.toString(),
    attemptId: attemptId.toString(),
  };
}

/** Rebuilds and validates the request (throws a kernel error on any malformed member). */
export function requestOf(data: EffectJobData): EffectRequest {
  const processId = ProcessId.parse(data.processId);
  return EffectRequest.create({
    processId,
    relation: ProcessRelation.parse(data.relation, processId),
    deploymentRef: deploymentRefOf(data.deploymentRef),
    stepSequence: BigInt(data.stepSequence),
    batchIndex: data.batchIndex,
    effect: Effect.parse(data.effect),
    incarnationId: TreeIncarnationId.parse(data.incarnationId),
    attemptId: EffectAttemptId.parse(data.attemptId),
  });
}

/**
 * A worker sees the same few refs in every job: each text is validated once (a DeploymentRef is
 * immutable), which was a third of rebuilding a request. Bounded: past the limit it starts over.
 */
const parsedRefs = new Map<string, DeploymentRef>();
const maxParsedRefs = 1_024;

function deploymentRefOf(text: string): DeploymentRef {
  let ref = parsedRefs.get(text);
  if (ref === undefined) {
    ref = DeploymentRef.parse(text);
    if (parsedRefs.size >= maxParsedRefs) parsedRefs.clear();
    parsedRefs.set(text, ref);
  }
  return ref;
}

/**
 * What a worker delivers to the inbox: a Settlement, or `unknown` when the dispatcher threw (the
 * outcome of the external work is not known) — the owner turns the latter into an Unknown.
 */
export type InboxEntry = { readonly outcome: 'settled'; readonly settlement: Settlement } | { readonly outcome: 'unknown'; readonly reason: string };

const settledOpening = '{"outcome":"settled","settlement":';

export function encodeInboxEntry(entry: InboxEntry): string {
  return entry.outcome === 'settled' ? `${settledOpening}${entry.settlement.json()}}` : JSON.stringify({ outcome: 'unknown', reason: entry.reason });
}

export function decodeInboxEntry(json: string): InboxEntry {
  // What encodeInboxEntry wrote: the settlement's own canonical text, validated once as it is.
  if (json.startsWith(settledOpening) && json.endsWith('}')) {
    return { outcome: 'settled', settlement: Settlement.parse(json.slice(settledOpening.length, -1)) };
  }
  const value = JSON.parse(json) as { outcome?: unknown; settlement?: unknown; reason?: unknown };
  if (value.outcome === 'settled') return { outcome: 'settled', settlement: Settlement.parse(JSON.stringify(value.settlement)) };
  if (value.outcome === 'unknown') return { outcome: 'unknown', reason: String(value.reason) };
  throw new TypeError('an inbox entry is settled or unknown');
}
