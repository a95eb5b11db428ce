/**
 * The durable record of how a gate's wait was answered: written by the host committer in the very
 * commit whose head admits the answer (so the record exists iff the head holds the answer), beside
 * the head under the tree's key (`record:<suffix>`), read by any node.
 */

/** Who decided, as the server saw it: the gate route (a person), the low-level signal path, or a policy. */
export type GateProvenance = 'human' | 'api' | 'policy';

export const gateProvenances: readonly GateProvenance[] = ['human', 'api', 'policy'];

export interface GateAnswerRecord {
  readonly processId: string;
  readonly waitId: string;
  /** The signal that answered the wait. */
  readonly signalId: string;
  /** When the answer was admitted (the committed `agent.signal.accepted` event's time). */
  readonly answeredAt: string;
  readonly provenance: GateProvenance;
  /** A label for who answered: the authenticated principal when there is one, else what the caller said. */
  readonly actor: string | null;
  /** The request id the answer came with (gate route only). */
  readonly requestId: string | null;
  /** Policy answers: the rule that fired. */
  readonly rule: string | null;
}

export function gateRecordSuffix(processId: string, waitId: string): string {
  return `gate:${processId}:${waitId}`;
}

export function encodeGateRecord(record: GateAnswerRecord): string {
  return JSON.stringify(record);
}

/** Undefined for anything that is not a record this code wrote. */
export function decodeGateRecord(text: string | undefined): GateAnswerRecord | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<GateAnswerRecord>;
    if (typeof value !== 'object' || value === null) return undefined;
    if (typeof value.processId !== 'string' || typeof value.waitId !== 'string' || typeof value.signalId !== 'string' || typeof value.answeredAt !== 'string') return undefined;
    if (!gateProvenances.includes(value.provenance as GateProvenance)) return undefined;
    return {
      processId: value.processId,
      waitId: value.waitId,
      signalId: value.signalId,
      answeredAt: value.answeredAt,
      provenance: value.provenance as GateProvenance,
      actor: typeof value.actor === 'string' ? value.actor : null,
      requestId: typeof value.requestId === 'string' ? value.requestId : null,
      rule: typeof value.rule === 'string' ? value.rule : null,
    };
  } catch {
    return undefined;
  }
}
