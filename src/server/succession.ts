import type { Logger } from 'pino';
import { cancelStoredTree, ErrorCode, hasCode, KernelError, Payload, type StoredCancellation, TreeIncarnationId, type TreeSnapshot, validDiagnostic } from '../kernel/index.js';
import { codedError, HostErrorCode } from '../errors.js';
import type { SuccessionRecordWrite, SuccessionStore } from '../store/succession.js';
import type { DeploymentCatalog } from './catalog.js';
import { assessmentOf, type Drift, type RestoreDecision } from './drift.js';
import type { Json, SuccessionView } from './host.js';

/**
 * Moving a drifted tree on (docs/deployment-versions.md): the kernel never restores a tree under
 * another DeploymentRef, so the Host starts a **successor tree** on the current version, whose start
 * input the current version's restoreDecider derives from the old root's committed state, and
 * cancels the old tree. One recorded Host transaction, resumable from its record:
 *
 * 1. decide (nothing written on a refusal, an undecidable drift, or an input the current version's
 *    schema refuses);
 * 2. one commit over exactly the head decided on installs the old tree's final head — every live
 *    process cancelled without its Definition (kernel/stored-cancellation.ts: the root with
 *    `host_cancellation` and a reason naming the successor's version, descendants with
 *    `parent_cancellation`), under a new incarnation that fences every earlier writer — together with
 *    its `agent.process.finished` events and the succession record. So the old tree is cancelled
 *    exactly when it is superseded: there is no state in which one holds without the other. From then
 *    on no restore, takeover or command runs it again (`tree_superseded`);
 * 3. start the successor with an Idempotency-Key derived from the old root (a retry finds the same one);
 * 4. link both ways (old → successor in the record, successor → predecessor beside its head).
 *
 * A crash after 2 leaves a pending record beside a cancelled head; the next `allowDrift` restore of the
 * old tree resumes at 3 with the recorded input (the decider is not asked again).
 */

/** The succession record (JSON) beside the superseded tree's head. */
interface SuccessionRecord {
  readonly predecessorId: string;
  readonly successorId: string | null;
  readonly fromRef: string;
  readonly toRef: string;
  readonly toName: string;
  readonly differs: readonly string[];
  readonly reason: string;
  readonly decidedAt: string;
  readonly decidedBy: string | null;
  readonly headDigest: string;
  readonly input: Json;
  readonly tenant: string | null;
}

export interface SuccessionOptions {
  readonly catalog: DeploymentCatalog;
  readonly store: SuccessionStore;
  /** Starts the successor (Starts, with the Idempotency-Key given): resolves with its root id. */
  readonly start: (request: { readonly deployment: string; readonly input: Json; readonly tenant?: string }, idempotencyKey: string) => Promise<string>;
  readonly tenantOf: (root: string) => Promise<string | undefined>;
  /**
   * Installs the superseded tree's final head over `replaced` with its events and the succession
   * records (`HostCommitter.finalizeTree`).
   */
  readonly finalize: (replaced: TreeSnapshot, cancellation: StoredCancellation, records: readonly SuccessionRecordWrite[]) => Promise<void>;
  readonly now: () => Date;
  /** Tests: runs after the supersede commit, before the successor starts (a throw stands for a crash there). */
  readonly afterSupersede?: (root: string) => Promise<void>;
  readonly logger?: Logger;
}

export class Succession {
  readonly #options: SuccessionOptions;
  /** Predecessor links seen (write-once records, so they can be kept). */
  readonly #predecessors = new Map<string, string>();

  constructor(options: SuccessionOptions) {
    this.#options = options;
  }

  /** The succession of `root` as the tree view shows it, or null. */
  async view(root: string): Promise<SuccessionView | null> {
    const record = await this.#read(root);
    if (record === undefined) return null;
    return { successorId: record.successorId, reason: record.reason, decidedAt: record.decidedAt, fromRef: record.fromRef, toRef: record.toRef, differs: record.differs };
  }

  async predecessorOf(root: string): Promise<string | null> {
    const known = this.#predecessors.get(root);
    if (known !== undefined) return known;
    const predecessor = (await this.#options.store.predecessorOf(root)) ?? null;
    if (predecessor !== null) this.#predecessors.set(root, predecessor); // written once, never changed
    return predecessor;
  }

  /** The predecessor this node has seen recorded for `root` (no storage read), or undefined. */
  knownPredecessorOf(root: string): string | undefined {
    return this.#predecessors.get(root);
  }

  /** Throws `tree_superseded` when `root` was moved on (a restore, takeover or command must not run it). */
  async assertNotSuperseded(root: string): Promise<void> {
    const record = await this.#read(root);
    if (record === undefined) return;
    const successor = record.successorId === null ? 'a successor whose start is unfinished (retry the move-on)' : `tree ${record.successorId}`;
    throw codedError(HostErrorCode.treeSuperseded, `tree ${root} was moved on to ${successor} on ${record.toRef}; it never runs again (reads still work)`);
  }

  /**
   * Moves the drifted tree `head` on (or finishes a move-on a crash interrupted). Resolves once the
   * successor runs and both links are recorded.
   */
  async moveOn(head: TreeSnapshot, drift: Drift | undefined, actor: string | undefined): Promise<void> {
    const root = head.rootId.toString();
    let record = await this.#read(root);
    if (record?.successorId !== undefined && record.successorId !== null) return;
    if (record === undefined) {
      if (drift === undefined) throw new KernelError(ErrorCode.invalidUsage, 'moveOn needs a drifted tree');
      record = await this.#supersede(head, await this.#decide(head, drift, actor));
      await this.#options.afterSupersede?.(root);
    }
    const successor = await this.#options.start(
      { deployment: record.toName, input: record.input, ...(record.tenant === null ? {} : { tenant: record.tenant }) },
      `scope.succession:${root}`,
    );
    await this.#options.store.complete(root, JSON.stringify({ ...record, successorId: successor }), successor);
    this.#predecessors.set(successor, root);
    this.#options.logger?.info({ rootId: root, successorId: successor, toRef: record.toRef }, 'deployment drift: successor tree started');
  }

