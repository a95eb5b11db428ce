// Over 500 lines: the tree snapshot and its strict decoder, whose cross-process rules need the whole tree at once.
import { parseJson, quoteString, utf8Length, type JsonNode } from './canonical-json.js';
import { describe, Digest, sha256Hex, type DeferredBytes } from './digest.js';
import { ChildSpec, Effect, EffectRequest, type ChildWaitSpec } from './effect.js';
import { ErrorCode, KernelError } from './errors.js';
import { EffectId, ProcessId, TreeIncarnationId } from './identity.js';
import { childWaitSatisfiedPayload, type ChildOutcomeFacts, type UnresolvedEffect } from './mailbox.js';
import type { Payload } from './payload.js';
import { maxSnapshotInputBytes, ProcessSnapshot, readParentLink, type ParentLink } from './process-snapshot.js';
import { ProcessRelation } from './relation.js';
import { TreeLimits } from './tree-limits.js';
import { encodeWire, WireRecord, wireError } from './wire.js';
import { checkpointSpacing, HashTrail } from './hash-trail.js';
import { SharedMap } from './shared-map.js';

/**
 * TreeSnapshot: the only recovery unit — an immutable, portable capture of one complete Process
 * tree under one writer incarnation and one TreeLimits.
 *
 * Wire: `{"incarnation_id","process_snapshots":[ProcessSnapshot…],"tree_limits"}`. Exactly one
 * record has no parent link (the root); every other record descends from it; records are in
 * canonical order — depth ascending, then ProcessId string ascending — whatever the input order,
 * so the canonical bytes (the header with each Process's cached canonical JSON spliced in) and the
 * digest depend only on content.
 *
 * Domain rules checked by every factory: unique ProcessIds, a single root, `max_tree_processes`,
 * child depth = parent depth + 1 (`max_depth` per record), child capabilities ⊆ parent's,
 * parent-scoped ChildKeys unique, `max_children` (lifetime) and `max_active_children`
 * (non-terminal) per parent, parent `allocated_resources` = Σ of the children's finite budget
 * debits (a finite parent never grants an unlimited dimension), every child-wait opening observes
 * direct children of its opener, every pending child-wait answer renders from the captured
 * terminal results, every retained successful child start identifies a captured direct child whose
 * record matches the full request (`child_request_digest`), no retained failed child start has a
 * captured child, and `max_snapshot_bytes` on both the
 * input and the canonical length. Rejections are `invalid_tree_snapshot`.
 */

/** The members of {@link TreeSnapshot.create}. */
export interface TreeSnapshotConfig {
  readonly incarnationId: TreeIncarnationId;
  readonly treeLimits: TreeLimits;
  /** Any order; the snapshot keeps canonical order. */
  readonly processes: Iterable<ProcessSnapshot>;
}

const code = ErrorCode.invalidTreeSnapshot;

/** Refuses a tree being built (`invalid_tree_snapshot`); one function, not a closure a call. */
function failTree(message: string): never {
  throw new KernelError(code, `invalid tree snapshot: ${message}`);
}

const utf8Encoder = new TextEncoder();

/** A tree's bytes as its deferred digest sees them: another tree's are compared without hashing. */
interface TreeBytes extends DeferredBytes {
  readonly tree: TreeSnapshot;
}

export class TreeSnapshot {
  readonly #incarnationId: TreeIncarnationId;
  readonly #treeLimits: TreeLimits;
  readonly #processes: readonly ProcessSnapshot[];
  readonly #index: TreeIndex;
  /** The canonical text before the first process record, and after the last. */
  readonly #head: string;
  readonly #tail: string;
  readonly #size: number;
  #json: string | undefined;
  #digest: Digest | undefined;
  /** How this tree's digest was hashed, kept so a tree derived from it resumes the hash. */
  #trail: HashTrail | undefined;
  /** The trail of the nearest tree this one derives from whose digest was computed. */
  #resumeFrom: HashTrail | undefined;

  /** `processes` is the index's own immutable canonical order (shared, never copied). */
  private constructor(incarnationId: TreeIncarnationId, treeLimits: TreeLimits, index: TreeIndex) {
    this.#incarnationId = incarnationId;
    this.#treeLimits = treeLimits;
    this.#processes = index.ordered;
    this.#index = index;
    // Members sort as incarnation_id < process_snapshots < tree_limits, so the canonical bytes are
    // this header, the cached process records joined by commas, and this trailer: the size and
    // digest come from the cached pieces, and the whole text is assembled only when asked for.
    this.#head = `{"incarnation_id":${quoteString(incarnationId.toString())},"process_snapshots":[`;
    this.#tail = `],"tree_limits":${encodeWire(treeLimits.toWire())}}`;
    this.#size = utf8Length(this.#head) + utf8Length(this.#tail) + index.processesSize;
    Object.freeze(this);
  }

