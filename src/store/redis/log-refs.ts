import { closingQuote } from '../../kernel/canonical-json.js';
import { Digest } from '../../kernel/index.js';
import type { RedisClient } from './connection.js';
import type { EventLogEntry, EventLogFields } from './log-entry.js';

/*
 * The deployment ref, once per tree instead of once per log entry. Every kernel Event's canonical
 * JSON opens with its `deployment_ref` (about 480 bytes: five digests and a name), nearly half of a
 * tree's log. A commit stores each ref its entries name once, as a field of the tree's head hash
 * (`ref:<id>` → the ref's canonical JSON, `<id>` the sha256 of that JSON), and the entries carry only
 * the id:
 *
 *   name <event name>   ref <id>   event <the Event's JSON without its deployment_ref member>
 *
 * Readers put the member back before anyone sees the entry (event-log.ts), so every consumer — REST
 * pages, SSE, waits — reads the Event's JSON byte for byte as the kernel encoded it. The field lives
 * in the head hash so that it lives exactly as long as the log: a purge deletes both.
 *
 * A ref is defined by the same script that writes the first entry naming it (a commit: its host write
 * set carries the definition), so no reader can meet an entry whose ref is not defined. A best-effort
 * append (appendLog, no head write) cuts an Event only once a commit acknowledged to this client has
 * defined its ref; before that it writes the Event whole. Readers accept both forms.
 */

/** The member every kernel Event's canonical JSON opens with. */
const opening = '{"deployment_ref":';

/** The entry field naming the ref an Event's JSON was cut from. */
export const refEntryField = 'ref';

/** The head-hash field holding the ref with id `id`. */
export function refHeadField(id: string): string {
  return `ref:${id}`;
}

export interface CutRef {
  readonly refJson: string;
  /** The Event's JSON without its `deployment_ref` member. */
  readonly rest: string;
}

/** Refs one {@link LogRefs} keeps at most (a deployment catalog holds a few dozen; versions add some). */
const maxCachedRefs = 4_096;

