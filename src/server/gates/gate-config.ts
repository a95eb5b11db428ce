/**
 * Settings of host-owned gates (README "Host-owned gates"), read from the environment with the rest
 * of the server configuration:
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `SCOPE_GATE_MAX_TIMEOUT_MS` | 604800000 (7 days) | the longest a host-owned gate stays open (and the default); past it the gate is closed (`expired`) |
 * | `SCOPE_GATE_MAX_PER_TENANT` | 1000 | open or answered host-owned gates one tenant may hold; one more is 429 `gate_capacity` |
 * | `SCOPE_GATE_MAX_OPEN` | 10000 | the same across every tenant and node sharing the store |
 */
export interface GateConfig {
  readonly maxTimeoutMs: number;
  readonly maxPerTenant: number;
  readonly maxOpen: number;
}

export const gateDefaults: GateConfig = Object.freeze({ maxTimeoutMs: 7 * 24 * 60 * 60 * 1000, maxPerTenant: 1_000, maxOpen: 10_000 });

/** Reads the variables above through the configuration's own integer reader (which records problems). */
export function readGateConfig(integer: (name: string, fallback: number, min: number, max: number) => number): GateConfig {
  return Object.freeze({
    // At most a year: expiry is an absolute time every node compares, and a gate is a person's task.
    maxTimeoutMs: integer('SCOPE_GATE_MAX_TIMEOUT_MS', gateDefaults.maxTimeoutMs, 1_000, 366 * 24 * 60 * 60 * 1000),
    maxPerTenant: integer('SCOPE_GATE_MAX_PER_TENANT', gateDefaults.maxPerTenant, 1, 1_000_000),
    maxOpen: integer('SCOPE_GATE_MAX_OPEN', gateDefaults.maxOpen, 1, 10_000_000),
  });
}