  /**
   * Step 2: cancels the tree and records its succession in one commit over exactly `head`. Resolves
   * with the record that holds: `decided`, or the one a concurrent move-on of the same head committed.
   */
  async #supersede(head: TreeSnapshot, decided: SuccessionRecord): Promise<SuccessionRecord> {
    const root = head.rootId.toString();
    const cancellation = cancelStoredTree(head, { reason: supersededReason(decided), incarnationId: TreeIncarnationId.random(), now: this.#options.now() });
    try {
      await this.#options.finalize(head, cancellation, this.#options.store.supersedeRecords(JSON.stringify(decided)));
    } catch (error) {
      if (!hasCode(error, ErrorCode.treeIncarnationConflict) && !hasCode(error, ErrorCode.commitConflict)) throw error;
      // The head moved: another move-on of it won (its record says so), or it changed under the decision.
      const existing = await this.#read(root);
      if (existing !== undefined) return existing;
      throw new KernelError(ErrorCode.treeIncarnationConflict, `tree ${root} changed while its move-on was decided; nothing was written, retry`, { cause: error });
    }
    this.#options.logger?.warn(
      { rootId: root, fromRef: decided.fromRef, toRef: decided.toRef, differs: decided.differs, reason: decided.reason, decidedBy: decided.decidedBy, canceled: cancellation.events.length },
      'deployment drift: the tree is cancelled and superseded; it moves on to a successor tree',
    );
    return decided;
  }

  async #decide(head: TreeSnapshot, drift: Drift, actor: string | undefined): Promise<SuccessionRecord> {
    const root = head.rootId.toString();
    const logger = this.#options.logger;
    if (head.root.isTerminal) {
      throw new KernelError(ErrorCode.processFinished, `tree ${root} has finished (${head.root.status}): there is nothing to move on; reads still work`);
    }
    const current = drift.current === undefined ? undefined : this.#options.catalog.resolve(drift.current);
    const decider = current === undefined ? undefined : this.#options.catalog.restoreDecider(current.ref);
    if (current === undefined || decider === undefined) {
      const why = current === undefined ? `no version of ${drift.stored.name} is registered here` : `the current version ${current.ref.toString()} exports no restoreDecider`;
      logger?.warn({ rootId: root, storedRef: drift.stored.toString(), differs: drift.differs }, `deployment drift: undecidable (${why})`);
      throw codedError(HostErrorCode.deploymentDriftUndecidable, `tree ${root} runs ${drift.stored.toString()}; it cannot be moved on: ${why}`);
    }
    const assessment = assessmentOf(head, { ...drift, current: current.ref });
    let decision: RestoreDecision;
    try {
      decision = checkDecision(await decider(assessment));
    } catch (error) {
      // Fail secure: a decider that throws or answers nonsense refuses.
      decision = { accept: false, reason: `the restoreDecider failed: ${error instanceof Error ? error.message : String(error)}` };
    }
    if (!decision.accept) {
      logger?.warn({ rootId: root, storedRef: drift.stored.toString(), toRef: current.ref.toString(), reason: decision.reason }, 'deployment drift: the restoreDecider refused the move-on');
      throw codedError(HostErrorCode.deploymentDriftRefused, `the restoreDecider of ${current.ref.toString()} refused to move tree ${root} on: ${decision.reason}`);
    }
    // Checked before anything is written: a successor that could not start must not leave the old tree fenced.
    let input: Payload;
    try {
      input = Payload.encode(decision.input);
    } catch (error) {
      throw codedError(HostErrorCode.deploymentDriftRefused, `the restoreDecider's input is not JSON: ${error instanceof Error ? error.message : String(error)}`, error);
    }
    current.descriptor.inputSchema.validate(input, 'successor input');
    return {
      predecessorId: root,
      successorId: null,
      fromRef: drift.stored.toString(),
      toRef: current.ref.toString(),
      toName: current.ref.name,
      differs: drift.differs,
      reason: decision.reason,
      decidedAt: this.#options.now().toISOString(),
      decidedBy: actor ?? null,
      headDigest: head.digest.toString(),
      input: input.decode() as Json,
      tenant: (await this.#options.tenantOf(root)) ?? null,
    };
  }

  async #read(root: string): Promise<SuccessionRecord | undefined> {
    const text = await this.#options.store.read(root);
    return text === undefined ? undefined : parseRecord(text);
  }
}

function checkDecision(value: unknown): RestoreDecision {
  const decision = value as Partial<{ accept: unknown; reason: unknown; input: unknown }> | null;
  if (typeof decision !== 'object' || decision === null || typeof decision.accept !== 'boolean' || typeof decision.reason !== 'string' || decision.reason === '') {
    throw new TypeError('a decision is {accept: boolean, reason: non-empty string, input when accepted}');
  }
  if (decision.accept && !('input' in decision)) throw new TypeError('an accepting decision names the successor input');
  return decision.accept ? { accept: true, reason: decision.reason, input: decision.input } : { accept: false, reason: decision.reason };
}

/** The root's cancellation reason: it names the successor's version and why the decider accepted (bounded, as every reason is). */
function supersededReason(record: SuccessionRecord): string {
  const short = `superseded: moved on to a successor tree on ${record.toRef}`;
  const full = `${short} (${record.reason})`;
  return validDiagnostic(full) ? full : short;
}

function parseRecord(text: string): SuccessionRecord {
  return JSON.parse(text) as SuccessionRecord;
}
