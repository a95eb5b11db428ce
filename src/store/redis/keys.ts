import { ErrorCode, KernelError, type ProcessId } from '../../kernel/index.js';
import { successionRecordSuffix } from '../succession.js';

/**
 * Every Redis key the store uses, built in this one file. All keys of one tree share the hash tag
 * `{<rootId>}` (`<prefix>:{process:…}:<kind>`), so each script touches exactly one cluster slot.
 *
 * | key                                 | type   | holds                                                  |
 * |-------------------------------------|--------|--------------------------------------------------------|
 * | `<prefix>:{<root>}:head`            | hash   | snapshot, digest, incarnation, sequence                |
 * | `<prefix>:{<root>}:facts`           | hash   | commit identity → content digest                       |
 * | `<prefix>:{<root>}:events`          | stream | the durable event log (approximate MAXLEN)             |
 * | `<prefix>:{<root>}:purged`          | string | the final head digest of a purged tree (tombstone)     |
 * | `<prefix>:{<root>}:record:<suffix>` | string | a host idempotency record (optional TTL)               |
 *
 * Keys that span trees (directories: they only point at roots, the heads stay authoritative):
 *
 * | key                                 | type   | holds                                                  |
 * |-------------------------------------|--------|--------------------------------------------------------|
 * | `<prefix>:roots`                    | zset   | the root index, `<start ms>:<root>` members (lex order) |
 * | `<prefix>:roots:deployment:<name>`  | zset   | the same, for one deployment name                      |
 * | `<prefix>:waits:<shard>`            | hash   | open-wait index shard: `<root> <process> <wait>` → entry JSON (shard = hash of root mod N) |
 * | `<prefix>:timers:<shard>`           | zset   | durable timer index shard: `<root> <process> <effect>` → due instant (ms) |
 * | `<prefix>:process-root:<process>`   | string | the root of a non-root process (a directory: any node finds a child's tree) |
 * | `<prefix>:idempotency:<sha256>`     | string | an Idempotency-Key pointer (reserved/committing/root)  |
 * | `<prefix>:streams:key:<keyId>`      | zset   | an API key's open SSE streams → lease expiry (ms)       |
 * | `<prefix>:ratelimit:<keyId or ip>`  | string | @fastify/rate-limit's counter for one caller (TTL)     |
 *
 * No file outside this one forms a Redis key (a layering test checks it).
 */

/** The default key prefix. */
export const defaultKeyPrefix = 'scope';

const prefixPattern = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * Checks a key prefix (a configuration error is a TypeError): 1–64 characters of `[A-Za-z0-9_.:-]`.
 * Braces are refused because Redis Cluster hashes the first `{…}` of a key, which must be the
 * tree's root id.
 */
export function checkKeyPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || !prefixPattern.test(prefix)) {
    throw new TypeError(`redis key prefix must be 1-64 characters of [A-Za-z0-9_.:-], got ${JSON.stringify(prefix)}`);
  }
  return prefix;
}

const suffixPattern = /^[\x21-\x7e]{1,256}$/;

/** Checks an idempotency record suffix: 1–256 printable ASCII characters, no spaces. */
export function checkRecordSuffix(suffix: unknown): string {
  if (typeof suffix !== 'string' || !suffixPattern.test(suffix)) {
    throw new KernelError(
      ErrorCode.invalidCommit,
      `idempotency record key suffix must be 1-256 printable ASCII characters, got ${JSON.stringify(suffix)}`,
    );
  }
  return suffix;
}

function root(rootId: ProcessId | string): string {
  return typeof rootId === 'string' ? rootId : rootId.toString();
}

/** Whether `key` is one of this prefix's keys (a commit may add members only to its own directories). */
export function isKeyUnder(prefix: string, key: string): boolean {
  return key.startsWith(`${prefix}:`);
}

/** `<prefix>:{<root>}`: the part every key of one tree starts with. */
export function treeKeyBase(prefix: string, rootId: ProcessId | string): string {
  return `${prefix}:{${root(rootId)}}`;
}

/**
 * The head hash: `digest`, `incarnation`, `sequence` (decimal uint64). (A head written before the
 * snapshot key existed also holds `snapshot`: read when the snapshot key is absent.)
 */
export function headKey(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:head`;
}

/**
 * The head's snapshot: its canonical JSON bytes, a string of its own so that a commit can rewrite just
 * the end of a large one in place (see snapshotWrite in lua/includes/head.lua).
 */
export function snapshotKey(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:snapshot`;
}

/** The facts hash: commit identity → content digest, kept for the life of the tree. */
export function factsKey(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:facts`;
}

/** The event-log stream. */
export function eventsKey(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:events`;
}

