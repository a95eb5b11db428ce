import { Digest } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { deriveIdentityText, SignalId, type EffectId, type ProcessId, type TreeIncarnationId } from './identity.js';
import { EffectRequest } from './effect.js';
import type { PreparedEffect, PreparedStep } from './prepared-step.js';
import type { Settlement } from './settlement.js';
import type { TreeSnapshot } from './tree-snapshot.js';
import { encodeWire } from './wire.js';
import type { ProcessSnapshot } from './process-snapshot.js';

/**
 * The commit protocol's three boundary values. Each owns its storage `identity()` and
 * `contentDigest()`, so memory and persistent stores deduplicate with exactly the same facts.
 * Invalid boundaries cannot be constructed: the factories throw `invalid_commit`.
 */

export const treeCheckpointKinds = ['start', 'child_start', 'signals', 'progress', 'parked', 'terminal'] as const;
export type TreeCheckpointKind = (typeof treeCheckpointKinds)[number];

export const effectBoundaryKinds = ['pending', 'settled', 'resolved'] as const;
export type EffectBoundaryKind = (typeof effectBoundaryKinds)[number];

function invalid(message: string): KernelError {
  return new KernelError(ErrorCode.invalidCommit, message);
}

function requireSequence(sequence: bigint): void {
  if (typeof sequence !== 'bigint' || sequence < 1n || sequence > (1n << 64n) - 1n) {
    throw invalid('commit sequence must be a uint64 greater than zero');
  }
}

/**
 * Classifies a recovery cut: `terminal` when every member is terminal, `parked` when every live
 * member is waiting, paused or blocked on an Unknown settlement, `progress` otherwise.
 */
export function classifyCheckpointCut(processes: readonly ProcessSnapshot[]): 'progress' | 'parked' | 'terminal' {
  let cut: 'parked' | 'terminal' = 'terminal';
  for (const process of processes) {
    if (process.isTerminal) continue;
    const parked = process.status === 'waiting' || process.status === 'paused';
    if (!parked && process.unknownEffectIds().length === 0) return 'progress';
    cut = 'parked';
  }
  return cut;
}

export interface TreeCheckpointConfig {
  readonly kind: TreeCheckpointKind;
  readonly sequence: bigint;
  /** The acknowledged head this checkpoint advances; absent only for `start`. */
  readonly previous?: Digest;
  readonly snapshot: TreeSnapshot;
}

/**
 * A whole-tree checkpoint: absent-head creation (`start`, sequence 1) or a writer-fenced advance.
 * Identified by root, writer and sequence, never by digest, because execution can return to an
 * earlier cut (pause/resume) and that must not make an old commit replayable.
 */
export class TreeCheckpoint {
  readonly kind: TreeCheckpointKind;
  readonly sequence: bigint;
  readonly previous: Digest | undefined;
  readonly snapshot: TreeSnapshot;
  readonly #identity: string;
  #contentDigest: Digest | undefined;

  private constructor(config: TreeCheckpointConfig) {
    this.kind = config.kind;
    this.sequence = config.sequence;
    this.previous = config.previous;
    this.snapshot = config.snapshot;
    this.#identity = deriveIdentityText('commit:', 'tree-checkpoint', [
      config.snapshot.rootId.toString(),
      config.snapshot.incarnationId.toString(),
      config.sequence.toString(),
    ]);
  }

  static create(config: TreeCheckpointConfig): TreeCheckpoint {
    const { kind, sequence, previous, snapshot } = config;
    if (!treeCheckpointKinds.includes(kind)) throw invalid(`unknown checkpoint kind ${JSON.stringify(kind)}`);
    requireSequence(sequence);
    if (kind === 'start') {
      if (sequence !== 1n) throw invalid('a start checkpoint installs sequence 1');
      if (previous !== undefined) throw invalid('a start checkpoint has no previous head');
      const processes = snapshot.processSnapshots();
      if (processes.length !== 1 || processes[0]?.status !== 'running') {
        throw invalid('a start checkpoint captures exactly one running process');
      }
    } else {
      if (!(previous instanceof Digest)) throw invalid(`a ${kind} checkpoint needs the previous head digest`);
      if (previous.equals(snapshot.digest)) throw invalid(`a ${kind} checkpoint must change the head`);
      if (kind !== 'signals' && kind !== 'child_start') {
        const cut = classifyCheckpointCut(snapshot.processSnapshots());
        if (cut !== kind) throw invalid(`a ${kind} checkpoint does not match its ${cut} cut`);
      }
    }
    return new TreeCheckpoint(config);
  }

  get rootId(): ProcessId {
    return this.snapshot.rootId;
  }

  /** The opaque storage key; persist it verbatim. */
  identity(): string {
    return this.#identity;
  }

  /** Covers kind, predecessor and prospective cut; the sequence belongs to the identity. */
  contentDigest(): Digest {
    this.#contentDigest ??= Digest.of(
      encodeWire({
        Kind: this.kind,
        Previous: this.previous?.toString() ?? '',
        Snapshot: this.snapshot.digest.toString(),
      }),
    );
    return this.#contentDigest;
  }
}

