import { closeRedis, corked, duplicateRedis, isCluster, type RedisClient } from './connection.js';
import { type Digest, EffectBoundary, ErrorCode, KernelError, type ProcessId, TreeActivation, TreeCheckpoint, treeIncarnationConflict, type TreeIncarnationId, TreeSnapshot, type TreeStore } from '../../kernel/index.js';
import { committerUnavailable, mapScriptReply, StorageDeadlines, type ScriptResult } from './errors.js';
import { RedisEventLog } from './event-log.js';
import { type EventLogFields, logEntryFields } from './log-entry.js';
import type { RefCut } from './log-refs.js';
import type { LogRecord } from '../event-log.js';
import { checkMaxLen, defaultEventLogMaxLen, encodeHostWrites, type RedisCommitContext } from './host-writes.js';
import { checkKeyPrefix, checkRecordSuffix, defaultKeyPrefix, eventsKey, factsKey, headKey, ownerKey, purgedKey, recordKey, snapshotKey } from './keys.js';
import { runScript, runScriptThenWait } from './scripts.js';

export interface RedisTreeCommitterOptions {
  /** The client every storage call uses (not closed by the committer). Must not set ioredis `keyPrefix`. */
  readonly redis: RedisClient;
  /** Prefix of every key (default `scope`); see keys.ts for the layout. */
  readonly keyPrefix?: string;
  /** Independent deadline of each storage call in ms (default 5000). */
  readonly timeoutMs?: number;
  /** Host-owned shutdown: pending and later calls reject with `committer_unavailable`. */
  readonly shutdown?: AbortSignal;
  /** Approximate MAXLEN of each tree's event log (default 10 000). */
  readonly eventLogMaxLen?: number;
  /** How long a purge tombstone lives in ms; 0 (default) keeps it for good. */
  readonly purgeTombstoneTtlMs?: number;
  /** Called with each failed best-effort log append ({@link RedisEventLog.append}). */
  readonly onLogAppendError?: (error: unknown, lost: number) => void;
  /**
   * How long best-effort log entries wait for the tree's next commit to carry them (ms; default
   * {@link defaultLogAppendDelayMs}); see the event log's `appendDelayMs`.
   */
  readonly logAppendDelayMs?: number;
  /**
   * After each commit and purge script, `WAIT <replicas> <timeoutMs>`: the call is acknowledged only
   * once that many replicas hold its writes; fewer in time rejects with `committer_unavailable` (the
   * commit may have landed). Absent: no WAIT, and a failover may lose acknowledged commits (docs/redis.md).
   * WAIT blocks its connection, so these commits run on a connection of their own (a duplicate of
   * `redis`, opened on first use, closed by {@link RedisTreeCommitter.close}): reads never queue behind it.
   */
  readonly waitReplicas?: { readonly replicas: number; readonly timeoutMs: number };
}

/** What an acknowledged commit did. */
export interface CommitReceipt {
  /** `installed`: this call installed the head (and applied its context's writes); `duplicate`: an identical retry while current. */
  readonly outcome: 'installed' | 'duplicate';
  /** Ids of the log entries this call appended: the context's Events, then its entries (empty for a duplicate). */
  readonly eventIds: readonly string[];
}

/** The authoritative head with the fields the store keeps beside the snapshot. */
export interface StoredHead {
  readonly snapshot: TreeSnapshot;
  readonly digest: string;
  readonly incarnationId: TreeIncarnationId;
  readonly sequence: bigint;
}

/** A commit `reconcile` can judge. */
export type Commit = TreeCheckpoint | EffectBoundary | TreeActivation;

function receipt(result: ScriptResult): CommitReceipt {
  if (result.outcome === 'absent' || result.outcome === 'stale') throw committerUnavailable('commit', `unexpected reply (${result.outcome})`);
  return Object.freeze({ outcome: result.outcome, eventIds: Object.freeze([...result.entryIds]) });
}