/** The tombstone a purge leaves, so a replayed start cannot recreate the tree. */
export function purgedKey(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:purged`;
}

/** One host idempotency record. */
export function recordKey(prefix: string, rootId: ProcessId | string, suffix: string): string {
  return `${treeKeyBase(prefix, rootId)}:record:${checkRecordSuffix(suffix)}`;
}

/** The root index behind `GET /v1/processes` (a sorted set read in lexicographic order). */
export function rootIndexKey(prefix: string): string {
  return `${prefix}:roots`;
}

/** The root index of one deployment name (a qualified name: `[a-z][a-z0-9._-]`, safe in a key). */
export function deploymentRootIndexKey(prefix: string, deployment: string): string {
  if (!/^[a-z][a-z0-9._-]{0,127}$/.test(deployment)) throw new TypeError(`a deployment name is a qualified name, got ${JSON.stringify(deployment)}`);
  return `${prefix}:roots:deployment:${deployment}`;
}

/**
 * One shard of the open-wait index (`GET /v1/waits`): a hash whose fields point at waits of many
 * trees, so it lives outside every hash tag; each shard is its own key (its own cluster slot).
 */
export function waitIndexShardKey(prefix: string, shard: number): string {
  if (!Number.isInteger(shard) || shard < 0 || shard > 1023) throw new TypeError(`a wait index shard is an integer in 0..1023, got ${String(shard)}`);
  return `${prefix}:waits:${shard}`;
}

/**
 * One shard of the durable timer index (src/server/timers/): a sorted set of due instants whose
 * members name timer effects of many trees, outside every hash tag, each shard its own key.
 */
export function timerIndexShardKey(prefix: string, shard: number): string {
  if (!Number.isInteger(shard) || shard < 0 || shard > 1023) throw new TypeError(`a timer index shard is an integer in 0..1023, got ${String(shard)}`);
  return `${prefix}:timers:${shard}`;
}

/**
 * One shard of the Unknown-outcome index (`GET /v1/effects?status=unknown`): like the open-wait index, a
 * hash whose fields point at effects of many trees, outside every hash tag, each shard its own key.
 */
export function unknownIndexShardKey(prefix: string, shard: number): string {
  if (!Number.isInteger(shard) || shard < 0 || shard > 1023) throw new TypeError(`an unknown index shard is an integer in 0..1023, got ${String(shard)}`);
  return `${prefix}:unknowns:${shard}`;
}

/** The pointer of an Idempotency-Key digest (outside any tree's hash tag: it only names a root). */
export function idempotencyPointerKey(prefix: string, keyDigest: string): string {
  if (!/^[0-9a-f]{64}$/.test(keyDigest)) throw new TypeError(`an idempotency key digest is 64 lowercase hex digits, got ${JSON.stringify(keyDigest)}`);
  return `${prefix}:idempotency:${keyDigest}`;
}

/** An API key's open stream slots (key ids are 1–64 of `[A-Za-z0-9._-]`). */
export function streamSlotsKey(prefix: string, keyId: string): string {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(keyId)) throw new TypeError(`a stream-slot holder is an API key id, got ${JSON.stringify(keyId)}`);
  return `${prefix}:streams:key:${keyId}`;
}

/** The prefix @fastify/rate-limit puts before a caller's key (it forms the rest itself). */
export function rateLimitNamespace(prefix: string): string {
  return `${prefix}:ratelimit:`;
}

/*
 * Effect transport evidence (src/transport/bullmq/): claims and settlements of dispatch attempts,
 * under the tree's hash tag so one script fences a claim against the head in one slot.
 *
 * | key                                       | type | holds                                                     |
 * |-------------------------------------------|------|-----------------------------------------------------------|
 * | `<prefix>:{<root>}:record:dispatch:<effectId>` | string | which incarnation may dispatch the effect, or `settled` (host write set) |
 * | `<prefix>:{<root>}:attempt:<attemptId>`   | hash | one attempt: state, incarnation, effect, claim, lease     |
 * | `<prefix>:{<root>}:inbox:<effectId>`      | hash | attemptId → settlement JSON (first write wins); cleared by the settled boundary |
 * | `<prefix>:{<root>}:claims`                | hash | effectId → the one attempt that ever claimed a `never` effect |
 * | `<prefix>:{<root>}:current`               | hash | effectId → the attempt claimed last (a restored owner waits on it) |
 * | `<prefix>:{<root>}:settled`               | hash | effectId → the attempt that settled it definitely         |
 * | `<prefix>:{<root>}:executions`            | hash | effectId → executions started (counted at claim time)     |
 *
 * The worker registry (src/store/redis/worker-registry.ts), outside any tree, in one `{workers}` slot
 * so a heartbeat is one script; both keys expire once every worker has been silent for its TTL:
 *
 * | key                                       | type | holds                                                     |
 * |-------------------------------------------|------|-----------------------------------------------------------|
 * | `<prefix>:{workers}:live`                 | zset | worker id → heartbeat expiry (ms, Redis clock)            |
 * | `<prefix>:{workers}:status`               | hash | worker id → what it serves: refs, process keys (JSON)     |
 */

/** What every attempt record key of a tree starts with (scripts append an attempt id they read). */
export function attemptKeyPrefix(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:`;
}