export interface EffectBoundaryConfig {
  readonly sequence: bigint;
  /** True when a definite result replaces a retained Unknown (host adjudication or explicit replay). */
  readonly resolution: boolean;
  readonly processId: ProcessId;
  readonly effectId: EffectId;
  readonly previous: Digest;
  readonly snapshot: TreeSnapshot;
  /**
   * The batch a settled boundary also adopts: the settlement completed it, so the prospective tree
   * already holds the adoption (no prepared Step; the settlement delivered to the mailbox) and no
   * separate progress checkpoint follows. The batch as settled, before adoption.
   */
  readonly adopts?: PreparedStep;
}

/**
 * Binds one Effect fact (dispatch permission, first settlement, or resolution) to the prospective
 * tree, so no host can acknowledge dispatch or settlement apart from recovery state. Its kind is
 * read from the tree: pending, settled (the first settlement, Unknown included), or resolved.
 * Identified by root, Effect and kind, so each Effect has at most one of each for the life of the
 * tree, across writers.
 */
export class EffectBoundary {
  readonly kind: EffectBoundaryKind;
  readonly sequence: bigint;
  readonly processId: ProcessId;
  readonly effectId: EffectId;
  readonly previous: Digest;
  readonly snapshot: TreeSnapshot;
  /** See {@link EffectBoundaryConfig.adopts}. */
  readonly adopts: PreparedStep | undefined;
  readonly #identity: string;
  #contentDigest: Digest | undefined;

  private constructor(config: EffectBoundaryConfig, kind: EffectBoundaryKind) {
    this.kind = kind;
    this.adopts = config.adopts;
    this.sequence = config.sequence;
    this.processId = config.processId;
    this.effectId = config.effectId;
    this.previous = config.previous;
    this.snapshot = config.snapshot;
    this.#identity = deriveIdentityText('commit:', 'effect-boundary', [
      config.snapshot.rootId.toString(),
      config.effectId.toString(),
      kind,
    ]);
  }

  static create(config: EffectBoundaryConfig): EffectBoundary {
    requireSequence(config.sequence);
    if (!(config.previous instanceof Digest)) throw invalid('an effect boundary needs the previous head digest');
    if (config.previous.equals(config.snapshot.digest)) throw invalid('an effect boundary must change the head');
    const process = config.snapshot.process(config.processId);
    if (process === undefined) throw invalid(`the prospective tree has no process ${config.processId}`);
    if (config.adopts !== undefined) return EffectBoundary.#adopting(config, process);
    const phase = process.effectPhase(config.effectId);
    const settlement = process.effectSettlement(config.effectId);
    let kind: EffectBoundaryKind;
    if (phase === 'pending' && !config.resolution) kind = 'pending';
    else if (phase === 'settled' && !config.resolution) kind = 'settled';
    else if (phase === 'settled' && config.resolution && settlement !== undefined && settlement.status !== 'unknown') {
      kind = 'resolved';
    } else {
      throw invalid(
        `effect ${config.effectId} in phase ${phase ?? 'absent'} cannot form a ${config.resolution ? 'resolution' : 'boundary'}`,
      );
    }
    return new EffectBoundary(config, kind);
  }

  /**
   * A settled boundary that adopts its batch: the effect is definitely settled in `adopts`, which
   * nothing leaves unsettled, and the prospective process shows the adoption — no prepared Step,
   * the settlement in its mailbox.
   */
  static #adopting(config: EffectBoundaryConfig, process: ProcessSnapshot): EffectBoundary {
    const batch = config.adopts as PreparedStep;
    const effect = batch.effect(config.effectId);
    if (config.resolution || effect === undefined || effect.effect.target !== 'dispatcher' || !effect.definite || batch.frontier() !== undefined) {
      throw invalid(`effect ${config.effectId} does not complete the batch it would adopt`);
    }
    if (!batch.processId.equals(config.processId) || process.prepared !== undefined || process.mailbox.indexOf(SignalId.settlement(config.effectId)) === undefined) {
      throw invalid(`the prospective process ${config.processId} does not show the adoption of effect ${config.effectId}`);
    }
    return new EffectBoundary(config, 'settled');
  }

  get rootId(): ProcessId {
    return this.snapshot.rootId;
  }

  /** The Effect as this boundary records it (from the batch it adopts, if any). */
  effect(): PreparedEffect | undefined {
    return (this.adopts ?? this.snapshot.process(this.processId)?.prepared)?.effect(this.effectId);
  }

  /** The frozen request as recorded in the prospective tree (no attempt id). */
  request(): EffectRequest | undefined {
    const batch = this.adopts;
    const effect = batch?.effect(this.effectId);
    const process = this.snapshot.process(this.processId);
    if (batch === undefined || effect === undefined || process === undefined) return this.snapshot.effectRequest(this.processId, this.effectId);
    return EffectRequest.create({
      processId: this.processId,
      relation: process.relation,
      deploymentRef: process.deploymentRef,
      stepSequence: batch.stepSequence,
      batchIndex: effect.index,
      effect: effect.effect,
      incarnationId: this.snapshot.incarnationId,
    });
  }

  settlement(): Settlement | undefined {
    return this.effect()?.settlement;
  }

  identity(): string {
    return this.#identity;
  }

  /** Covers the whole boundary; equal identity and content still never authorise historical replay. */
  contentDigest(): Digest {
    this.#contentDigest ??= Digest.of(
      // Members in canonical order: encodeWire then skips its sort.
      encodeWire({
        EffectID: this.effectId.toString(),
        Kind: this.kind,
        Previous: this.previous.toString(),
        ProcessID: this.processId.toString(),
        Sequence: this.sequence,
        Snapshot: this.snapshot.digest.toString(),
      }),
    );
    return this.#contentDigest;
  }
}

