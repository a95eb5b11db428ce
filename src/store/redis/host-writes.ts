import { ErrorCode, KernelError, type ProcessId } from '../../kernel/index.js';
import { eventEntryFields, previousEntryField, type EventLogFields } from './log-entry.js';
import { checkRecordSuffix, effectInboxKey, headKey, isKeyUnder, recordKey } from './keys.js';
import type { RefCut } from './log-refs.js';

/**
 * The host write set of a commit: what a host adds to one commit beside the kernel's committed
 * Events (extra event-log entries, records under the tree), validated and encoded here for the
 * commit scripts (lua/includes/hostWrites.lua), which apply it only when they install the head.
 */

/** A host idempotency record, stored at `<prefix>:{<root>}:record:<suffix>`. */
export interface HostRecord {
  /** 1–256 printable ASCII characters, no spaces. */
  readonly suffix: string;
  readonly value: string;
  /** Expiry in milliseconds; absent = no expiry (the record then outlives a purge). */
  readonly ttlMs?: number;
  /** Deletes the record instead (`value` and `ttlMs` are ignored): a commit that ends what the record said. */
  readonly remove?: boolean;
}

/** What the store needs of a kernel Event (`CommitContext.events`). */
export interface LoggedEvent {
  readonly name: string;
  json(): string;
}

/**
 * Writes a host adds to one commit, beside the kernel's {@link RedisCommitContext.events}: passed
 * directly (`store.commit(commit, { entries, records })`, a wrapper around the store) or through
 * the Engine as `hostValues[hostWritesValueKey]`.
 */
export interface HostWriteSet {
  /** Extra log entries, appended after the context's kernel events. */
  readonly entries?: readonly EventLogFields[];
  /** Host records (idempotency records, dispatch permits). */
  readonly records?: readonly HostRecord[];
  /**
   * Effect ids whose settlement inbox the commit consumes (deleted with the head: the settled
   * boundary now holds the outcome; see src/transport/bullmq/).
   */
  readonly inboxClears?: readonly string[];
  /**
   * Directory members outside the tree's hash slot, added with the head (a root-index entry, a node
   * directory entry): atomically with the commit, so no reader ever sees one without the other. Only
   * on standalone Redis — a cluster refuses a script whose keys span slots, so a host writes them
   * before the commit there (see {@link RedisTreeCommitter.spansSlots}).
   */
  readonly members?: readonly DirectoryMember[];
}

/** An entry a commit adds to a directory key (formed in keys.ts): a sorted set (score 0), a set, or a string key set to `member`. */
export interface DirectoryMember {
  readonly key: string;
  readonly kind: 'zset' | 'set' | 'string';
  readonly member: string;
}

const memberOps = { zset: '+z', set: '+s', string: '+k' } as const;

/**
 * The second argument of every commit: the kernel's `CommitContext` (the committed-phase Events the
 * Engine publishes once the commit is acknowledged) widened with the host's {@link HostWriteSet}.
 * The commit's script applies all of it **only when its compare-and-swap installs a new head**
 * (reply status 1), in the same atomic step:
 * 1. the best-effort entries the committer carries for the tree (published before the commit; see
 *    `RedisTreeCommitter`), then each kernel Event, in order, then each host entry (direct ones, then
 *    those in `hostValues`):
 *    `XADD <events> MAXLEN ~ <eventLogMaxLen> * field value … scope.prev <previous id>` — a kernel Event
 *    becomes `name <event name> ref <ref id> event <its canonical JSON without the deployment_ref>`
 *    (log-refs.ts), or `name <event name> event <canonical Event JSON>` when it opens otherwise;
 *    {@link previousEntryField} links each entry to the one before it;
 * 2. each record, in order: `SET <record key> <value>` (`PX <ttlMs>` when given), overwriting any
 *    previous value, or `DEL <record key>` for one marked `remove`;
 * 3. each inbox clear: `DEL <prefix>:{<root>}:inbox:<effectId>`;
 * 4. each deployment ref the cut Events name that the head lacks: `HSET <head> ref:<id> <ref JSON>`.
 * A conflict applies none of it. An identical retry acknowledged as a duplicate (status 2) applies
 * none of it either: the original commit already applied its own writes, so a host must build the
 * same writes for the same commit (or accept that only the first ones count). All arguments are
 * checked before anything is written.
 */
export interface RedisCommitContext extends HostWriteSet {
  readonly events?: readonly LoggedEvent[];
  /**
   * The kernel's host values (`StartOptions.hostValues` reach the start checkpoint this way). A
   * {@link HostWriteSet} under {@link hostWritesValueKey} is applied like `entries` and `records`
   * (after them); every other value is ignored.
   */
  readonly hostValues?: Readonly<Record<string, unknown>>;
}

