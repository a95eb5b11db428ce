import { type Event, eventNames } from '../../kernel/index.js';
import { encodeGateRecord, type GateAnswerRecord, type GateProvenance, gateRecordSuffix } from './gate-record.js';

/** What the server knows of an answer it is about to deliver: set by the server, never by the caller. */
export interface AnswerClaim {
  readonly provenance: GateProvenance;
  readonly actor: string | null;
  readonly requestId: string | null;
  readonly rule: string | null;
}

/** A record the committer adds to the commit that admits an answer. */
export interface GateRecordWrite {
  readonly suffix: string;
  readonly value: string;
}

/**
 * The bridge between answering a gate and the commit that admits the answer. The gate service names
 * the signal it is about to deliver (on the tree's owner, in this process) with its claim; the host
 * committer, building a commit, turns every wait answer among the commit's `agent.signal.accepted`
 * events into a gate record carried by that same commit — with the claim when one is waiting, and as
 * an `api` answer (the low-level signal path, a message) when none is. So the record lands exactly
 * when the head admits the answer, and a caller cannot choose its provenance: only this process's
 * code can put a claim here.
 */
export class AnswerClaims {
  readonly #pending = new Map<string, AnswerClaim>();

  /** Registers the claim of one delivery; the returned function withdraws it (call it when the delivery settled). */
  expect(processId: string, signalId: string, claim: AnswerClaim): () => void {
    const key = claimKey(processId, signalId);
    this.#pending.set(key, claim);
    return () => {
      if (this.#pending.get(key) === claim) this.#pending.delete(key);
    };
  }

  /** The gate records of the wait answers a commit admits (empty for most commits). */
  recordsFor(events: readonly Event[]): GateRecordWrite[] {
    const writes: GateRecordWrite[] = [];
    for (const event of events) {
      if (event.name !== eventNames.signalAccepted) continue;
      const accepted = event.signalAccepted();
      const waitId = accepted?.waitId?.toString();
      if (accepted === undefined || waitId === undefined) continue;
      const processId = event.processId.toString();
      const signalId = accepted.signalId.toString();
      const claim = this.#pending.get(claimKey(processId, signalId));
      const record: GateAnswerRecord = {
        processId,
        waitId,
        signalId,
        answeredAt: event.occurredAt,
        provenance: claim?.provenance ?? 'api',
        actor: claim?.actor ?? null,
        requestId: claim?.requestId ?? null,
        rule: claim?.rule ?? null,
      };
      writes.push({ suffix: gateRecordSuffix(processId, waitId), value: encodeGateRecord(record) });
    }
    return writes;
  }
}

function claimKey(processId: string, signalId: string): string {
  return `${processId} ${signalId}`;
}
