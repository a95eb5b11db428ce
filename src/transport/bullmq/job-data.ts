import { DeploymentRef, Effect, EffectAttemptId, EffectId, EffectRequest, ProcessId, ProcessRelation, Settlement, TreeIncarnationId } from '../../kernel/index.js';
import { maxUint64 } from '../../kernel/wire.js';

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

/**
 * What a claim names, validated before anything is written: the attempt's process, effect (its id
 * derived from the process and step position, as the owner derived it) and deployment, the
 * incarnation and the attempt. The rest of the job is checked by {@link requestOfClaimable}, which a
 * worker runs while its claim is on the way.
 */
export interface ClaimableJob {
  readonly processId: ProcessId;
  readonly effectId: EffectId;
  readonly effect: Effect;
  readonly deploymentRef: DeploymentRef;
  readonly incarnationId: TreeIncarnationId;
  readonly attemptId: EffectAttemptId;
}

const uint64Text = /^[1-9]\d{0,19}$/;

/** Throws a kernel error (or a TypeError) on any malformed member a claim depends on. */
export function claimableOf(data: EffectJobData): ClaimableJob {
  const processId = ProcessId.parse(data.processId);
  if (typeof data.stepSequence !== 'string' || !uint64Text.test(data.stepSequence) || BigInt(data.stepSequence) > maxUint64) {
    throw new TypeError(`a job's step sequence is a canonical uint64 >= 1, got ${JSON.stringify(data.stepSequence)}`);
  }
  return {
    processId,
    effectId: EffectId.derive(processId, BigInt(data.stepSequence), data.batchIndex),
    effect: Effect.parse(data.effect),
    deploymentRef: deploymentRefOf(data.deploymentRef),
    incarnationId: TreeIncarnationId.parse(data.incarnationId),
    attemptId: EffectAttemptId.parse(data.attemptId),
  };
}

/** The whole request, from the rest of the job and what its claim already validated. */
export function requestOfClaimable(data: EffectJobData, claimable: ClaimableJob): EffectRequest {
  const relation = ProcessRelation.parse(data.relation, claimable.processId);
  if (relation.rootId.toString() !== data.rootId) throw new TypeError(`a job's root ${JSON.stringify(data.rootId)} is not its relation's`);
  return EffectRequest.create({
    processId: claimable.processId,
    relation,
    deploymentRef: claimable.deploymentRef,
    stepSequence: BigInt(data.stepSequence),
    batchIndex: data.batchIndex,
    effect: claimable.effect,
    incarnationId: claimable.incarnationId,
    attemptId: claimable.attemptId,
  });
}

/** Rebuilds and validates the request (throws a kernel error on any malformed member). */
export function requestOf(data: EffectJobData): EffectRequest {
  return requestOfClaimable(data, claimableOf(data));
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