  /** Validates a tree of already validated Process snapshots (any order). */
  static create(config: TreeSnapshotConfig): TreeSnapshot {
    const fail: (message: string) => never = failTree;
    if (typeof config !== 'object' || config === null) fail(`expected tree members, got ${describe(config)}`);
    const { incarnationId, treeLimits } = config;
    if (!(incarnationId instanceof TreeIncarnationId)) fail('incarnationId must be a TreeIncarnationId');
    if (!(treeLimits instanceof TreeLimits)) fail('treeLimits must be TreeLimits');
    if (config.processes === null || typeof config.processes?.[Symbol.iterator] !== 'function') {
      fail('processes must be an iterable of ProcessSnapshot');
    }
    const processes = [...config.processes];
    processes.forEach((process, index) => {
      if (!(process instanceof ProcessSnapshot)) fail(`processes[${index}] must be a ProcessSnapshot`);
    });
    const index = TreeIndex.of(processes, fail);
    for (const process of processes) {
      const { relation } = process;
      const where = `process ${process.processId.toString()}`;
      if (!relation.rootId.equals(index.root.processId)) fail(`${where} belongs to root ${relation.rootId.toString()}`);
      if (relation.parentId !== undefined) {
        const parent = index.get(relation.parentId);
        if (parent === undefined) fail(`${where} has parent ${relation.parentId.toString()}, which is not in the tree`);
        if (relation.depth !== parent.relation.depth + 1) {
          fail(`${where} has depth ${relation.depth}, but its parent is at depth ${parent.relation.depth}`);
        }
      }
      process.checkCapacity(treeLimits, (message) => fail(`${where}: ${message}`));
    }
    checkRenderedFacts(index, fail);
    return TreeSnapshot.#validated(incarnationId, treeLimits, index, fail);
  }