export interface TreeActivationConfig {
  readonly previousIncarnationId: TreeIncarnationId;
  readonly previousDigest: Digest;
  /** The restored tree under its new writer identity. */
  readonly snapshot: TreeSnapshot;
}

/**
 * Changes writer identity and recovery state together (sequence 0 under the new incarnation), so
 * the previous Engine cannot commit again once a restore takes ownership.
 */
export class TreeActivation {
  readonly previousIncarnationId: TreeIncarnationId;
  readonly previousDigest: Digest;
  readonly snapshot: TreeSnapshot;
  readonly #identity: string;
  #contentDigest: Digest | undefined;

  private constructor(config: TreeActivationConfig) {
    this.previousIncarnationId = config.previousIncarnationId;
    this.previousDigest = config.previousDigest;
    this.snapshot = config.snapshot;
    this.#identity = deriveIdentityText('commit:', 'tree-activation', [
      config.snapshot.rootId.toString(),
      config.snapshot.incarnationId.toString(),
    ]);
  }

  static create(config: TreeActivationConfig): TreeActivation {
    if (!(config.previousDigest instanceof Digest)) throw invalid('an activation needs the previous head digest');
    if (config.previousIncarnationId.equals(config.snapshot.incarnationId)) {
      throw invalid('an activation must install a new writer incarnation');
    }
    return new TreeActivation(config);
  }

  get rootId(): ProcessId {
    return this.snapshot.rootId;
  }

  get incarnationId(): TreeIncarnationId {
    return this.snapshot.incarnationId;
  }

  identity(): string {
    return this.#identity;
  }

  /** Includes both preconditions: changing one under a retained identity is a content conflict. */
  contentDigest(): Digest {
    this.#contentDigest ??= Digest.of(
      encodeWire({
        PreviousIncarnationID: this.previousIncarnationId.toString(),
        PreviousTreeDigest: this.previousDigest.toString(),
        Snapshot: this.snapshot.digest.toString(),
      }),
    );
    return this.#contentDigest;
  }
}

/** Raised when a commit reuses an identity with different content, or replays a historical commit. */
export function commitConflict(detail = 'idempotency content differs'): KernelError {
  return new KernelError(ErrorCode.commitConflict, `committer boundary conflicts with committed content: ${detail}`);
}

/** Raised when the head is absent, another writer owns it, or the proposal is not its successor. */
export function treeIncarnationConflict(detail = 'authoritative head changed'): KernelError {
  return new KernelError(ErrorCode.treeIncarnationConflict, `tree incarnation conflict: ${detail}`);
}
