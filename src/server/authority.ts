import { Budget, CapabilitySet, parseCapability, Quota, TreeLimits } from '../kernel/index.js';
import { encodeWire } from '../kernel/wire.js';
import type { BudgetView, QuotaView, TreeLimitsView } from './host.js';

/**
 * Authority values as JSON (the views of host.ts) ↔ kernel values, and the narrowing rule a start
 * request must satisfy. Parsers throw {@link AuthorityShapeError} with a JSON path; callers turn it
 * into their own error (a config problem, or `invalid_request`).
 */

/** What the server grants every new root: the ceiling a start request may only narrow. */
export interface Grant {
  readonly budget: Budget;
  readonly treeLimits: TreeLimits;
  readonly capabilities: CapabilitySet;
}

export class AuthorityShapeError extends Error {
  constructor(readonly path: string, message: string) {
    super(`${path}: ${message}`);
    this.name = 'AuthorityShapeError';
  }
}

const uint32Max = 0xffff_ffff;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function onlyKeys(value: Record<string, unknown>, allowed: readonly string[], path: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) throw new AuthorityShapeError(`${path}/${key}`, 'is not a known member');
  }
}

/** `{maximum: null | non-negative safe integer}`. */
export function parseQuota(value: unknown, path: string): Quota {
  if (!isRecord(value)) throw new AuthorityShapeError(path, 'must be {"maximum": integer | null}');
  onlyKeys(value, ['maximum'], path);
  if (!Object.hasOwn(value, 'maximum')) throw new AuthorityShapeError(`${path}/maximum`, 'is required');
  const maximum = value.maximum;
  if (maximum === null) return Quota.unlimited();
  if (typeof maximum !== 'number' || !Number.isSafeInteger(maximum) || maximum < 0) {
    throw new AuthorityShapeError(`${path}/maximum`, 'must be null or a non-negative safe integer');
  }
  return Quota.of(maximum);
}

const budgetMembers = ['steps', 'effects', 'signals'] as const;

/**
 * A budget view. With a `base` members may be omitted (they keep the base's quota), which the server
 * grant uses over the safe defaults; a start request gives all three.
 */
export function parseBudget(value: unknown, path: string, base?: Budget): Budget {
  if (!isRecord(value)) throw new AuthorityShapeError(path, 'must be an object with steps, effects and signals');
  onlyKeys(value, budgetMembers, path);
  const quotas: Record<string, Quota> = {};
  for (const member of budgetMembers) {
    if (!Object.hasOwn(value, member)) {
      if (base === undefined) throw new AuthorityShapeError(`${path}/${member}`, 'is required');
      quotas[member] = base[member];
      continue;
    }
    quotas[member] = parseQuota(value[member], `${path}/${member}`);
  }
  return Budget.of({ steps: quotas.steps as Quota, effects: quotas.effects as Quota, signals: quotas.signals as Quota });
}

const quotaLimits = ['maxChildren', 'maxTreeProcesses', 'maxSnapshotBytes', 'maxProcessSnapshotBytes'] as const;
const numberLimits = ['maxDepth', 'maxActiveChildren', 'maxPendingSignals'] as const;

/** Bounds of the number-valued limits: `[minimum, maximum]`. */
const numberLimitRange: Readonly<Record<(typeof numberLimits)[number], readonly [number, number]>> = {
  maxDepth: [0, uint32Max],
  maxActiveChildren: [1, uint32Max],
  maxPendingSignals: [1, uint32Max],
};

/** A partial tree-limits view over `base`: omitted members keep the base value. */
export function parseTreeLimits(value: unknown, path: string, base: TreeLimits): TreeLimits {
  if (!isRecord(value)) throw new AuthorityShapeError(path, 'must be an object of tree limits');
  onlyKeys(value, [...quotaLimits, ...numberLimits], path);
  const quota = (member: (typeof quotaLimits)[number]): Quota =>
    Object.hasOwn(value, member) ? parseQuota(value[member], `${path}/${member}`) : base[member];
  const number = (member: (typeof numberLimits)[number]): number | undefined => {
    if (!Object.hasOwn(value, member)) return undefined;
    const raw = value[member];
    const [min, max] = numberLimitRange[member];
    if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < min || raw > max) {
      throw new AuthorityShapeError(`${path}/${member}`, `must be an integer in ${min}..${max}`);
    }
    return raw;
  };
  const maxDepth = number('maxDepth');
  const maxActiveChildren = number('maxActiveChildren');
  const maxPendingSignals = number('maxPendingSignals');
  // TreeLimits.of maps a zero depth to the default; an explicit zero depth is a real limit, so an
  // exact value is built from the base's wire form instead.
  const wire = {
    max_depth: maxDepth ?? base.maxDepth,
    max_children: quota('maxChildren').toWire(),
    max_active_children: maxActiveChildren ?? base.maxActiveChildren,
    max_tree_processes: quota('maxTreeProcesses').toWire(),
    max_pending_signals: maxPendingSignals ?? Number(base.maxPendingSignals),
    max_snapshot_bytes: quota('maxSnapshotBytes').toWire(),
    max_process_snapshot_bytes: quota('maxProcessSnapshotBytes').toWire(),
  };
  try {
    return TreeLimits.parse(encodeWire(wire));
  } catch (error) {
    throw new AuthorityShapeError(path, error instanceof Error ? error.message : String(error));
  }
}

