import { EffectId, eventNames, type PreparedEffect, type ProcessId, type ProcessSnapshot } from '../kernel/index.js';
import type { EventLog } from '../store/event-log.js';
import type { EffectAttemptView, EffectView, Json } from './host.js';
import { failureView, toNumber } from './views.js';

/**
 * A process's effects. The snapshot holds only the current step's prepared effects; earlier ones
 * (and the attempt count of every one) are facts of the tree's log: `agent.effect.started` per
 * dispatch attempt, `agent.effect.finished` with the settlement status, `agent.effect.resolved` for
 * a host adjudication or replay. The views merge both, the snapshot winning for the current step.
 */

/** What the log says about one effect. */
interface EffectFacts {
  readonly stepSequence: number;
  target: 'framework' | 'dispatcher';
  attempts: number;
  /** Each dispatch attempt, oldest first (its worker is filled in by the host: attempt-workers.ts). */
  attemptList: EffectAttemptView[];
  resolved: boolean;
  lastStatus: string | undefined;
}

const readBatch = 500;

/** The effect facts of one process, read from its tree's log. */
async function effectFacts(log: EventLog, root: string, processId: string): Promise<Map<string, EffectFacts>> {
  const facts = new Map<string, EffectFacts>();
  let cursor = '0';
  for (;;) {
    const page = await log.readAfter(root, cursor, readBatch);
    for (const record of page) {
      cursor = record.position;
      if (record.processId !== processId || !record.type.startsWith('agent.effect.')) continue;
      let data: { effect_id?: unknown; step_sequence?: unknown; occurred_at?: unknown; payload?: Record<string, unknown> };
      try {
        data = JSON.parse(record.data) as typeof data;
      } catch {
        continue;
      }
      if (typeof data.effect_id !== 'string') continue;
      let entry = facts.get(data.effect_id);
      if (entry === undefined) {
        entry = {
          stepSequence: typeof data.step_sequence === 'number' ? data.step_sequence : 0,
          target: 'dispatcher',
          attempts: 0,
          attemptList: [],
          resolved: false,
          lastStatus: undefined,
        };
        facts.set(data.effect_id, entry);
      }
      const target = data.payload?.target;
      if (target === 'framework' || target === 'dispatcher') entry.target = target;
      if (record.type === eventNames.effectStarted) {
        entry.attempts += 1;
        const attemptId = data.payload?.attempt_id;
        if (typeof attemptId === 'string') entry.attemptList.push({ attemptId, startedAt: typeof data.occurred_at === 'string' ? data.occurred_at : null, worker: null });
      }
      if (record.type === eventNames.effectFinished) entry.lastStatus = String(data.payload?.settlement_status ?? '');
      if (record.type === eventNames.effectResolved) entry.resolved = true;
    }
    if (page.length < readBatch) return facts;
  }
}

/** Every effect of the process, oldest step first, then by batch index. */
export async function effectViews(log: EventLog, root: string, snapshot: ProcessSnapshot): Promise<EffectView[]> {
  const pid = snapshot.processId;
  const facts = await effectFacts(log, root, pid.toString());
  const views = new Map<string, EffectView>();
  for (const [id, entry] of facts) {
    views.set(id, {
      effectId: id,
      stepSequence: entry.stepSequence,
      batchIndex: batchIndexOf(pid, BigInt(entry.stepSequence), EffectId.parse(id)),
      target: entry.target,
      status: entry.resolved ? 'resolved' : entry.lastStatus === 'unknown' ? 'unknown' : entry.lastStatus === undefined ? 'pending' : 'settled',
      attempts: entry.attempts,
      attemptList: entry.attemptList,
      settlement: null,
      diagnostic: null,
    });
  }
  const prepared = snapshot.prepared;
  for (const effect of prepared?.effects() ?? []) {
    const id = effect.id.toString();
    views.set(id, preparedEffectView(effect, toNumber(prepared?.stepSequence ?? 0n, 'stepSequence'), facts.get(id)));
  }
  return [...views.values()].sort((a, b) => a.stepSequence - b.stepSequence || a.batchIndex - b.batchIndex);
}

/** Whether the process has (or had) effect `id`. */
export async function hasEffect(log: EventLog, root: string, snapshot: ProcessSnapshot, id: EffectId): Promise<boolean> {
  if (snapshot.preparedEffect(id) !== undefined) return true;
  return (await effectFacts(log, root, snapshot.processId.toString())).has(id.toString());
}

function preparedEffectView(effect: PreparedEffect, stepSequence: number, facts: EffectFacts | undefined): EffectView {
  const settlement = effect.settlement;
  let status: string;
  if (effect.phase === 'planned') status = 'planned';
  else if (effect.phase === 'pending') status = 'pending';
  else if (settlement?.status === 'unknown') status = 'unknown';
  else status = facts?.resolved === true ? 'resolved' : 'settled';
  return {
    effectId: effect.id.toString(),
    stepSequence,
    batchIndex: effect.index,
    target: effect.effect.target,
    status,
    attempts: facts?.attempts ?? 0,
    attemptList: facts?.attemptList ?? [],
    settlement:
      settlement === undefined ? null : { effectId: effect.id.toString(), status: settlement.status, payload: settlement.payload.decode<Json>() },
    diagnostic: failureView(effect.diagnostic ?? effect.failure),
  };
}

/** The batch index of `id` in step `stepSequence` of `processId` (derived identities; -1 if not found). */
function batchIndexOf(processId: ProcessId, stepSequence: bigint, id: EffectId): number {
  if (stepSequence < 1n) return -1;
  for (let index = 0; index < 1024; index += 1) {
    if (EffectId.derive(processId, stepSequence, index).equals(id)) return index;
  }
  return -1;
}
