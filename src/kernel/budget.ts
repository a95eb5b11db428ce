import type { JsonNode } from './canonical-json.js';
import { parseJson } from './canonical-json.js';
import { ErrorCode } from './errors.js';
import { Quota } from './quota.js';
import { encodeWire, WireRecord, type WireValue } from './wire.js';

export interface BudgetConfig {
  readonly steps: Quota;
  readonly effects: Quota;
  readonly signals: Quota;
}

/**
 * Cumulative work authority of one Process: Steps, Effects and Signals, each independent.
 * A finite parent permanently charges child grants; a finite parent can never grant an unlimited
 * child quota. Wire: `{"steps":Quota,"effects":Quota,"signals":Quota}`, all required.
 */
export class Budget {
  readonly steps: Quota;
  readonly effects: Quota;
  readonly signals: Quota;

  private constructor(config: BudgetConfig) {
    this.steps = config.steps;
    this.effects = config.effects;
    this.signals = config.signals;
    Object.freeze(this);
  }

  static of(config: BudgetConfig): Budget {
    return new Budget(config);
  }

  static unlimited(): Budget {
    return new Budget({ steps: Quota.unlimited(), effects: Quota.unlimited(), signals: Quota.unlimited() });
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidBudget): Budget {
    const record = new WireRecord(node, path, code);
    const budget = new Budget({
      steps: Quota.fromWire(record.required('steps'), record.childPath('steps'), code),
      effects: Quota.fromWire(record.required('effects'), record.childPath('effects'), code),
      signals: Quota.fromWire(record.required('signals'), record.childPath('signals'), code),
    });
    record.finish();
    return budget;
  }

  static parse(input: string | Uint8Array): Budget {
    return Budget.fromWire(parseJson(input, { code: ErrorCode.invalidBudget }));
  }

  /** Whether this budget can grant `child` in every dimension. */
  covers(child: Budget): boolean {
    return this.steps.covers(child.steps) && this.effects.covers(child.effects) && this.signals.covers(child.signals);
  }

  equals(other: Budget): boolean {
    return this.steps.equals(other.steps) && this.effects.equals(other.effects) && this.signals.equals(other.signals);
  }

  toWire(): WireValue {
    return { steps: this.steps.toWire(), effects: this.effects.toWire(), signals: this.signals.toWire() };
  }

  json(): string {
    return encodeWire(this.toWire());
  }
}
