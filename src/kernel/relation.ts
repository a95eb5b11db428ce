import { parseJson, type JsonNode } from './canonical-json.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { ChildKey, ProcessId } from './identity.js';
import { encodeWire, WireRecord, type WireValue } from './wire.js';

const maxDepth = 0xffff_ffff;

/**
 * The immutable location of one Process in an Engine-owned tree. A root is its own root at depth 0
 * with no parent or key; a child has exactly one parent and one parent-scoped ChildKey, its depth
 * is the parent's plus one, and it is never the root.
 *
 * Wire: `{"child_key"?,"depth","parent_id"?,"root_id"}` — the Process's own id is carried by the
 * enclosing record, so decoding takes it as an argument.
 */
export class ProcessRelation {
  readonly #processId: ProcessId;
  readonly #rootId: ProcessId;
  readonly #parentId: ProcessId | undefined;
  readonly #childKey: ChildKey | undefined;
  readonly #depth: number;

  private constructor(
    processId: ProcessId,
    rootId: ProcessId,
    parentId: ProcessId | undefined,
    childKey: ChildKey | undefined,
    depth: number,
  ) {
    this.#processId = processId;
    this.#rootId = rootId;
    this.#parentId = parentId;
    this.#childKey = childKey;
    this.#depth = depth;
    Object.freeze(this);
  }

  /** The relation of a root Process: its own root, depth 0. */
  static root(id: ProcessId): ProcessRelation {
    if (!(id instanceof ProcessId)) throw invalid(`root id must be a ProcessId, got ${describe(id)}`);
    return new ProcessRelation(id, id, undefined, undefined, 0);
  }

  /** The relation of `id` started by the Process at `parent` under `key`. */
  static child(id: ProcessId, parent: ProcessRelation, key: ChildKey): ProcessRelation {
    if (!(id instanceof ProcessId)) throw invalid(`child id must be a ProcessId, got ${describe(id)}`);
    if (!(parent instanceof ProcessRelation)) throw invalid('parent must be a ProcessRelation');
    if (!(key instanceof ChildKey)) throw invalid(`child key must be a ChildKey, got ${describe(key)}`);
    if (id.equals(parent.#rootId)) throw invalid(`child ${id.toString()} cannot be its tree's root`);
    if (id.equals(parent.#processId)) throw invalid(`child ${id.toString()} cannot be its own parent`);
    if (parent.#depth >= maxDepth) throw invalid('child depth would exceed the uint32 range');
    return new ProcessRelation(id, parent.#rootId, parent.#processId, key, parent.#depth + 1);
  }

  /**
   * Strict decode for the Process `processId`. Besides the shape, it checks the relation rules:
   * root ⇔ depth 0 ⇔ no parent and no key ⇔ process is the root; a child's parent is the root
   * exactly at depth 1, and is neither the child itself.
   */
  static fromWire(
    node: JsonNode,
    processId: ProcessId,
    path = '',
    code: string = ErrorCode.invalidProcessRelation,
  ): ProcessRelation {
    const record: WireRecord = new WireRecord(node, path, code);
    const rootId = record.identity('root_id', (text) => ProcessId.parse(text));
    const depth = record.uint32('depth');
    const parentId = record.has('parent_id')
      ? record.identity('parent_id', (text) => ProcessId.parse(text))
      : undefined;
    const childKey = record.has('child_key') ? record.identity('child_key', (text) => ChildKey.parse(text)) : undefined;
    record.finish();
    if (depth === 0) {
      if (!rootId.equals(processId)) record.fail(`depth 0 is a root, but root_id is not the process ${processId.toString()}`, 'root_id');
      if (parentId !== undefined) record.fail('a root has no parent', 'parent_id');
      if (childKey !== undefined) record.fail('a root has no child key', 'child_key');
    } else {
      if (rootId.equals(processId)) record.fail('a child cannot be its tree\'s root', 'root_id');
      if (parentId === undefined) record.fail('a child (depth > 0) needs a parent_id');
      if (childKey === undefined) record.fail('a child (depth > 0) needs a child_key');
      if (parentId.equals(processId)) record.fail('a child cannot be its own parent', 'parent_id');
      if (depth === 1 && !parentId.equals(rootId)) record.fail('a depth-1 child\'s parent must be the root', 'parent_id');
      if (depth > 1 && parentId.equals(rootId)) record.fail('the root\'s children are at depth 1', 'depth');
    }
    return new ProcessRelation(processId, rootId, parentId, childKey, depth);
  }

  static parse(input: string | Uint8Array, processId: ProcessId): ProcessRelation {
    return ProcessRelation.fromWire(
      parseJson(input, { code: ErrorCode.invalidProcessRelation, what: 'process relation' }),
      processId,
    );
  }

  get processId(): ProcessId {
    return this.#processId;
  }

  get rootId(): ProcessId {
    return this.#rootId;
  }

  /** The direct parent, or undefined for a root. */
  get parentId(): ProcessId | undefined {
    return this.#parentId;
  }

  /** The parent-scoped logical child identity, or undefined for a root. */
  get childKey(): ChildKey | undefined {
    return this.#childKey;
  }

  /** 0 for a root; the parent's depth plus one for every child. */
  get depth(): number {
    return this.#depth;
  }

  get isRoot(): boolean {
    return this.#parentId === undefined;
  }

  equals(other: ProcessRelation | undefined): boolean {
    return (
      other instanceof ProcessRelation &&
      other.#processId.equals(this.#processId) &&
      other.#rootId.equals(this.#rootId) &&
      other.#depth === this.#depth &&
      sameOptional(other.#parentId, this.#parentId) &&
      sameOptional(other.#childKey, this.#childKey)
    );
  }

  toWire(): WireValue {
    // Members in canonical order: encodeWire then skips its sort.
    return {
      child_key: this.#childKey?.toString(),
      depth: this.#depth,
      parent_id: this.#parentId?.toString(),
      root_id: this.#rootId.toString(),
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }
}

function invalid(message: string): KernelError {
  return new KernelError(ErrorCode.invalidProcessRelation, `invalid process relation: ${message}`);
}

function sameOptional(a: ProcessId | ChildKey | undefined, b: ProcessId | ChildKey | undefined): boolean {
  return a === undefined ? b === undefined : a.equals(b);
}