/** An array of distinct capability names (qualified names). */
export function parseCapabilities(value: unknown, path: string): CapabilitySet {
  if (!Array.isArray(value)) throw new AuthorityShapeError(path, 'must be an array of capability names');
  const names: string[] = [];
  value.forEach((name, index) => {
    try {
      names.push(parseCapability(name));
    } catch {
      throw new AuthorityShapeError(`${path}/${index}`, 'is not a capability name (a lowercase qualified name)');
    }
  });
  try {
    return CapabilitySet.of(names);
  } catch (error) {
    throw new AuthorityShapeError(path, error instanceof Error ? error.message : String(error));
  }
}

/** Every way `requested` exceeds `grant` (empty when it narrows or equals it). */
export function excessOf(grant: Grant, requested: Grant): string[] {
  const excess: string[] = [];
  for (const member of budgetMembers) {
    if (!grant.budget[member].covers(requested.budget[member])) {
      excess.push(`budget.${member} ${requested.budget[member].toString()} exceeds the grant ${grant.budget[member].toString()}`);
    }
  }
  for (const member of quotaLimits) {
    if (!grant.treeLimits[member].covers(requested.treeLimits[member])) {
      excess.push(`treeLimits.${member} ${requested.treeLimits[member].toString()} exceeds the grant ${grant.treeLimits[member].toString()}`);
    }
  }
  for (const member of numberLimits) {
    const asked = BigInt(requested.treeLimits[member]);
    const granted = BigInt(grant.treeLimits[member]);
    if (asked > granted) excess.push(`treeLimits.${member} ${asked} exceeds the grant ${granted}`);
  }
  for (const name of requested.capabilities.values()) {
    if (!grant.capabilities.contains(name)) excess.push(`capability ${name} is not granted`);
  }
  return excess;
}

/** A number view of a uint64, or undefined when it is not a safe integer. */
export function safeNumber(value: bigint): number | undefined {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= 0n ? Number(value) : undefined;
}

/** The views (for `/v1/deployments`-style reporting of a grant). */
export function quotaView(quota: Quota, toNumber: (value: bigint, what: string) => number, what: string): QuotaView {
  return { maximum: quota.maximum === undefined ? null : toNumber(quota.maximum, what) };
}

export function budgetView(budget: Budget, toNumber: (value: bigint, what: string) => number): BudgetView {
  return {
    steps: quotaView(budget.steps, toNumber, 'budget.steps'),
    effects: quotaView(budget.effects, toNumber, 'budget.effects'),
    signals: quotaView(budget.signals, toNumber, 'budget.signals'),
  };
}

export function treeLimitsView(limits: TreeLimits, toNumber: (value: bigint, what: string) => number): TreeLimitsView {
  return {
    maxDepth: limits.maxDepth,
    maxChildren: quotaView(limits.maxChildren, toNumber, 'treeLimits.maxChildren'),
    maxActiveChildren: limits.maxActiveChildren,
    maxTreeProcesses: quotaView(limits.maxTreeProcesses, toNumber, 'treeLimits.maxTreeProcesses'),
    maxPendingSignals: toNumber(limits.maxPendingSignals, 'treeLimits.maxPendingSignals'),
    maxSnapshotBytes: quotaView(limits.maxSnapshotBytes, toNumber, 'treeLimits.maxSnapshotBytes'),
    maxProcessSnapshotBytes: quotaView(limits.maxProcessSnapshotBytes, toNumber, 'treeLimits.maxProcessSnapshotBytes'),
  };
}