/** Sets `key`, dropping the oldest entry first when the map is full. */
function remember<K, V>(map: Map<K, V>, key: K, value: V, limit: number): void {
  if (map.size >= limit && !map.has(key)) {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
  map.set(key, value);
}

/** The index of the `}` closing the JSON object that opens at `start`, or -1. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  for (let index = start; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === 0x22) {
      index = closingQuote(text, index);
    } else if (code === 0x7b || code === 0x5b) {
      depth += 1;
    } else if (code === 0x7d || code === 0x5d) {
      depth -= 1;
      if (depth === 0) return code === 0x7d ? index : -1;
    }
  }
  return -1;
}

/** Splits an Event's canonical JSON into its deployment ref and the rest; undefined when it does not open with a ref followed by more members. */
export function cutRef(json: string): CutRef | undefined {
  if (!json.startsWith(opening) || json.charCodeAt(opening.length) !== 0x7b) return undefined;
  const end = objectEnd(json, opening.length);
  if (end === -1 || json.charCodeAt(end + 1) !== 0x2c) return undefined;
  const refJson = json.slice(opening.length, end + 1);
  return { refJson, rest: `{${json.slice(end + 2)}` };
}

/** The Event's JSON {@link cutRef} was given: `spliceRef(cut.refJson, cut.rest)`. */
export function spliceRef(refJson: string, rest: string): string {
  return `${opening}${refJson},${rest.slice(1)}`;
}

/** A ref a commit defines with its entries: the head field and its value. */
export interface RefDefinition {
  readonly field: string;
  readonly refJson: string;
}

/**
 * The cut of one script's entries: the fields to write and the refs the script must define (those not
 * already known, from an acknowledged commit, to be in the head).
 */
export class RefCut {
  readonly #refs: LogRefs;
  readonly #known: ReadonlySet<string> | undefined;
  readonly #defining = new Map<string, string>();
  readonly #defines: boolean;

  /** `defines`: whether the script writes the head (a commit) and can carry definitions. */
  constructor(refs: LogRefs, known: ReadonlySet<string> | undefined, defines: boolean) {
    this.#refs = refs;
    this.#known = known;
    this.#defines = defines;
  }

  /** The entry as it is stored: an Event entry cut when its ref is or will be defined, anything else as it is. */
  fields(fields: EventLogFields): EventLogFields {
    const { name, event } = fields;
    if (typeof name !== 'string' || typeof event !== 'string' || Object.keys(fields).length !== 2) return fields;
    const cut = cutRef(event);
    if (cut === undefined) return fields;
    const id = this.#refs.idOf(cut.refJson);
    if (this.#known?.has(id) !== true) {
      if (!this.#defines) return fields;
      this.#defining.set(id, cut.refJson);
    }
    return { name, [refEntryField]: id, event: cut.rest };
  }

  /** The refs the script must define beside its entries. */
  get definitions(): RefDefinition[] {
    return [...this.#defining].map(([id, refJson]) => ({ field: refHeadField(id), refJson }));
  }

  /** The ids of {@link definitions}, to mark once the script is acknowledged. */
  get defined(): string[] {
    return [...this.#defining.keys()];
  }
}

/**
 * One client's knowledge of the refs in the heads it writes and reads: which ids an acknowledged commit
 * defined in which head (so best-effort appends may cut), and the refs by id, read from a head once.
 */
export class LogRefs {
  /** Per head key, the ref ids acknowledged as defined there; the least recently used trees are forgotten. */
  readonly #defined = new Map<string, Set<string>>();
  readonly #refsById = new Map<string, string>();
  readonly #idsByRef = new Map<string, string>();
  /** Entries restored once each: a shared tail hands one entry object to every reader of its tree. */
  readonly #restored = new WeakMap<EventLogEntry, EventLogEntry>();
  static readonly maxTrees = 10_000;

  /** The id of a ref's canonical JSON: its sha256. */
  idOf(refJson: string): string {
    let id = this.#idsByRef.get(refJson);
    if (id === undefined) {
      id = Digest.of(refJson).toString();
      remember(this.#idsByRef, refJson, id, maxCachedRefs);
      remember(this.#refsById, id, refJson, maxCachedRefs);
    }
    return id;
  }

  /** A cut for one script writing to the log of the tree whose head is `headKey`. */
  cut(headKey: string, defines: boolean): RefCut {
    return new RefCut(this, this.#defined.get(headKey), defines);
  }

  /** Marks refs as defined in a head (after the script defining them was acknowledged). */
  markDefined(headKey: string, ids: readonly string[]): void {
    if (ids.length === 0) return;
    const known = this.#defined.get(headKey) ?? new Set<string>();
    for (const id of ids) known.add(id);
    this.#defined.delete(headKey);
    remember(this.#defined, headKey, known, LogRefs.maxTrees);
  }

  /**
   * Reads from the head every ref the entries name that is not known here yet (one HMGET). A stored
   * ref whose JSON does not hash to its id is not taken: its entries stay unresolved.
   */
  async resolve(redis: RedisClient, headKey: string, entries: readonly EventLogEntry[], read: <T>(run: () => Promise<T>) => Promise<T>): Promise<void> {
    const missing = new Set<string>();
    for (const entry of entries) {
      const id = entry.fields[refEntryField];
      if (id !== undefined && !this.#refsById.has(id) && !this.#restored.has(entry)) missing.add(id);
    }
    if (missing.size === 0) return;
    const ids = [...missing];
    const values = await read(() => redis.hmget(headKey, ...ids.map(refHeadField)));
    ids.forEach((id, index) => {
      const refJson = values[index];
      if (typeof refJson === 'string' && Digest.of(refJson).toString() === id) this.idOf(refJson);
    });
  }

  /** The entry with its Event's `deployment_ref` put back; the entry itself when it names no ref or the ref is not known. */
  restore(entry: EventLogEntry): EventLogEntry {
    const id = entry.fields[refEntryField];
    if (id === undefined) return entry;
    const done = this.#restored.get(entry);
    if (done !== undefined) return done;
    const refJson = this.#refsById.get(id);
    const { name, event } = entry.fields;
    if (refJson === undefined || name === undefined || event === undefined || !event.startsWith('{') || Object.keys(entry.fields).length !== 3) return entry;
    const fields = Object.freeze({ name, event: spliceRef(refJson, event) });
    const whole: EventLogEntry = Object.freeze(entry.previous === undefined ? { id: entry.id, fields } : { id: entry.id, fields, previous: entry.previous });
    this.#restored.set(entry, whole);
    return whole;
  }
}
