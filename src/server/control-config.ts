import { Quota, TreeLimits } from '../kernel/index.js';
import { encodeWire } from '../kernel/wire.js';
import { defaultPolicyBreakerFailures } from './gates/policy-breaker.js';

/**
 * Settings of tree control and spawn safety (docs/process-trees.md "Tree-wide control", "Spawn
 * limits"), read from the environment with the rest of the server configuration:
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `SCOPE_INTERRUPT_RELEASE_MS` | 30000 | the longest a tree interrupt holds child starts back (it ends earlier once every process is paused or ended) |
 * | `SCOPE_DEFAULT_MAX_DEPTH` | 16 | depth below the root a start gets when it names none |
 * | `SCOPE_DEFAULT_MAX_ACTIVE_CHILDREN` | 16 | live children per process a start gets when it names none |
 * | `SCOPE_DEFAULT_MAX_CHILDREN` | 4096 | children per process over its life a start gets when it names none |
 * | `SCOPE_DEFAULT_MAX_TREE_PROCESSES` | 10000 | processes per tree over its life a start gets when it names none |
 * | `SCOPE_POLICY_BREAKER_FAILURES` | 3 | gate policy failures in a row after which a tree's policies stop running (src/server/gates/policy-breaker.ts) |
 *
 * A default never exceeds the grant (`SCOPE_GRANTS` or the tenant's): the smaller one applies. Unlimited
 * children or tree processes are only had by asking (`{"maximum": null}`), and only where the grant allows it.
 */
export interface ControlConfig {
  readonly interruptReleaseMs: number;
  readonly spawnDefaults: SpawnDefaults;
  readonly policyBreakerFailures: number;
}

/** What an omitted spawn limit of a start becomes (each bounded by the grant). */
export interface SpawnDefaults {
  readonly maxDepth: number;
  readonly maxActiveChildren: number;
  readonly maxChildren: number;
  readonly maxTreeProcesses: number;
}

/**
 * Large enough for the demos (a 32-child fan-out needs a larger active-children grant anyway) and for an
 * agent whose every tool call is a child: thousands of calls per process, ten thousand processes per tree
 * (the tree's 16 MiB snapshot grant bounds it about there too). Finite, so one client cannot grow one tree
 * without end by leaving a member out.
 */
export const spawnDefaults: SpawnDefaults = Object.freeze({ maxDepth: 16, maxActiveChildren: 16, maxChildren: 4096, maxTreeProcesses: 10_000 });

export const defaultInterruptReleaseMs = 30_000;

const uint32Max = 0xffff_ffff;

/** Reads the variables above through the configuration's own integer reader (which records problems). */
export function readControlConfig(integer: (name: string, fallback: number, min: number, max: number) => number): ControlConfig {
  return Object.freeze({
    interruptReleaseMs: integer('SCOPE_INTERRUPT_RELEASE_MS', defaultInterruptReleaseMs, 1, 3_600_000),
    spawnDefaults: Object.freeze({
      maxDepth: integer('SCOPE_DEFAULT_MAX_DEPTH', spawnDefaults.maxDepth, 0, uint32Max),
      maxActiveChildren: integer('SCOPE_DEFAULT_MAX_ACTIVE_CHILDREN', spawnDefaults.maxActiveChildren, 1, uint32Max),
      maxChildren: integer('SCOPE_DEFAULT_MAX_CHILDREN', spawnDefaults.maxChildren, 0, Number.MAX_SAFE_INTEGER),
      maxTreeProcesses: integer('SCOPE_DEFAULT_MAX_TREE_PROCESSES', spawnDefaults.maxTreeProcesses, 1, Number.MAX_SAFE_INTEGER),
    }),
    policyBreakerFailures: integer('SCOPE_POLICY_BREAKER_FAILURES', defaultPolicyBreakerFailures, 1, 1_000_000),
  });
}

function smaller(quota: Quota, value: number): Quota {
  return quota.covers(Quota.of(value)) ? Quota.of(value) : quota;
}

/**
 * The limits a start gets for what it leaves out: the grant's, with each spawn limit lowered to its
 * default where the grant is larger (unlimited included).
 */
export function defaultLimitsWithin(grant: TreeLimits, defaults: SpawnDefaults): TreeLimits {
  // Every start asks with the server's (or its tenant's) grant: derive each pair once.
  let byDefaults = derivedLimits.get(grant);
  if (byDefaults === undefined) derivedLimits.set(grant, (byDefaults = new WeakMap()));
  let limits = byDefaults.get(defaults);
  if (limits === undefined) byDefaults.set(defaults, (limits = deriveDefaultLimits(grant, defaults)));
  return limits;
}

const derivedLimits = new WeakMap<TreeLimits, WeakMap<SpawnDefaults, TreeLimits>>();

function deriveDefaultLimits(grant: TreeLimits, defaults: SpawnDefaults): TreeLimits {
  const wire = JSON.parse(grant.json()) as Record<string, unknown>;
  wire.max_depth = Math.min(grant.maxDepth, defaults.maxDepth);
  wire.max_active_children = Math.min(grant.maxActiveChildren, defaults.maxActiveChildren);
  wire.max_children = smaller(grant.maxChildren, defaults.maxChildren).toWire();
  wire.max_tree_processes = smaller(grant.maxTreeProcesses, defaults.maxTreeProcesses).toWire();
  return TreeLimits.parse(encodeWire(wire as Parameters<typeof encodeWire>[0]));
}
