import { createHash } from 'node:crypto';

/**
 * Gate identities. A process-owned gate is named by its process and wait alone, so every node computes
 * the same id without asking anyone, and any node can read the process back out of it (to find the
 * tree, its tenant and its owner): `gate:` then the base64url of `<processId> <waitId>`.
 */

const gatePrefix = 'gate:';
/** Both halves are identities (`[A-Za-z0-9._:-]`), so a space separates them unambiguously. */
const identity = /^[A-Za-z0-9._:-]{1,256}$/;

export interface GateSubjectIds {
  readonly processId: string;
  readonly waitId: string;
}

export function gateIdOf(processId: string, waitId: string): string {
  return gatePrefix + Buffer.from(`${processId} ${waitId}`, 'utf8').toString('base64url');
}

/** The process and wait a gate id names, or undefined when it names none. */
export function parseGateId(gateId: string): GateSubjectIds | undefined {
  if (typeof gateId !== 'string' || !gateId.startsWith(gatePrefix)) return undefined;
  const encoded = gateId.slice(gatePrefix.length);
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) return undefined;
  const [processId, waitId, ...rest] = Buffer.from(encoded, 'base64url').toString('utf8').split(' ');
  if (rest.length > 0 || processId === undefined || waitId === undefined || !identity.test(processId) || !identity.test(waitId)) return undefined;
  // Only the canonical spelling names the gate (one gate, one id).
  return gateIdOf(processId, waitId) === gateId ? { processId, waitId } : undefined;
}

/**
 * The id of the signal that carries an answer given through a gate: one per gate and request id, so
 * the same request sent again is the same signal (the mailbox answers it as a duplicate) and two
 * requests are two signals (the second meets an answered wait). Outside the engine's namespace.
 */
export function answerSignalId(gateId: string, requestId: string): string {
  return `gate-answer:${createHash('sha256').update(`${gateId}\u0000${requestId}`, 'utf8').digest('hex')}`;
}
