import type { JsonNode } from './canonical-json.js';
import { parseJson } from './canonical-json.js';
import { ErrorCode, KernelError } from './errors.js';
import { Quota } from './quota.js';
import { encodeWire, WireRecord, type WireValue } from './wire.js';

export interface TreeLimitsConfig {
  /** Bounds the root-relative depth of any Process. */
  readonly maxDepth: number;
  /** Lifetime children of one Process; a finite zero confines execution to the root. */
  readonly maxChildren: Quota;
  /** Concurrent non-terminal children of one Process; must be > 0. */
  readonly maxActiveChildren: number;
  /** Lifetime Processes of one tree; must admit at least the root. */
  readonly maxTreeProcesses: Quota;
  /** Unconsumed mailbox suffix of each Process; > 0 and ≤ 2^32−1 (a Transition consumes a uint32). */
  readonly maxPendingSignals: bigint;
  /** The encoded tree, completed descendants included. */
  readonly maxSnapshotBytes: Quota;
  /** Each encoded Process snapshot, retained history included. */
  readonly maxProcessSnapshotBytes: Quota;
}

const uint32Max = 0xffff_ffff;

/**
 * The capacity policy shared by every Process of one root tree. A tree snapshot carries exactly one,
 * so recovery cannot give members different bounds, and captured limits survive restoration without
 * new Engine defaults.
 */
export class TreeLimits implements TreeLimitsConfig {
  readonly maxDepth: number;
  readonly maxChildren: Quota;
  readonly maxActiveChildren: number;
  readonly maxTreeProcesses: Quota;
  readonly maxPendingSignals: bigint;
  readonly maxSnapshotBytes: Quota;
  readonly maxProcessSnapshotBytes: Quota;

  /** See {@link defaultTreeLimits}. */
  static readonly defaults: TreeLimits = new TreeLimits({
    maxDepth: 16,
    maxChildren: Quota.unlimited(),
    maxActiveChildren: 16,
    maxTreeProcesses: Quota.unlimited(),
    maxPendingSignals: 10_000n,
    maxSnapshotBytes: Quota.unlimited(),
    maxProcessSnapshotBytes: Quota.unlimited(),
  });

  private constructor(config: TreeLimitsConfig) {
    this.maxDepth = config.maxDepth;
    this.maxChildren = config.maxChildren;
    this.maxActiveChildren = config.maxActiveChildren;
    this.maxTreeProcesses = config.maxTreeProcesses;
    this.maxPendingSignals = config.maxPendingSignals;
    this.maxSnapshotBytes = config.maxSnapshotBytes;
    this.maxProcessSnapshotBytes = config.maxProcessSnapshotBytes;
    Object.freeze(this);
  }

  /**
   * Engine configuration: omitted (or zero) depth, active-child and pending-signal bounds inherit
   * the defaults; omitted quotas are unlimited.
   */
  static of(config: Partial<TreeLimitsConfig> = {}): TreeLimits {
    const defaults = TreeLimits.defaults;
    return TreeLimits.validated({
      maxDepth: config.maxDepth || defaults.maxDepth,
      maxChildren: config.maxChildren ?? defaults.maxChildren,
      maxActiveChildren: config.maxActiveChildren || defaults.maxActiveChildren,
      maxTreeProcesses: config.maxTreeProcesses ?? defaults.maxTreeProcesses,
      maxPendingSignals: config.maxPendingSignals || defaults.maxPendingSignals,
      maxSnapshotBytes: config.maxSnapshotBytes ?? defaults.maxSnapshotBytes,
      maxProcessSnapshotBytes: config.maxProcessSnapshotBytes ?? defaults.maxProcessSnapshotBytes,
    });
  }

  /** Decoding is exact: a captured tree keeps its limits, so nothing inherits a default here. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidTreeLimits): TreeLimits {
    const record = new WireRecord(node, path, code);
    const config: TreeLimitsConfig = {
      maxDepth: record.uint32('max_depth'),
      maxChildren: Quota.fromWire(record.required('max_children'), record.childPath('max_children'), code),
      maxActiveChildren: record.uint32('max_active_children'),
      maxTreeProcesses: Quota.fromWire(
        record.required('max_tree_processes'),
        record.childPath('max_tree_processes'),
        code,
      ),
      maxPendingSignals: record.uint64('max_pending_signals'),
      maxSnapshotBytes: Quota.fromWire(
        record.required('max_snapshot_bytes'),
        record.childPath('max_snapshot_bytes'),
        code,
      ),
      maxProcessSnapshotBytes: Quota.fromWire(
        record.required('max_process_snapshot_bytes'),
        record.childPath('max_process_snapshot_bytes'),
        code,
      ),
    };
    record.finish();
    return TreeLimits.validated(config, code, path);
  }

  static parse(input: string | Uint8Array): TreeLimits {
    return TreeLimits.fromWire(parseJson(input, { code: ErrorCode.invalidTreeLimits }));
  }

  private static validated(
    config: TreeLimitsConfig,
    code: string = ErrorCode.invalidTreeLimits,
    path = '',
  ): TreeLimits {
    const fail = (message: string): never => {
      throw new KernelError(code, `${path || '/'} ${message}`);
    };
    if (!Number.isInteger(config.maxDepth) || config.maxDepth < 0 || config.maxDepth > uint32Max) {
      fail('max_depth must be a uint32');
    }
    if (!Number.isInteger(config.maxActiveChildren) || config.maxActiveChildren < 1 || config.maxActiveChildren > uint32Max) {
      fail('max_active_children must be a uint32 greater than zero');
    }
    if (config.maxTreeProcesses.maximum === 0n) fail('max_tree_processes must admit at least the root');
    if (config.maxPendingSignals < 1n || config.maxPendingSignals > BigInt(uint32Max)) {
      fail('max_pending_signals must be in 1..2^32-1');
    }
    return new TreeLimits(config);
  }

  equals(other: TreeLimits): boolean {
    return this.json() === other.json();
  }

  toWire(): WireValue {
    // Members in canonical order: encodeWire then skips its sort.
    return {
      max_active_children: this.maxActiveChildren,
      max_children: this.maxChildren.toWire(),
      max_depth: this.maxDepth,
      max_pending_signals: this.maxPendingSignals,
      max_process_snapshot_bytes: this.maxProcessSnapshotBytes.toWire(),
      max_snapshot_bytes: this.maxSnapshotBytes.toWire(),
      max_tree_processes: this.maxTreeProcesses.toWire(),
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }
}

/**
 * Conservative structured-concurrency and mailbox bounds (depth 16, 16 active children, 10 000
 * pending signals); cumulative counts and snapshot bytes stay unlimited.
 */
export function defaultTreeLimits(): TreeLimits {
  return TreeLimits.defaults;
}