/** One dispatch attempt's record (`attempt:<hex>` is the kernel's EffectAttemptId text). */
export function attemptKey(prefix: string, rootId: ProcessId | string, attemptId: string): string {
  if (!/^attempt:[0-9a-f]{32}$/.test(attemptId)) throw new TypeError(`an attempt id is attempt:<32 hex>, got ${JSON.stringify(attemptId)}`);
  return `${treeKeyBase(prefix, rootId)}:${attemptId}`;
}

const effectIdPattern = /^effect:[0-9a-f]{64}$/;

function checkEffectId(effectId: string): string {
  if (!effectIdPattern.test(effectId)) throw new TypeError(`an effect id is effect:<64 hex>, got ${JSON.stringify(effectId)}`);
  return effectId;
}

/** One effect's settlement inbox (per effect, so a restored owner finds an earlier attempt's settlement directly). */
export function effectInboxKey(prefix: string, rootId: ProcessId | string, effectId: string): string {
  return `${treeKeyBase(prefix, rootId)}:inbox:${checkEffectId(effectId)}`;
}

/** The record suffix of an effect's dispatch permit (a host record written with the boundary that grants it). */
export function dispatchPermitSuffix(effectId: string): string {
  return `dispatch:${checkEffectId(effectId)}`;
}

/** The tree's last claimed attempt per effect. */
export function currentClaimsKey(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:current`;
}

/** The tree's once-ever claims of `never`-replay effects. */
export function neverClaimsKey(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:claims`;
}

/** The tree's definitely settled effects (a later attempt of one is refused). */
export function settledEffectsKey(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:settled`;
}

/** Executions started per effect, counted by the claim (evidence for tests and operators). */
export function executionsKey(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:executions`;
}

/** The worker registry's heartbeats: worker id → expiry (a directory, not tree state). */
export function workerLiveKey(prefix: string): string {
  return `${prefix}:{workers}:live`;
}

/** The worker registry's statuses: worker id → the refs and process keys it serves (JSON). */
export function workerStatusKey(prefix: string): string {
  return `${prefix}:{workers}:status`;
}

/** Pub/sub channels of the transport: `settled` (owner wake-ups) and `cancel` (worker aborts). Not keys. */
export function transportChannel(prefix: string, kind: 'settled' | 'cancel'): string {
  return `${prefix}:transport:${kind}`;
}

/*
 * Nodes and ownership (src/server/ownership/, docs/redis.md "Nodes"). A node's keys share the hash
 * tag `{node:<id>}`; a tree's owner record is under the tree's own tag, beside its head.
 *
 * | key                                  | type   | holds                                                      |
 * |--------------------------------------|--------|------------------------------------------------------------|
 * | `<prefix>:nodes`                     | set    | every node id that registered (a directory)                |
 * | `<prefix>:{node:<id>}:lease`         | hash   | epoch, url, refs; PX = the lease (expires on the server)   |
 * | `<prefix>:{node:<id>}:epoch`         | string | the node id's registration counter (never deleted)         |
 * | `<prefix>:{node:<id>}:trees`         | set    | roots the node owned (a directory, checked against owner records) |
 * | `<prefix>:{<root>}:record:owner`     | string | `{node, epoch, incarnation}`: written only by start and activation commits |
 */

const nodeIdKeyPattern = /^[A-Za-z0-9._-]{1,64}$/;

function checkNodeId(nodeId: string): string {
  if (!nodeIdKeyPattern.test(nodeId)) throw new TypeError(`a node id is 1-64 of [A-Za-z0-9._-], got ${JSON.stringify(nodeId)}`);
  return nodeId;
}

/** The secret the nodes of one Redis share to sign node tokens (src/app/auth/node-tokens.ts). */
export function nodeTokenSecretKey(prefix: string): string {
  return `${prefix}:cluster:node-token-secret`;
}

/** The directory of registered node ids. */
export function nodeRegistryKey(prefix: string): string {
  return `${prefix}:nodes`;
}

/** A node's lease hash (its TTL is the lease). */
export function nodeLeaseKey(prefix: string, nodeId: string): string {
  return `${prefix}:{node:${checkNodeId(nodeId)}}:lease`;
}

/** A node id's registration counter: each registration is a new epoch. */
export function nodeEpochKey(prefix: string, nodeId: string): string {
  return `${prefix}:{node:${checkNodeId(nodeId)}}:epoch`;
}