/** The `hostValues` member that carries a {@link HostWriteSet} through the Engine to this store. */
export const hostWritesValueKey = 'scope.redis.hostWrites';

/** Upper bounds that keep one commit's write set a reasonable single script call. */
export const hostWriteLimits = { entries: 1_024, fieldsPerEntry: 256, records: 256, inboxClears: 64, members: 256 } as const;

/** The default approximate MAXLEN of each tree's event log. */
export const defaultEventLogMaxLen = 10_000;

function invalid(message: string): KernelError {
  return new KernelError(ErrorCode.invalidCommit, `invalid host write set: ${message}`);
}

/** Checks an event-log MAXLEN option. */
export function checkMaxLen(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`eventLogMaxLen must be a positive safe integer, got ${String(value)}`);
  }
  return value;
}

/** The extra KEYS and ARGV a commit script receives for its context (see includes/hostWrites.lua). */
export interface EncodedHostWrites {
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

function hostWritesOf(hostValues: Readonly<Record<string, unknown>> | undefined): HostWriteSet | undefined {
  const value = hostValues?.[hostWritesValueKey];
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(`hostValues['${hostWritesValueKey}'] must be a host write set ({ entries?, records? })`);
  }
  return value as HostWriteSet;
}

function eventFields(event: LoggedEvent, index: number): EventLogFields {
  if (typeof event !== 'object' || event === null || typeof event.json !== 'function' || typeof event.name !== 'string') {
    throw invalid(`events[${index}] must be a kernel Event`);
  }
  return { [eventEntryFields.name]: event.name, [eventEntryFields.event]: event.json() };
}

const noHostWrites: EncodedHostWrites = Object.freeze({ keys: Object.freeze([]), args: Object.freeze([]) });

/** Checks one log entry and appends `<field count> field value …` to the script's ARGV. */
function appendEntry(args: string[], fields: EventLogFields, group: string, index: number): void {
  if (typeof fields !== 'object' || fields === null) throw invalid(`${group}[${index}] must be an object of string fields`);
  const start = args.length;
  args.push('');
  let count = 0;
  for (const field in fields) {
    if (!Object.hasOwn(fields, field)) continue;
    const value = fields[field];
    if (field === previousEntryField) throw invalid(`${group}[${index}] uses the reserved field ${previousEntryField}`);
    if (typeof value !== 'string') throw invalid(`${group}[${index}].${field} must be a string`);
    if (++count > hostWriteLimits.fieldsPerEntry) throw invalid(`${group}[${index}] has more than ${hostWriteLimits.fieldsPerEntry} fields`);
    args.push(field, value);
  }
  if (count === 0) throw invalid(`${group}[${index}] needs at least one field`);
  args[start] = String(count);
}

/** Checks one host record and appends its key and `value ttl` (or `'' -` for a removal). */
function appendRecord(keys: string[], args: string[], seen: Set<string>, prefix: string, rootId: ProcessId, record: HostRecord, index: number): void {
  if (typeof record !== 'object' || record === null) throw invalid(`records[${index}] must be an object`);
  let suffix: string;
  try {
    suffix = checkRecordSuffix(record.suffix);
  } catch (error) {
    throw invalid(`records[${index}]: ${(error as Error).message}`);
  }
  if (seen.has(suffix)) throw invalid(`records[${index}] repeats the suffix ${suffix}`);
  seen.add(suffix);
  if (record.remove === true) {
    // The scripts read a `-` TTL as a deletion (see includes/hostWrites.lua).
    keys.push(recordKey(prefix, rootId, suffix));
    args.push('', '-');
    return;
  }
  if (typeof record.value !== 'string') throw invalid(`records[${index}].value must be a string`);
  const ttl = record.ttlMs;
  if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl < 1)) {
    throw invalid(`records[${index}].ttlMs must be a positive safe integer`);
  }
  keys.push(recordKey(prefix, rootId, suffix));
  args.push(record.value, ttl === undefined ? '0' : String(ttl));
}

/**
 * Validates a commit context and encodes it for the commit scripts (nothing at all when it writes
 * nothing); throws `invalid_commit`. `leading`: best-effort entries published before the commit
 * (RedisEventLog.takeUnsent), appended ahead of the commit's own.
 */
