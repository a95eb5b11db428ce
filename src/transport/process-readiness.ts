/**
 * The readiness rule of one process dispatcher key (a supervised command), the same wherever the
 * command runs — in the API process (`process:<key>` checks) or on a `scope worker` (its registry
 * heartbeat, judged by the API's `worker:<deployment>` checks).
 */

/** What the rule reads of a key's status. */
export interface ProcessKeyReadiness {
  readonly command: string;
  /** Whether the command is an executable file (a path, or found on the base PATH). */
  readonly resolvable: boolean;
  /** The last start's outcome, once one was tried: `started`, or the failure code. */
  readonly lastStart?: string;
}

/**
 * Why the key cannot run Effects now, or undefined when it can: its command does not resolve, or
 * its last start failed (the next dispatch tries again, and a success clears it).
 */
export function processKeyProblem(status: ProcessKeyReadiness): string | undefined {
  if (!status.resolvable) return `command ${JSON.stringify(status.command)} is not an executable file`;
  if (status.lastStart !== undefined && status.lastStart !== 'started') return `last start failed: ${status.lastStart}`;
  return undefined;
}
