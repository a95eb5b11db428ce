import type { JsonNode } from './canonical-json.js';
import { parseJson } from './canonical-json.js';
import { ErrorCode, KernelError } from './errors.js';
import { encodeWire, maxUint64, WireRecord, type WireValue } from './wire.js';

export interface UsageConfig {
  readonly committedSteps: bigint;
  readonly preparedEffects: bigint;
  readonly acceptedSignals: bigint;
  readonly droppedDeltas: bigint;
}

/**
 * Cumulative consumption of one Process. Wire:
 * `{"committed_steps","prepared_effects","accepted_signals","dropped_deltas"}` (uint64 each).
 */
export class Usage {
  readonly committedSteps: bigint;
  readonly preparedEffects: bigint;
  readonly acceptedSignals: bigint;
  readonly droppedDeltas: bigint;

  private constructor(config: UsageConfig) {
    this.committedSteps = config.committedSteps;
    this.preparedEffects = config.preparedEffects;
    this.acceptedSignals = config.acceptedSignals;
    this.droppedDeltas = config.droppedDeltas;
    Object.freeze(this);
  }

  static of(config: Partial<UsageConfig> = {}): Usage {
    const usage = {
      committedSteps: config.committedSteps ?? 0n,
      preparedEffects: config.preparedEffects ?? 0n,
      acceptedSignals: config.acceptedSignals ?? 0n,
      droppedDeltas: config.droppedDeltas ?? 0n,
    };
    for (const [name, value] of Object.entries(usage)) {
      if (value < 0n || value > maxUint64) {
        throw new KernelError(ErrorCode.invalidUsage, `usage ${name} must be a uint64, got ${value}`);
      }
    }
    return new Usage(usage);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidUsage): Usage {
    const record = new WireRecord(node, path, code);
    const usage = new Usage({
      committedSteps: record.uint64('committed_steps'),
      preparedEffects: record.uint64('prepared_effects'),
      acceptedSignals: record.uint64('accepted_signals'),
      droppedDeltas: record.uint64('dropped_deltas'),
    });
    record.finish();
    return usage;
  }

  static parse(input: string | Uint8Array): Usage {
    return Usage.fromWire(parseJson(input, { code: ErrorCode.invalidUsage }));
  }

  equals(other: Usage): boolean {
    return this.json() === other.json();
  }

  toWire(): WireValue {
    return toWire(this);
  }

  json(): string {
    return encodeWire(this.toWire());
  }
}

function toWire(usage: UsageConfig): WireValue {
  // Members in canonical order: encodeWire then skips its sort.
  return {
    accepted_signals: usage.acceptedSignals,
    committed_steps: usage.committedSteps,
    dropped_deltas: usage.droppedDeltas,
    prepared_effects: usage.preparedEffects,
  };
}