export function encodeHostWrites(
  prefix: string,
  rootId: ProcessId,
  context: RedisCommitContext | undefined,
  maxLen: number,
  leading: readonly EventLogFields[] = [],
  refs?: RefCut,
): EncodedHostWrites {
  const events = context?.events ?? [];
  const extra = context?.entries ?? [];
  const direct = context?.records ?? [];
  const clears = context?.inboxClears ?? [];
  const members = context?.members ?? [];
  const carried = hostWritesOf(context?.hostValues);
  if (!Array.isArray(events)) throw invalid('events must be an array');
  if (!Array.isArray(extra)) throw invalid('entries must be an array');
  if (!Array.isArray(direct)) throw invalid('records must be an array');
  if (!Array.isArray(clears)) throw invalid('inboxClears must be an array');
  if (!Array.isArray(members)) throw invalid('members must be an array');
  if (leading.length === 0 && events.length === 0 && extra.length === 0 && direct.length === 0 && clears.length === 0 && members.length === 0 && carried === undefined) {
    return noHostWrites; // the scripts' fast path: ARGV ends at the snapshot
  }
  const carriedEntries = carried?.entries ?? [];
  const carriedRecords = carried?.records ?? [];
  if (!Array.isArray(carriedEntries)) throw invalid(`hostValues['${hostWritesValueKey}'].entries must be an array`);
  if (!Array.isArray(carriedRecords)) throw invalid(`hostValues['${hostWritesValueKey}'].records must be an array`);
  const entryCount = leading.length + events.length + extra.length + carriedEntries.length;
  if (entryCount > hostWriteLimits.entries) throw invalid(`at most ${hostWriteLimits.entries} log entries per commit`);
  if (direct.length + carriedRecords.length > hostWriteLimits.records) throw invalid(`at most ${hostWriteLimits.records} records per commit`);
  // Plain loops over each source, not one spread-and-mapped list: this runs at every commit, and the
  // spreads made V8 recompile it whenever an array of another elements kind came by.
  const args: string[] = [String(maxLen), String(entryCount)];
  // Events (and best-effort entries) whose deployment ref the head holds, or this commit defines, are
  // stored cut (log-refs.ts); host entries are opaque and stored as given.
  for (let index = 0; index < leading.length; index++) {
    const fields = leading[index] as EventLogFields;
    appendEntry(args, refs === undefined ? fields : refs.fields(fields), 'best-effort entries', index);
  }
  for (let index = 0; index < events.length; index++) {
    const fields = eventFields(events[index] as LoggedEvent, index);
    appendEntry(args, refs === undefined ? fields : refs.fields(fields), 'events', index);
  }
  for (let index = 0; index < extra.length; index++) appendEntry(args, extra[index] as EventLogFields, 'entries', index);
  for (let index = 0; index < carriedEntries.length; index++) {
    appendEntry(args, carriedEntries[index] as EventLogFields, 'hostValues entries', index);
  }
  const keys: string[] = [];
  const seen = new Set<string>();
  for (let index = 0; index < direct.length; index++) appendRecord(keys, args, seen, prefix, rootId, direct[index] as HostRecord, index);
  for (let index = 0; index < carriedRecords.length; index++) {
    appendRecord(keys, args, seen, prefix, rootId, carriedRecords[index] as HostRecord, direct.length + index);
  }
  if (clears.length > hostWriteLimits.inboxClears) throw invalid(`at most ${hostWriteLimits.inboxClears} inbox clears per commit`);
  clears.forEach((effectId, index) => {
    let key: string;
    try {
      key = effectInboxKey(prefix, rootId, effectId);
    } catch (error) {
      throw invalid(`inboxClears[${index}]: ${(error as Error).message}`);
    }
    if (seen.has(key)) throw invalid(`inboxClears[${index}] repeats ${effectId}`);
    seen.add(key);
    // The scripts read a `-` TTL as a deletion (see includes/hostWrites.lua).
    keys.push(key);
    args.push('', '-');
  });
  if (members.length > hostWriteLimits.members) throw invalid(`at most ${hostWriteLimits.members} directory members per commit`);
  members.forEach((entry, index) => {
    if (typeof entry !== 'object' || entry === null || typeof entry.key !== 'string' || typeof entry.member !== 'string' || !Object.hasOwn(memberOps, entry.kind)) {
      throw invalid(`members[${index}] must be { key, kind: 'zset' | 'set' | 'string', member } with string key and member`);
    }
    if (!isKeyUnder(prefix, entry.key)) throw invalid(`members[${index}].key must be under the key prefix ${prefix}`);
    // The scripts read `+z` as ZADD <key> 0 <member>, `+s` as SADD <key> <member>, `+k` as SET <key> <member>.
    keys.push(entry.key);
    args.push(entry.member, memberOps[entry.kind as keyof typeof memberOps]);
  });
  // The refs the cut entries name that the head does not hold yet: `+h` is HSET <head> <field> <ref JSON>.
  for (const definition of refs?.definitions ?? []) {
    keys.push(headKey(prefix, rootId));
    args.push(`${definition.field} ${definition.refJson}`, '+h');
  }
  return { keys, args };
}