/** The roots a node owned (best effort, verified against each tree's owner record). */
export function nodeTreesKey(prefix: string, nodeId: string): string {
  return `${prefix}:{node:${checkNodeId(nodeId)}}:trees`;
}

/** The record suffix of a tree's owner record (a host record: start and activation commits write it). */
export const ownerRecordSuffix = 'owner';

/** A tree's owner record. */
export function ownerKey(prefix: string, rootId: ProcessId | string): string {
  return recordKey(prefix, rootId, ownerRecordSuffix);
}

/**
 * The record suffix of a tree's succession record (src/server/succession.ts): written once, by the
 * commit that installs a drifted tree's final (cancelled) head over the head its move-on was decided on.
 */
export { successionRecordSuffix };

/** A tree's succession record (the tree was moved on to a successor on another version). */
export function successionKey(prefix: string, rootId: ProcessId | string): string {
  return recordKey(prefix, rootId, successionRecordSuffix);
}

/** The record suffix naming a successor tree's predecessor (written by the successor's start commit). */
export const predecessorRecordSuffix = 'predecessor';

/** The directory entry naming the root of a non-root process (one key per process: its own slot). */
export function processRootKey(prefix: string, processId: ProcessId | string): string {
  return `${prefix}:process-root:${root(processId)}`;
}

/*
 * Host-owned gates (src/store/host-gates.ts, redis/host-gate-store.ts). A gate's own keys share the
 * hash tag of its id, `{hostgate:<hex>}`; the caps and each tenant's index share `{gates}`, so the
 * reservation that counts a gate against both caps is one script in one slot.
 *
 * | key                                      | type   | holds                                                        |
 * |------------------------------------------|--------|--------------------------------------------------------------|
 * | `<prefix>:{hostgate:<hex>}:gate`         | hash   | the gate: spec, times, state, who answered (TTL: retention)  |
 * | `<prefix>:{hostgate:<hex>}:answer`       | string | the answer's JSON, until the gate closes or expires (PXAT expiry) |
 * | `<prefix>:{gates}:live`                  | zset   | gates counted against the cluster cap → expiry (ms)          |
 * | `<prefix>:{gates}:live:<tenant>`         | zset   | the same, one tenant's (its cap)                             |
 * | `<prefix>:{gates}:index:<tenant>`        | zset   | a tenant's retained gates → end of retention (ms)            |
 * | `<prefix>:{gates}:requests:<tenant>`     | hash   | gate id → `<request digest> <created ms> <expiry ms>` (retries of a create) |
 * | `<prefix>:cluster:gate-token-secret`     | string | the secret callback tokens are signed with (SET NX, never expires) |
 */

const hostGateIdPattern = /^hostgate:[0-9a-f]{32}$/;
const tenantKeyPattern = /^[A-Za-z0-9._-]{1,64}$/;

function checkHostGateId(id: string): string {
  if (!hostGateIdPattern.test(id)) throw new TypeError(`a host gate id is hostgate:<32 hex>, got ${JSON.stringify(id)}`);
  return id;
}

function checkTenant(tenant: string): string {
  if (!tenantKeyPattern.test(tenant)) throw new TypeError(`a tenant is 1-64 of [A-Za-z0-9._-], got ${JSON.stringify(tenant)}`);
  return tenant;
}

/** A host-owned gate's record hash. */
export function hostGateKey(prefix: string, id: string): string {
  return `${prefix}:{${checkHostGateId(id)}}:gate`;
}

/** A host-owned gate's answer (kept only while the gate is answered and neither closed nor expired). */
export function hostGateAnswerKey(prefix: string, id: string): string {
  return `${prefix}:{${checkHostGateId(id)}}:answer`;
}

/** The gates counted against the cluster cap. */
export function hostGateLiveKey(prefix: string): string {
  return `${prefix}:{gates}:live`;
}

/** One tenant's gates counted against its cap. */
export function hostGateTenantLiveKey(prefix: string, tenant: string): string {
  return `${prefix}:{gates}:live:${checkTenant(tenant)}`;
}

/** One tenant's retained gates (the listing). */
export function hostGateIndexKey(prefix: string, tenant: string): string {
  return `${prefix}:{gates}:index:${checkTenant(tenant)}`;
}

/** One tenant's create requests by gate id (a retry under the same request id finds its gate). */
export function hostGateRequestsKey(prefix: string, tenant: string): string {
  return `${prefix}:{gates}:requests:${checkTenant(tenant)}`;
}

/** The secret callback tokens of host-owned gates are signed with. */
export function gateTokenSecretKey(prefix: string): string {
  return `${prefix}:cluster:gate-token-secret`;
}

/** Pub/sub channel: a host-owned gate's id, each time it is answered or closed. Not a key. */
export function hostGateChannel(prefix: string): string {
  return `${prefix}:gates:changed`;
}
