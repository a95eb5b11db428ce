import { ErrorCode, KernelError, type ProcessId } from '../../kernel/index.js';

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
 * | `<prefix>:idempotency:<sha256>`     | string | an Idempotency-Key pointer (reserved/committing/root)  |
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

/** `<prefix>:{<root>}`: the part every key of one tree starts with. */
export function treeKeyBase(prefix: string, rootId: ProcessId | string): string {
  return `${prefix}:{${root(rootId)}}`;
}

/** The head hash: `snapshot`, `digest`, `incarnation`, `sequence` (decimal uint64). */
export function headKey(prefix: string, rootId: ProcessId | string): string {
  return `${treeKeyBase(prefix, rootId)}:head`;
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

/** The pointer of an Idempotency-Key digest (outside any tree's hash tag: it only names a root). */
export function idempotencyPointerKey(prefix: string, keyDigest: string): string {
  if (!/^[0-9a-f]{64}$/.test(keyDigest)) throw new TypeError(`an idempotency key digest is 64 lowercase hex digits, got ${JSON.stringify(keyDigest)}`);
  return `${prefix}:idempotency:${keyDigest}`;
}
