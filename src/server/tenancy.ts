/**
 * Tenants: a tree belongs to the tenant whose API key started it. The tenant rides in the start
 * commit (`hostValues[tenantHostValue]`), which the host committer turns into a record beside the head
 * (Redis: `<prefix>:{<root>}:record:tenant`, written by the same script that installs the head), so a
 * tree is never visible without its owner. The snapshot schema stays the kernel's: tenancy is the
 * Host's fact, not the process's. A tree started with authentication off has no record and belongs to
 * {@link defaultTenant}.
 */

/** The `hostValues` member a start uses for its tenant. */
export const tenantHostValue = 'tenant';

/** The host record suffix holding a tree's tenant. */
export const tenantRecordSuffix = 'tenant';

/** The tenant of trees started without one (authentication off). */
export const defaultTenant = 'default';

const tenantPattern = /^[A-Za-z0-9._-]{1,64}$/;

/** Reads the tenant from a start commit's host values (undefined when absent or malformed). */
export function tenantOfHostValues(hostValues: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const value = hostValues?.[tenantHostValue];
  return typeof value === 'string' && tenantPattern.test(value) ? value : undefined;
}