  static #validated(
    incarnationId: TreeIncarnationId,
    treeLimits: TreeLimits,
    index: TreeIndex,
    fail: (message: string) => never,
  ): TreeSnapshot {
    checkTreeRules(index, treeLimits, fail);
    const snapshot = new TreeSnapshot(incarnationId, treeLimits, index);
    if (!treeLimits.maxSnapshotBytes.admits(BigInt(snapshot.#size))) {
      fail(`encoded size ${snapshot.#size} exceeds max_snapshot_bytes ${treeLimits.maxSnapshotBytes.toString()}`);
    }
    return snapshot;
  }

  /**
   * This tree with `changes` replacing members of the same ProcessId or joining as new children:
   * equal to `TreeSnapshot.create` over the merged members (same bytes, same rejections), but it
   * re-checks only the rules a change takes part in — the changed records, their parents'
   * aggregates and their ancestors' rendered child facts — since every other rule held in this
   * tree and reads only unchanged immutable records. A change of relation (or of the root) takes
   * the full check.
   */
  withProcesses(changes: Iterable<ProcessSnapshot>): TreeSnapshot {
    const fail: (message: string) => never = failTree;
    if (changes === null || typeof changes?.[Symbol.iterator] !== 'function') fail('changes must be an iterable of ProcessSnapshot');
    const list = [...changes];
    list.forEach((process, index) => {
      if (!(process instanceof ProcessSnapshot)) fail(`changes[${index}] must be a ProcessSnapshot`);
    });
    if (list.length === 0) return this;
    const seen = new Set<string>();
    for (const process of list) {
      const id = process.processId.toString();
      if (seen.has(id)) fail(`process ${id} appears twice`);
      seen.add(id);
      const before = this.#index.get(process.processId);
      const moved = before === undefined ? process.relation.isRoot : !before.relation.equals(process.relation);
      if (moved) {
        const merged = new Map(this.#processes.map((member) => [member.processId.toString(), member]));
        for (const change of list) merged.set(change.processId.toString(), change);
        return TreeSnapshot.create({ incarnationId: this.#incarnationId, treeLimits: this.#treeLimits, processes: merged.values() });
      }
    }
    const index = this.#index.derive(list, fail);
    checkChanges(this.#index, index, list, this.#treeLimits, fail);
    const snapshot = new TreeSnapshot(this.#incarnationId, this.#treeLimits, index);
    snapshot.#resumeFrom = this.#trail ?? this.#resumeFrom;
    if (!this.#treeLimits.maxSnapshotBytes.admits(BigInt(snapshot.#size))) {
      fail(`encoded size ${snapshot.#size} exceeds max_snapshot_bytes ${this.#treeLimits.maxSnapshotBytes.toString()}`);
    }
    return snapshot;
  }

  /** Strict decode. `inputBytes` (the supplied length) is checked against `max_snapshot_bytes` too. */
  static fromWire(node: JsonNode, path = '', inputBytes?: number): TreeSnapshot {
    try {
      return TreeSnapshot.#decode(node, path, inputBytes);
    } catch (error) {
      if (error instanceof KernelError && error.code === code) throw error;
      throw new KernelError(code, error instanceof Error ? error.message : String(error), { cause: error });
    }
  }

  static #decode(node: JsonNode, path: string, inputBytes: number | undefined): TreeSnapshot {
    const record: WireRecord = new WireRecord(node, path, code);
    const incarnationText = record.string('incarnation_id');
    let incarnationId: TreeIncarnationId;
    try {
      incarnationId = TreeIncarnationId.parse(incarnationText);
    } catch {
      record.fail(`is not a tree incarnation id: ${describe(incarnationText)}`, 'incarnation_id');
    }
    const treeLimits = TreeLimits.fromWire(record.required('tree_limits'), record.childPath('tree_limits'), code);
    const items = record.array('process_snapshots');
    record.finish();
    const fail: (message: string) => never = (message) => {
      throw wireError(code, record.path, message);
    };
    if (inputBytes !== undefined && !treeLimits.maxSnapshotBytes.admits(BigInt(inputBytes))) {
      fail(`input of ${inputBytes} bytes exceeds max_snapshot_bytes ${treeLimits.maxSnapshotBytes.toString()}`);
    }
    if (!treeLimits.maxTreeProcesses.admits(BigInt(items.length))) {
      fail(`${items.length} processes exceed max_tree_processes ${treeLimits.maxTreeProcesses.toString()}`);
    }
    const entries = discoverStructure(items, record.childPath('process_snapshots'), fail);
    // Deepest first: a parent's started children and child-wait answers render from decoded children.
    const decoded = new Map<string, ProcessSnapshot>();
    const lookup: TreeLookup = {
      get: (id) => decoded.get(id.toString()),
      childrenOf: (id) => entries.childrenOf.get(id.toString()) ?? [],
    };
    for (const entry of [...entries.list].sort((a, b) => b.relation.depth - a.relation.depth)) {
      const opener = entry.relation.processId;
      const process = ProcessSnapshot.fromWire(entry.node, entry.path, {
        code,
        relation: entry.relation,
        treeLimits,
        renderStartedChild: (effectId, input) => renderStartedChild(lookup, opener, effectId, input),
        renderChildWaitAnswer: (_waitId, spec, answered) => renderChildWaitAnswer(lookup, opener, spec, answered),
      });
      decoded.set(opener.toString(), process);
    }
    const index = TreeIndex.of([...decoded.values()], fail);
    return TreeSnapshot.#validated(incarnationId, treeLimits, index, fail);
  }

  /** Strict parse of canonical or non-canonical JSON text (any member and record order). */
  static parse(input: string | Uint8Array): TreeSnapshot {
    const node = parseJson(input, { code, what: 'tree snapshot', maxBytes: maxSnapshotInputBytes });
    const inputBytes = typeof input === 'string' ? utf8Length(input) : input.byteLength;
    return TreeSnapshot.fromWire(node, '', inputBytes);
  }

  /**
   * sha256 of the canonical bytes; stores must use it as the head digest. It is hashed when first
   * read (then kept): the embedded committer compares heads by identity and never reads it, and a
   * tree was hashed whole at every commit for nothing (18% of bench:agent's CPU).
   */
  get digest(): Digest {
    if (this.#digest === undefined) {
      const tree = this;
      const bytes: TreeBytes = {
        tree,
        sha256Hex: () => tree.#sha256Hex(),
        sameBytes: (other) => ('tree' in other && other.tree instanceof TreeSnapshot ? tree.#sameBytes(other.tree) : undefined),
      };
      this.#digest = Digest.deferred(bytes);
    }
    return this.#digest;
  }

  #sha256Hex(): string {
    let hex: string;
    if (this.#size < checkpointSpacing) {
      // Too short for a trail to keep any hash state: one hash call over the assembled text (which
      // a store sends anyway) costs less than one update per piece.
      hex = sha256Hex(this.json());
    } else {
      // Resumed from the tree this one was derived from: only the pieces after the first change
      // (back to the last kept hash state) are hashed again.
      this.#trail = HashTrail.of(this.#hashPieces(), this.#size, this.#resumeFrom);
      hex = this.#trail.digest.hex;
    }
    this.#resumeFrom = undefined;
    return hex;
  }

  /**
   * Whether `other` has these canonical bytes, told without hashing: unchanged Process records are
   * shared between a tree and the trees derived from it, so only the changed ones are compared.
   */
  #sameBytes(other: TreeSnapshot): boolean {
    if (other === this) return true;
    if (other.#size !== this.#size || other.#head !== this.#head || other.#tail !== this.#tail || other.#processes.length !== this.#processes.length) return false;
    return this.#processes.every((process, index) => process.sameBytes(other.#processes[index] as ProcessSnapshot));
  }

  /** The canonical text as the processes' own pieces (see `ProcessSnapshot.pieces`). */
  #hashPieces(): string[] {
    const pieces = [this.#head];
    let first = true;
    for (const process of this.#processes) {
      if (!first) pieces.push(',');
      first = false;
      for (const piece of process.pieces()) pieces.push(piece);
    }
    pieces.push(this.#tail);
    return pieces;
  }

  /**
   * This tree's canonical text as an edit of the tree whose digest is `base`: that text's first
   * `keptBytes` UTF-8 bytes followed by `tail`. Known only when this tree's digest was hashed
   * resuming from `base`'s (trees of at least {@link checkpointSpacing} characters), so that a store
   * holding `base`'s bytes can be sent the tail alone; undefined otherwise, and for a tree shorter
   * than `base` (an edit that keeps a prefix and writes the rest never truncates). Hashes the tree if
   * it was not yet.
   */
  editOf(base: Digest): { readonly keptBytes: number; readonly tail: string } | undefined {
    void this.digest.hex;
    const from = this.#trail?.base;
    if (this.#trail === undefined || from === undefined || !from.digest.equals(base) || this.#size < from.bytes) return undefined;
    const tail = this.#trail.piecesFrom(from.sharedPieces).join('');
    return { keptBytes: this.#size - utf8Length(tail), tail };
  }

  /** The canonical JSON text (assembled once, on first use). */
  json(): string {
    this.#json ??= [...this.#pieces()].join('');
    return this.#json;
  }

  /** A fresh copy of the canonical UTF-8 bytes. */
  bytes(): Uint8Array {
    return utf8Encoder.encode(this.json());
  }

  /** The canonical text in order: header, process records with their separators, trailer. */
  *#pieces(): Generator<string> {
    yield this.#head;
    let first = true;
    for (const process of this.#processes) {
      if (!first) yield ',';
      first = false;
      yield process.json();
    }
    yield this.#tail;
  }

  /** The canonical length in UTF-8 bytes. */
  get encodedSize(): number {
    return this.#size;
  }

  get incarnationId(): TreeIncarnationId {
    return this.#incarnationId;
  }

  get treeLimits(): TreeLimits {
    return this.#treeLimits;
  }

  get rootId(): ProcessId {
    return this.#index.root.processId;
  }

  get root(): ProcessSnapshot {
    return this.#index.root;
  }

  /** Every Process in canonical order (depth, then ProcessId); a copy. */
  processSnapshots(): ProcessSnapshot[] {
    return [...this.#processes];
  }

  get size(): number {
    return this.#processes.length;
  }

  process(id: ProcessId): ProcessSnapshot | undefined {
    return this.#index.get(id);
  }

  /** Direct children of `id` in canonical order. */
  children(id: ProcessId): ProcessSnapshot[] {
    return this.#index.childrenOf(id).map((child) => this.#index.get(child) as ProcessSnapshot);
  }

  /** The same processes under a new writer (activation). */
  withIncarnation(id: TreeIncarnationId): TreeSnapshot {
    if (!(id instanceof TreeIncarnationId)) {
      throw new KernelError(code, 'invalid tree snapshot: incarnation must be a TreeIncarnationId');
    }
    return new TreeSnapshot(id, this.#treeLimits, this.#index);
  }

  /**
   * The frozen request of a retained prepared Effect, carrying this capture's writer identity and
   * no attempt id; it authorises neither dispatch nor replay. Adopted Steps are not retained.
   */
  effectRequest(processId: ProcessId, effectId: EffectId): EffectRequest | undefined {
    const process = this.process(processId);
    const prepared = process?.prepared;
    const effect = prepared?.effect(effectId);
    if (process === undefined || prepared === undefined || effect === undefined) return undefined;
    return EffectRequest.create({
      processId,
      relation: process.relation,
      deploymentRef: process.deploymentRef,
      stepSequence: prepared.stepSequence,
      batchIndex: effect.index,
      effect: effect.effect,
      incarnationId: this.#incarnationId,
    });
  }

  /** Same canonical bytes, compared piece by piece (cached records, no assembly). */
  equals(other: TreeSnapshot | undefined): boolean {
    return other instanceof TreeSnapshot && this.#sameBytes(other);
  }

  toString(): string {
    return `TreeSnapshot(${this.rootId.toString()}, ${this.#processes.length} processes, ${this.digest.toString()})`;
  }
}

/* ================================================================================================
 * Structure
 * ============================================================================================== */

interface TreeLookup {
  get(id: ProcessId): ProcessSnapshot | undefined;
  childrenOf(id: ProcessId): readonly ProcessId[];
}

/** The processes of a tree by id, in canonical order, with their direct children. */
class TreeIndex implements TreeLookup {
  readonly root: ProcessSnapshot;
  /** Canonical order; immutable once the index exists (trees share it, never copy it). */
  readonly ordered: readonly ProcessSnapshot[];
  /** UTF-8 bytes of the member records joined by commas (a tree's size without its frame). */
  readonly processesSize: number;
  readonly #byId: SharedMap<ProcessSnapshot>;
  readonly #children: ReadonlyMap<string, readonly ProcessId[]>;
  /** Position of each id in `ordered`, built on first derivation. */
  #positions: Map<string, number> | undefined;

  private constructor(
    root: ProcessSnapshot,
    ordered: readonly ProcessSnapshot[],
    processesSize: number,
    byId: SharedMap<ProcessSnapshot>,
    children: ReadonlyMap<string, readonly ProcessId[]>,
    positions?: Map<string, number>,
  ) {
    this.root = root;
    this.ordered = ordered;
    this.processesSize = processesSize;
    this.#byId = byId;
    this.#children = children;
    this.#positions = positions;
    Object.freeze(this);
  }

  /**
   * The index with `changes` applied: same-id records replace in place (their relation is
   * unchanged, so order and children stay), new non-root records join in canonical order.
   */
  derive(changes: readonly ProcessSnapshot[], fail: (message: string) => never): TreeIndex {
    this.#positions ??= new Map(this.ordered.map((process, position) => [process.processId.toString(), position]));
    const own = new Map<string, ProcessSnapshot>();
    let ordered = [...this.ordered];
    let positions = this.#positions;
    let processesSize = this.processesSize;
    let children: Map<string, readonly ProcessId[]> | undefined;
    let root = this.root;
    for (const process of changes) {
      const id = process.processId.toString();
      own.set(id, process);
      const position = positions.get(id);
      if (position !== undefined) {
        processesSize += process.encodedSize - (ordered[position] as ProcessSnapshot).encodedSize;
        ordered[position] = process;
        if (process.relation.isRoot) root = process;
        continue;
      }
      const parent = process.relation.parentId as ProcessId;
      children ??= new Map(this.#children);
      const siblings = [...(children.get(parent.toString()) ?? []), process.processId].sort((a, b) => a.compare(b));
      children.set(parent.toString(), siblings);
      ordered.push(process);
      processesSize += process.encodedSize + 1; // and its separating comma (the root is always there)
      positions = new Map(); // rebuilt below
    }
    if (positions !== this.#positions) {
      ordered = ordered.sort(canonicalOrder);
      positions = new Map(ordered.map((process, position) => [process.processId.toString(), position]));
    }
    const byId = this.#byId.with(own);
    for (const process of changes) {
      const parent = process.relation.parentId;
      if (parent !== undefined && byId.get(parent.toString()) === undefined) {
        fail(`process ${process.processId.toString()} has parent ${parent.toString()}, which is not in the tree`);
      }
    }
    return new TreeIndex(root, ordered, processesSize, byId, children ?? this.#children, positions);
  }

  static of(processes: readonly ProcessSnapshot[], fail: (message: string) => never): TreeIndex {
    const byId = new Map<string, ProcessSnapshot>();
    for (const process of processes) {
      const id = process.processId.toString();
      if (byId.has(id)) fail(`process ${id} appears twice`);
      byId.set(id, process);
    }
    const roots = processes.filter((process) => process.relation.isRoot);
    if (roots.length !== 1) fail(`needs exactly one root (a record without a parent link), found ${roots.length}`);
    const ordered = [...processes].sort(canonicalOrder);
    const children = new Map<string, ProcessId[]>();
    let processesSize = Math.max(0, ordered.length - 1);
    for (const process of ordered) {
      processesSize += process.encodedSize;
      const parent = process.relation.parentId;
      if (parent === undefined) continue;
      const list = children.get(parent.toString());
      if (list === undefined) children.set(parent.toString(), [process.processId]);
      else list.push(process.processId);
    }
    return new TreeIndex(roots[0] as ProcessSnapshot, ordered, processesSize, SharedMap.of(byId), children);
  }

  get(id: ProcessId): ProcessSnapshot | undefined {
    return this.#byId.get(id.toString());
  }

  childrenOf(id: ProcessId): readonly ProcessId[] {
    return this.#children.get(id.toString()) ?? [];
  }
}

function canonicalOrder(a: ProcessSnapshot, b: ProcessSnapshot): number {
  return a.relation.depth - b.relation.depth || a.processId.compare(b.processId);
}

interface Entry {
  readonly node: JsonNode;
  readonly path: string;
  readonly relation: ProcessRelation;
}

/**
 * Reads each record's id and parent link, then places every record under the single root:
 * duplicates, missing parents, several or no roots and cycles are rejected before any record is
 * decoded (a record needs its full relation to decode).
 */
function discoverStructure(
  items: readonly JsonNode[],
  basePath: string,
  fail: (message: string) => never,
): { list: Entry[]; childrenOf: Map<string, ProcessId[]> } {
  const found = items.map((node, index) => {
    const path = `${basePath}/${index}`;
    if (node.kind !== 'object') throw wireError(code, path, 'must be an object');
    const idNode = memberOf(node, 'process_id');
    if (idNode === undefined) throw wireError(code, `${path}/process_id`, 'is required');
    if (idNode.kind !== 'string') throw wireError(code, `${path}/process_id`, 'must be a string');
    let id: ProcessId;
    try {
      id = ProcessId.parse(idNode.value);
    } catch {
      throw wireError(code, `${path}/process_id`, `is not valid: ${describe(idNode.value)}`);
    }
    const relationNode = memberOf(node, 'relation');
    if (relationNode === undefined) throw wireError(code, `${path}/relation`, 'is required');
    const link = readParentLink(relationNode, `${path}/relation`, code);
    return { node, path, id, link };
  });
  const byId = new Map<string, (typeof found)[number]>();
  for (const item of found) {
    const key = item.id.toString();
    const earlier = byId.get(key);
    if (earlier !== undefined) throw wireError(code, item.path, `repeats process id ${key} (first at ${earlier.path})`);
    byId.set(key, item);
  }
  const roots = found.filter((item) => item.link === undefined);
  if (roots.length !== 1) fail(`needs exactly one root (a record without a parent link), found ${roots.length}`);
  const childrenOf = new Map<string, ProcessId[]>();
  const pendingChildren = new Map<string, Array<(typeof found)[number]>>();
  for (const item of found) {
    const link = item.link as ParentLink | undefined;
    if (link === undefined) continue;
    if (!byId.has(link.parentId.toString())) {
      throw wireError(code, `${item.path}/relation/parent_id`, `names ${link.parentId.toString()}, which is not in the tree`);
    }
    const key = link.parentId.toString();
    const list = pendingChildren.get(key);
    if (list === undefined) pendingChildren.set(key, [item]);
    else list.push(item);
  }
  const root = roots[0] as (typeof found)[number];
  const list: Entry[] = [];
  const queue: Array<{ item: (typeof found)[number]; relation: ProcessRelation }> = [
    { item: root, relation: ProcessRelation.root(root.id) },
  ];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    list.push({ node: next.item.node, path: next.item.path, relation: next.relation });
    const children = pendingChildren.get(next.item.id.toString()) ?? [];
    const ids: ProcessId[] = [];
    for (const child of children) {
      let relation: ProcessRelation;
      try {
        relation = ProcessRelation.child(child.id, next.relation, (child.link as ParentLink).childKey);
      } catch (error) {
        throw wireError(code, `${child.path}/relation`, messageOf(error));
      }
      ids.push(child.id);
      queue.push({ item: child, relation });
    }
    childrenOf.set(next.item.id.toString(), ids.sort((a, b) => a.compare(b)));
  }
  if (list.length !== found.length) {
    const placed = new Set(list.map((entry) => entry.path));
    const orphan = found.find((item) => !placed.has(item.path));
    throw wireError(code, orphan?.path ?? basePath, 'does not descend from the root (its parent links form a cycle)');
  }
  return { list, childrenOf };
}

function memberOf(node: JsonNode & { kind: 'object' }, name: string): JsonNode | undefined {
  for (const [member, value] of node.members) if (member === name) return value;
  return undefined;
}

/* ================================================================================================
 * Tree rules
 * ============================================================================================== */

function checkTreeRules(index: TreeIndex, limits: TreeLimits, fail: (message: string) => never): void {
  const processes = index.ordered;
  if (!limits.maxTreeProcesses.admits(BigInt(processes.length))) {
    fail(`${processes.length} processes exceed max_tree_processes ${limits.maxTreeProcesses.toString()}`);
  }
  for (const parent of processes) {
    checkChildren(index, parent, limits, fail);
    checkOwnClaims(index, parent, fail);
  }
}

/** A parent's rules over its direct children: counts, keys, capabilities and budget debits. */
function checkChildren(index: TreeIndex, parent: ProcessSnapshot, limits: TreeLimits, fail: (message: string) => never): void {
  const where = `process ${parent.processId.toString()}`;
  const children = index.childrenOf(parent.processId).map((id) => index.get(id) as ProcessSnapshot);
  if (!limits.maxChildren.admits(BigInt(children.length))) {
    fail(`${where} has ${children.length} children, more than max_children ${limits.maxChildren.toString()}`);
  }
  const active = children.filter((child) => !child.isTerminal).length;
  if (active > limits.maxActiveChildren) {
    fail(`${where} has ${active} non-terminal children, more than max_active_children ${limits.maxActiveChildren}`);
  }
  const keys = new Set<string>();
  for (const child of children) {
    const key = (child.relation.childKey as NonNullable<typeof child.relation.childKey>).toString();
    if (keys.has(key)) fail(`${where} has two children with child key ${key}`);
    keys.add(key);
    if (!parent.capabilities.allows(child.capabilities)) {
      fail(`child ${child.processId.toString()} holds capabilities its parent ${parent.processId.toString()} lacks`);
    }
  }
  for (const dimension of ['steps', 'effects', 'signals'] as const) {
    const quota = parent.budget[dimension];
    if (quota.unlimited) continue; // an unlimited parent grants without a debit (allocation is 0)
    let debit = 0n;
    for (const child of children) {
      const granted = child.budget[dimension].maximum;
      if (granted === undefined) {
        fail(`child ${child.processId.toString()} has an unlimited ${dimension} budget from finite parent ${parent.processId.toString()}`);
      }
      debit += granted;
    }
    const allocated = parent.allocatedResources[dimension];
    if (allocated !== debit) {
      fail(`${where} allocated_resources.${dimension} is ${allocated}, but its children's ${dimension} grants sum to ${debit}`);
    }
  }
}

/** A process's own claims about the tree: failed child starts captured no child, child waits name direct children. */
function checkOwnClaims(index: TreeIndex, parent: ProcessSnapshot, fail: (message: string) => never): void {
  const where = `process ${parent.processId.toString()}`;
  for (const effect of parent.prepared?.effects() ?? []) {
    if (effect.failure === undefined || effect.effect.frameworkOperation().operation !== 'start_child') continue;
    const childId = ProcessId.child(effect.id);
    if (index.get(childId) !== undefined) {
      fail(`${where} effect ${effect.index} failed to start child ${childId.toString()}, yet the tree captures it`);
    }
  }
  for (const wait of parent.mailbox.waits()) {
    if (wait.spec === undefined) continue;
    for (const child of wait.spec.children) {
      if (!index.get(child)?.relation.parentId?.equals(parent.processId)) {
        fail(`${where} child wait ${wait.waitId.toString()} awaits ${child.toString()}, which is not its direct child`);
      }
    }
  }
}

/**
 * The rules of {@link TreeSnapshot.create} that `changes` take part in, given that `before` was a
 * valid tree: placement and capacity of each changed record; a changed record's own claims and
 * rendered facts; its parent's child aggregates (and, for a new child, the parent's claims); the
 * rendered facts of every ancestor (a pending drained answer reads the whole subtree). A parent's
 * aggregates also depend on its own capabilities, budget and allocations, so they are re-checked
 * when those change.
 */
function checkChanges(
  before: TreeIndex,
  after: TreeIndex,
  changes: readonly ProcessSnapshot[],
  limits: TreeLimits,
  fail: (message: string) => never,
): void {
  if (after.ordered.length !== before.ordered.length && !limits.maxTreeProcesses.admits(BigInt(after.ordered.length))) {
    fail(`${after.ordered.length} processes exceed max_tree_processes ${limits.maxTreeProcesses.toString()}`);
  }
  const aggregates = new Set<ProcessSnapshot>();
  const claims = new Set<ProcessSnapshot>();
  /** Processes whose rendered facts to re-check: all of them (`undefined`) or only the starts of these children. */
  const rendered = new Map<ProcessSnapshot, Set<string> | undefined>();
  for (const process of changes) {
    const where = `process ${process.processId.toString()}`;
    const previous = before.get(process.processId);
    const parent = process.relation.parentId === undefined ? undefined : (after.get(process.relation.parentId) as ProcessSnapshot);
    if (parent !== undefined && process.relation.depth !== parent.relation.depth + 1) {
      fail(`${where} has depth ${process.relation.depth}, but its parent is at depth ${parent.relation.depth}`);
    }
    process.checkCapacity(limits, (message) => fail(`${where}: ${message}`));
    if (previous === undefined || grantsChanged(previous, process)) aggregates.add(process);
    claims.add(process);
    rendered.set(process, undefined);
    if (parent === undefined) continue;
    aggregates.add(parent);
    if (previous === undefined) claims.add(parent);
    for (let ancestor: ProcessSnapshot | undefined = parent; ancestor !== undefined; ) {
      if (!rendered.has(ancestor) || rendered.get(ancestor) !== undefined) {
        const only = rendered.get(ancestor) ?? new Set<string>();
        only.add(process.processId.toString());
        rendered.set(ancestor, only);
      }
      const next: ProcessId | undefined = ancestor.relation.parentId;
      ancestor = next === undefined ? undefined : after.get(next);
    }
  }
  for (const parent of aggregates) checkChildren(after, after.get(parent.processId) as ProcessSnapshot, limits, fail);
  for (const process of claims) checkOwnClaims(after, after.get(process.processId) as ProcessSnapshot, fail);
  for (const [process, only] of rendered) checkRenderedFactsOf(after, after.get(process.processId) as ProcessSnapshot, fail, only);
}

/** Whether a parent's side of its child aggregates changed (capabilities, budget or allocations). */
function grantsChanged(before: ProcessSnapshot, after: ProcessSnapshot): boolean {
  const was = before.allocatedResources;
  const now = after.allocatedResources;
  return (
    before.capabilities !== after.capabilities ||
    before.budget !== after.budget ||
    was.steps !== now.steps ||
    was.effects !== now.effects ||
    was.signals !== now.signals
  );
}

/** For created trees: started children and pending child-wait answers agree with the captured children. */
function checkRenderedFacts(index: TreeIndex, fail: (message: string) => never): void {
  for (const process of index.ordered) checkRenderedFactsOf(index, process, fail);
}

/**
 * Children a retained start was rendered from, with the Effect it rendered: the result depends only
 * on the child record and the Effect (the child id derives from the Effect id), both immutable.
 */
const renderedStarts = new WeakMap<ProcessSnapshot, Effect>();

/**
 * One process's started children and pending child-wait answers against the captured children;
 * with `onlyStartsOf`, only the retained starts of those child ids (every pending answer still).
 */
function checkRenderedFactsOf(
  index: TreeIndex,
  process: ProcessSnapshot,
  fail: (message: string) => never,
  onlyStartsOf?: ReadonlySet<string>,
): void {
  const where = `process ${process.processId.toString()}`;
  for (const effect of process.prepared?.effects() ?? []) {
    if (effect.startedChildId === undefined) continue;
    if (onlyStartsOf !== undefined && !onlyStartsOf.has(effect.startedChildId.toString())) continue;
    const child = index.get(effect.startedChildId);
    if (child !== undefined && renderedStarts.get(child) === effect.effect) continue;
    const spec = (effect.effect.frameworkOperation() as { readonly spec: ChildSpec }).spec;
    let rendered: Effect;
    try {
      rendered = renderStartedChild(index, process.processId, effect.id, spec.input);
    } catch (error) {
      fail(`${where} effect ${effect.index} started a child that does not match: ${messageOf(error)}`);
    }
    if (!rendered.equals(effect.effect)) {
      fail(`${where} effect ${effect.index} request differs from the captured child ${effect.startedChildId.toString()}`);
    }
    if (child !== undefined) renderedStarts.set(child, effect.effect);
  }
  const mailbox = process.mailbox;
  for (let position = mailbox.cursor; position < mailbox.length; position += 1) {
    const record = mailbox.record(position);
    if (record?.kind !== 'child_wait_answer' || record.waitId === undefined) continue;
    const spec = mailbox.wait(record.waitId)?.spec as ChildWaitSpec;
    let payload: Payload;
    try {
      payload = renderChildWaitAnswer(index, process.processId, spec, record.answered ?? []);
    } catch (error) {
      fail(`${where} mailbox record ${position} cannot be rendered from the tree: ${messageOf(error)}`);
    }
    if (!payload.equals(record.payload)) {
      fail(`${where} mailbox record ${position} disagrees with the captured terminal results of its children`);
    }
  }
}

/**
 * The `start_child` Effect of a retained successful start, rebuilt from the captured child
 * (key, Deployment, budget, capabilities) and the retained input; the child must be a direct
 * child derived from the Effect, and its `child_request_digest` must cover exactly that request.
 */
function renderStartedChild(lookup: TreeLookup, parentId: ProcessId, effectId: EffectId, input: Payload): Effect {
  const childId = ProcessId.child(effectId);
  const child = lookup.get(childId);
  if (child === undefined || !child.relation.parentId?.equals(parentId)) {
    throw new KernelError(code, `child ${childId.toString()} is not a captured direct child of ${parentId.toString()}`);
  }
  const spec = ChildSpec.create({
    key: child.relation.childKey as NonNullable<typeof child.relation.childKey>,
    deploymentRef: child.deploymentRef,
    input,
    budget: child.budget,
    capabilities: child.capabilities,
  });
  if (!spec.digest().equals(child.childRequestDigest)) {
    throw new KernelError(code, `child ${childId.toString()} was started by a different request (child_request_digest mismatch)`);
  }
  return Effect.startChild(spec);
}

/** Renders a child-wait answer from the captured terminal results of `answered` (request order). */
function renderChildWaitAnswer(
  lookup: TreeLookup,
  openerId: ProcessId,
  spec: ChildWaitSpec,
  answered: readonly ProcessId[],
): Payload {
  const outcomes = answered.map((childId): ChildOutcomeFacts => {
    const child = lookup.get(childId);
    if (child === undefined || !child.relation.parentId?.equals(openerId)) {
      throw new KernelError(code, `answered child ${childId.toString()} is not a captured direct child of ${openerId.toString()}`);
    }
    const result = child.result();
    if (result === undefined) throw new KernelError(code, `answered child ${childId.toString()} is not terminal`);
    if (spec.boundary === 'terminal_result') return { result };
    const unresolved: UnresolvedEffect[] = [];
    const stack: ProcessId[] = [childId];
    for (let id = stack.pop(); id !== undefined; id = stack.pop()) {
      const member = lookup.get(id);
      if (member === undefined || !member.isTerminal) {
        throw new KernelError(code, `answered child ${childId.toString()} has a live descendant ${id.toString()}, so its subtree is not drained`);
      }
      for (const effectId of member.termination?.unresolvedEffectIds ?? []) unresolved.push({ processId: id, effectId });
      stack.push(...lookup.childrenOf(id));
    }
    return { result, subtreeUnresolved: unresolved };
  });
  return childWaitSatisfiedPayload(spec, outcomes);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