/**
 * The Redis TreeCommitter: MemoryTreeCommitter's protocol (kernel-contract §3.6), each call one Lua
 * script that compares and advances the tree head atomically, with the same check order. Per tree
 * it keeps, under one hash tag, the head hash (snapshot bytes verbatim, digest, incarnation,
 * sequence as a decimal string) and the facts hash (identity → content digest, kept for the life of
 * the tree so historical replays stay refused).
 *
 * Each call takes an optional {@link RedisCommitContext}: the kernel's `CommitContext` (the Events
 * the Engine publishes once the commit is acknowledged) plus the host's write set (extra log
 * entries, idempotency records). The same script appends the Events and entries to the tree's
 * event log and sets the records only when it installs a new head — see {@link RedisCommitContext}.
 *
 * Failures: `commit_conflict` and `tree_incarnation_conflict` prove the proposal was refused.
 * Anything else — the per-call deadline, the host shutdown, a lost connection, a server error —
 * rejects with `committer_unavailable`: the head is unknown. The caller then either retries the
 * identical commit (the script acknowledges it only if fact content, sequence and head digest all
 * still match) or calls {@link reconcile}; a lost reply is never read as "unchanged".
 */
export class RedisTreeCommitter implements TreeStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #deadlines: StorageDeadlines;
  readonly #maxLen: number;
  readonly #tombstoneTtlMs: number;
  readonly #wait: { readonly replicas: number; readonly timeoutMs: number } | undefined;
  /** The connection WAITed commits run on (opened on first use). */
  #waitClient: RedisClient | undefined;
  #closed = false;
  /** The event logs the commits append to (same client, prefix, deadline and MAXLEN). */
  readonly events: RedisEventLog;

  constructor(options: RedisTreeCommitterOptions) {
    const { redis } = options;
    if (typeof redis?.defineCommand !== 'function') throw new TypeError('RedisTreeCommitter needs an ioredis client');
    if (redis.options.keyPrefix) {
      throw new TypeError('RedisTreeCommitter builds its own keys: use its keyPrefix option, not the ioredis keyPrefix');
    }
    this.#redis = redis;
    this.#prefix = checkKeyPrefix(options.keyPrefix ?? defaultKeyPrefix);
    this.#deadlines = new StorageDeadlines(options.timeoutMs ?? 5_000, options.shutdown);
    this.#maxLen = checkMaxLen(options.eventLogMaxLen ?? defaultEventLogMaxLen);
    const ttl = options.purgeTombstoneTtlMs ?? 0;
    if (!Number.isSafeInteger(ttl) || ttl < 0) throw new TypeError(`purgeTombstoneTtlMs must be a non-negative integer, got ${String(ttl)}`);
    this.#tombstoneTtlMs = ttl;
    const wait = options.waitReplicas;
    if (wait !== undefined) {
      if (!Number.isSafeInteger(wait.replicas) || wait.replicas < 1) throw new TypeError(`waitReplicas.replicas must be a positive integer, got ${String(wait.replicas)}`);
      if (!Number.isSafeInteger(wait.timeoutMs) || wait.timeoutMs < 1 || wait.timeoutMs >= this.#deadlines.timeoutMs) {
        throw new TypeError(`waitReplicas.timeoutMs must be an integer in 1..${this.#deadlines.timeoutMs - 1} (below the call deadline), got ${String(wait.timeoutMs)}`);
      }
      this.#wait = Object.freeze({ replicas: wait.replicas, timeoutMs: wait.timeoutMs });
    }
    this.events = new RedisEventLog({
      redis,
      keyPrefix: this.#prefix,
      timeoutMs: this.#deadlines.timeoutMs,
      shutdown: options.shutdown,
      maxLen: this.#maxLen,
      onAppendError: options.onLogAppendError,
      coalesceAppends: true,
      appendDelayMs: options.logAppendDelayMs ?? defaultLogAppendDelayMs,
    });
  }

  get keyPrefix(): string {
    return this.#prefix;
  }

  async commitCheckpoint(checkpoint: TreeCheckpoint, context?: RedisCommitContext): Promise<void> {
    await this.#checkpoint(checkpoint, context);
  }

  async commitEffect(boundary: EffectBoundary, context?: RedisCommitContext): Promise<void> {
    await this.#effect(boundary, context);
  }

  async activateTree(activation: TreeActivation, context?: RedisCommitContext): Promise<void> {
    await this.#activation(activation, context);
  }

  /**
   * An activation guarded by the tree's owner record (lua/takeOverTree-5.lua): it installs only while
   * the record still holds `expectedOwner` verbatim ('' = no record); otherwise, like a head that
   * moved, `tree_incarnation_conflict`. The new owner record belongs in `context.records`.
   */
  async takeOverTree(activation: TreeActivation, expectedOwner: string, context?: RedisCommitContext): Promise<CommitReceipt> {
    const root = activation.rootId;
    const cut = this.events.refs.cut(headKey(this.#prefix, root), true);
    const host = encodeHostWrites(this.#prefix, root, context, this.#maxLen, [], cut);
    const keys = [headKey(this.#prefix, root), factsKey(this.#prefix, root), eventsKey(this.#prefix, root), ownerKey(this.#prefix, root), snapshotKey(this.#prefix, root), ...host.keys];
    const args = [...activationArgs(activation), expectedOwner, ...host.args];
    return receipt(this.#defining(root, cut, await this.#script('takeOverTree', 'takeOverTree', keys, args)));
  }

  /**
   * Any of the three commits, with a receipt: whether this call installed the head (and applied
   * the context's writes) or acknowledged an identical retry, and the ids of the log entries it
   * appended.
   */
  commit(commit: Commit, context?: RedisCommitContext): Promise<CommitReceipt> {
    if (commit instanceof TreeCheckpoint) return this.#checkpoint(commit, context);
    if (commit instanceof EffectBoundary) return this.#effect(commit, context);
    if (commit instanceof TreeActivation) return this.#activation(commit, context);
    return Promise.reject(new TypeError('commit must be a TreeCheckpoint, an EffectBoundary or a TreeActivation'));
  }

  async loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return (await this.loadHead(rootId))?.snapshot;
  }

  /** The head with its stored digest and sequence; the stored digest must match the bytes. */
  async loadHead(rootId: ProcessId): Promise<StoredHead | undefined> {
    // One transaction: the head's fields and its snapshot bytes as of the same commit.
    const replies = await this.#call('loadTree', () =>
      this.#redis.multi().hmget(headKey(this.#prefix, rootId), 'digest', 'sequence', 'snapshot').get(snapshotKey(this.#prefix, rootId)).exec(),
    );
    if (replies === null) throw committerUnavailable('loadTree', 'the transaction was not run');
    const [[fieldsError, fields], [bytesError, bytes]] = replies as [[Error | null, (string | null)[]], [Error | null, string | null]];
    if (fieldsError !== null || bytesError !== null) throw committerUnavailable('loadTree', `redis failed: ${(fieldsError ?? bytesError)?.message}`, fieldsError ?? bytesError);
    const [digest, sequence, legacy] = fields;
    // A head written before the snapshot had a key of its own keeps the bytes in its `snapshot` field.
    const text = bytes ?? legacy;
    if (text === null || text === undefined) return undefined;
    const snapshot = TreeSnapshot.parse(text);
    if (digest !== snapshot.digest.toString() || typeof sequence !== 'string' || !/^(0|[1-9]\d{0,19})$/.test(sequence)) {
      throw new KernelError(
        ErrorCode.invalidTreeSnapshot,
        `stored head of ${rootId.toString()} is inconsistent (digest ${String(digest)}, sequence ${String(sequence)})`,
      );
    }
    if (!snapshot.rootId.equals(rootId)) {
      throw new KernelError(ErrorCode.invalidTreeSnapshot, `stored head of ${rootId.toString()} holds root ${snapshot.rootId.toString()}`);
    }
    return Object.freeze({ snapshot, digest, incarnationId: snapshot.incarnationId, sequence: BigInt(sequence) });
  }

  /**
   * After a lost reply: true only if the commit's fact holds its content AND the head is at the
   * commit's sequence AND has its prospective digest (kernel-contract §3.7). Finding the fact
   * alone proves nothing: after later progress or a new writer the commit is history. Read-only;
   * false means "not installed or no longer current" — reload the head before anything else.
   */
  async reconcile(commit: Commit): Promise<boolean> {
    const root = commit.rootId;
    const sequence = 'sequence' in commit ? commit.sequence.toString() : '0';
    const keys = [headKey(this.#prefix, root), factsKey(this.#prefix, root)];
    const args = [commit.identity(), commit.contentDigest().toString(), sequence, commit.snapshot.digest.toString()];
    const wait = this.#wait;
    const { reply, acknowledged } = await this.#call('reconcile', () =>
      wait === undefined
        ? runScript(this.#redis, 'reconcileCommit', keys, args).then((answer) => ({ reply: answer, acknowledged: 0 }))
        : runScriptThenWait(this.#waitConnection(), 'reconcileCommit', keys, args, wait),
    );
    if (reply !== 1 && reply !== 0) throw committerUnavailable('reconcile', `unexpected reply ${String(reply)}`);
    // With WAIT on, "installed" is only as good as its replicas: the same rule as the commit itself.
    if (reply === 1 && wait !== undefined && acknowledged < wait.replicas) {
      throw committerUnavailable('reconcile', `${acknowledged} of ${wait.replicas} replicas acknowledged within ${wait.timeoutMs} ms`);
    }
    return reply === 1;
  }

  /**
   * Deletes a finished tree's head, facts and event log, leaving a tombstone (`purged`) that makes
   * a replayed start checkpoint fail with `tree_incarnation_conflict` instead of recreating the
   * tree. "Finished" means every Process of the stored head is terminal; otherwise `tree_live`.
   * A commit landing between the check and the purge (e.g. an activation) makes it refuse with
   * `tree_incarnation_conflict`. Idempotency records are left to their TTL. Returns `absent` when
   * there is no head (never started or already purged).
   */
  async purgeTree(rootId: ProcessId): Promise<'purged' | 'absent'> {
    const head = await this.loadHead(rootId);
    if (head === undefined) return 'absent';
    const live = head.snapshot.processSnapshots().find((process) => !process.isTerminal);
    if (live !== undefined) {
      throw new KernelError(
        ErrorCode.treeLive,
        `tree ${rootId.toString()} is live: process ${live.processId.toString()} is ${live.status}; ` +
          'only a tree whose processes are all terminal can be purged',
      );
    }
    const keys = [headKey(this.#prefix, rootId), factsKey(this.#prefix, rootId), eventsKey(this.#prefix, rootId), purgedKey(this.#prefix, rootId), snapshotKey(this.#prefix, rootId)];
    const result = await this.#script('purgeTree', 'purgeTree', keys, [head.digest, String(this.#tombstoneTtlMs)]).catch((error: unknown) => {
      if (error instanceof KernelError && error.code === ErrorCode.treeIncarnationConflict) {
        throw treeIncarnationConflict('the head changed while purging');
      }
      throw error;
    });
    return result.outcome === 'absent' ? 'absent' : 'purged';
  }

  /** A host idempotency record written by a commit's context, or undefined. */
  async readRecord(rootId: ProcessId, suffix: string): Promise<string | undefined> {
    const key = recordKey(this.#prefix, rootId, checkRecordSuffix(suffix));
    return (await this.#call('readRecord', () => this.#redis.get(key))) ?? undefined;
  }

  /** Deletes a host record (a purged tree's tenant record; idempotency records expire on their own). */
  async deleteRecord(rootId: ProcessId, suffix: string): Promise<void> {
    const key = recordKey(this.#prefix, rootId, checkRecordSuffix(suffix));
    await this.#call('deleteRecord', () => this.#redis.del(key));
  }

  /** Ends event-log tails and refuses further calls. The ioredis client is the caller's to close. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.events.close();
    const waitClient = this.#waitClient;
    this.#waitClient = undefined;
    if (waitClient !== undefined) await closeRedis(waitClient, 500);
  }

  /** The connection of the WAITed commits: blocked while replicas answer, so not the shared one. */
  #waitConnection(): RedisClient {
    if (this.#closed) throw committerUnavailable('commit', 'the committer is closed');
    if (this.#waitClient === undefined) {
      const client = duplicateRedis(this.#redis);
      client.on('error', () => undefined); // failures reach the commit that meets them
      this.#waitClient = client;
    }
    return this.#waitClient;
  }

  #checkpoint(checkpoint: TreeCheckpoint, context: RedisCommitContext | undefined): Promise<CommitReceipt> {
    const root = checkpoint.rootId;
    const { snapshot } = checkpoint;
    const prefix = this.#prefix;
    return this.#carrying(root, `commitCheckpoint(${checkpoint.kind})`, 'commitCheckpoint', (leading, cut, whole) => {
      const host = encodeHostWrites(prefix, root, context, this.#maxLen, leading, cut);
      const keys = [headKey(prefix, root), factsKey(prefix, root), purgedKey(prefix, root), eventsKey(prefix, root), snapshotKey(prefix, root), ...host.keys];
      const args = [
        checkpoint.kind === 'start' ? 'start' : 'advance',
        checkpoint.identity(),
        checkpoint.contentDigest().toString(),
        checkpoint.sequence.toString(),
        checkpoint.previous?.toString() ?? '',
        snapshot.digest.toString(),
        snapshot.incarnationId.toString(),
        snapshotArgument(snapshot, checkpoint.kind === 'start' || whole ? undefined : checkpoint.previous),
        ...host.args,
      ];
      return { keys, args };
    });
  }

  #effect(boundary: EffectBoundary, context: RedisCommitContext | undefined): Promise<CommitReceipt> {
    const root = boundary.rootId;
    const { snapshot } = boundary;
    const prefix = this.#prefix;
    return this.#carrying(root, `commitEffect(${boundary.kind})`, 'commitEffect', (leading, cut, whole) => {
      const host = encodeHostWrites(prefix, root, context, this.#maxLen, leading, cut);
      const keys = [headKey(prefix, root), factsKey(prefix, root), eventsKey(prefix, root), snapshotKey(prefix, root), ...host.keys];
      const args = [
        boundary.identity(),
        boundary.contentDigest().toString(),
        boundary.sequence.toString(),
        boundary.previous.toString(),
        snapshot.digest.toString(),
        snapshot.incarnationId.toString(),
        snapshotArgument(snapshot, whole ? undefined : boundary.previous),
        ...host.args,
      ];
      return { keys, args };
    });
  }

  /**
   * A checkpoint or effect boundary whose script also carries the tree's best-effort entries still
   * queued (RedisEventLog.takeUnsent): published before this commit, they are appended ahead of its own
   * entries when it installs — one script, where an appendLog script used to go first (entries that would
   * not fit beside the commit's own within one script's bound go first on their own). A refused commit
   * (conflict, duplicate, bad arguments) wrote none of them: they are appended on their own. A commit
   * whose reply was lost may or may not have written them: they are counted lost, never written twice.
   * The receipt's ids are the commit's own entries, as without carrying.
   *
   * A large tree's snapshot goes as a splice of the stored one (see {@link snapshotArgument}); should
   * the script find other bytes there, it writes nothing and the commit is sent again with the
   * snapshot whole (`whole`), carrying the same entries.
   */
  async #carrying(
    rootId: ProcessId,
    what: string,
    name: string,
    build: (leading: readonly EventLogFields[], cut: RefCut, whole: boolean) => { readonly keys: readonly string[]; readonly args: readonly string[] },
  ): Promise<CommitReceipt> {
    const root = rootId.toString();
    const head = headKey(this.#prefix, root);
    let carried: readonly LogRecord[] = [];
    let cut = this.events.refs.cut(head, true);
    let result: ScriptResult;
    try {
      result = await corked(this.#redis, () => {
        carried = this.#closed ? [] : this.events.takeUnsent(root, maxCarriedEntries);
        let encoded: { readonly keys: readonly string[]; readonly args: readonly string[] };
        try {
          encoded = build(carried.map(logEntryFields), cut, false);
        } catch (error) {
          if (carried.length === 0) throw error;
          // Too many for one script beside the commit's own (or refused): they go first, on their own
          // (issued now, so still ahead of the commit), and the commit is built as it would have been.
          this.events.resend(root, carried);
          carried = [];
          cut = this.events.refs.cut(head, true);
          encoded = build([], cut, false);
        }
        return this.#script(what, name, encoded.keys, encoded.args);
      });
      if (result.outcome === 'stale') {
        const encoded = build(carried.map(logEntryFields), cut, true);
        result = await this.#script(what, name, encoded.keys, encoded.args);
      }
    } catch (error) {
      if (error instanceof KernelError && refusedCodes.has(error.code)) this.events.resend(root, carried);
      else this.events.lost(error, carried.length);
      throw error;
    }
    if (result.outcome === 'duplicate') this.events.resend(root, carried);
    this.#defining(rootId, cut, result);
    return receipt(result.outcome === 'installed' ? { ...result, entryIds: result.entryIds.slice(carried.length) } : result);
  }

  async #activation(activation: TreeActivation, context: RedisCommitContext | undefined): Promise<CommitReceipt> {
    const root = activation.rootId;
    const cut = this.events.refs.cut(headKey(this.#prefix, root), true);
    const host = encodeHostWrites(this.#prefix, root, context, this.#maxLen, [], cut);
    const keys = [headKey(this.#prefix, root), factsKey(this.#prefix, root), eventsKey(this.#prefix, root), snapshotKey(this.#prefix, root), ...host.keys];
    const args = [...activationArgs(activation), ...host.args];
    return receipt(this.#defining(root, cut, await this.#script('activateTree', 'activateTree', keys, args)));
  }

  /**
   * Once a script that defined refs is acknowledged — it installed its head, or was the identical retry
   * of one that did — the head holds them: later best-effort appends may cut entries naming them.
   */
  #defining(rootId: ProcessId, cut: RefCut, result: ScriptResult): ScriptResult {
    if (result.outcome === 'installed' || result.outcome === 'duplicate') this.events.refs.markDefined(headKey(this.#prefix, rootId), cut.defined);
    return result;
  }

  #call<T>(what: string, run: () => Promise<T>): Promise<T> {
    return corked(this.#redis, () => {
      // Best-effort entries appended so far go first (in the same write): an attempt event
      // published before a commit stays before that commit's entries in the log.
      this.events.flush();
      if (this.#closed) return Promise.reject(committerUnavailable(what, 'the committer is closed'));
      return this.#deadlines.run(what, run);
    });
  }

  /**
   * Whether a tree's commit script may not touch keys outside the tree's hash slot (Redis Cluster):
   * directory members (`RedisCommitContext.members`) must then be written before the commit instead.
   */
  get spansSlots(): boolean {
    return isCluster(this.#redis);
  }

  /**
   * The client on which a command issued after a commit (by a call that returned before any await)
   * runs after that commit, and is seen by nobody before the commit is: one server, commands in order,
   * no replica acknowledgement still awaited. Undefined on a cluster (other keys, other nodes) or when
   * commits wait for replicas (a later command could run while the commit can still be lost to a failover).
   */
  get orderedClient(): RedisClient | undefined {
    return this.#wait === undefined && !isCluster(this.#redis) ? this.#redis : undefined;
  }

  /**
   * Runs `send` so that the commands it issues synchronously on this committer's client leave in
   * one write (see {@link corked}): a host's writes that precede a commit, issued together.
   */
  together<T>(send: () => T): T {
    return corked(this.#redis, send);
  }

  #script(what: string, name: string, keys: readonly string[], args: readonly string[]): Promise<ScriptResult> {
    const wait = this.#wait;
    if (wait === undefined) return this.#call(what, () => runScript(this.#redis, name, keys, args).then((reply) => mapScriptReply(what, reply)));
    return this.#call(what, async () => {
      const { reply, acknowledged } = await runScriptThenWait(this.#waitConnection(), name, keys, args, wait);
      const result = mapScriptReply(what, reply);
      // A refusal wrote nothing, so only a write (or the duplicate of one) needs its replicas.
      if (result.outcome !== 'absent' && result.outcome !== 'stale' && acknowledged < wait.replicas) {
        throw committerUnavailable(what, `${acknowledged} of ${wait.replicas} replicas acknowledged within ${wait.timeoutMs} ms, so a failover could lose it; it may have landed`);
      }
      return result;
    });
  }
}

/** Best-effort entries a commit carries at most (more leave as their own appendLog scripts, first). */
const maxCarriedEntries = 256;

/**
 * The snapshot argument of a commit script: the canonical bytes, or — for an advance of a tree large
 * enough to be hashed in pieces, against the stored head `previous` — a splice `+<kept>,<total>,<tail>`
 * (commitCheckpoint's and commitEffect's headers): the stored snapshot's first `kept` bytes are the
 * same, so only the text after them travels. A history of thousands of retained signals is then not
 * sent to Redis whole for each new one.
 */
function snapshotArgument(snapshot: TreeSnapshot, previous: Digest | undefined): string {
  const edit = previous === undefined ? undefined : snapshot.editOf(previous);
  if (edit === undefined) return snapshot.json();
  return `+${edit.keptBytes},${snapshot.encodedSize},${edit.tail}`;
}

/**
 * Best-effort entries wait this long (ms) for a commit to carry them. An effect that settles within
 * it has its attempt events written by the settled boundary's script instead of a script of their
 * own, sent while the worker claims. Open SSE streams (they tail the log) see deltas that much later;
 * issue 13 allows batches of up to 10 ms for live streaming.
 */
export const defaultLogAppendDelayMs = 5;

/** A commit refused with one of these wrote nothing, its carried entries included. */
const refusedCodes: ReadonlySet<string> = new Set([ErrorCode.commitConflict, ErrorCode.treeIncarnationConflict, ErrorCode.invalidCommit]);

/** ARGV[1..7] of activateTree and takeOverTree (see their headers). */
function activationArgs(activation: TreeActivation): string[] {
  const { snapshot } = activation;
  return [
    activation.identity(),
    activation.contentDigest().toString(),
    activation.previousIncarnationId.toString(),
    activation.previousDigest.toString(),
    snapshot.digest.toString(),
    snapshot.incarnationId.toString(),
    snapshot.json(),
  ];
}
