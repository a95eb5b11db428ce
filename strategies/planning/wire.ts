import { Effect } from '../../src/kernel/effect.js';
import { Payload } from '../../src/kernel/payload.js';
import type { PlanningAction } from './planner.js';
import { type Facts, facts } from './world.js';

/**
 * The planning strategy's dispatcher Effects (what a planning deployment's dispatcher serves).
 *
 * - sense: `{"operation":"planning.sense","round":n}` — report the world state now (`n` = the rounds
 *   made so far). Settle succeeded with `{"world":{fact: value, …}}`, or failed.
 * - act: `{"operation":"planning.act","action":name,"round":n,"predicted":{fact: value, …}}` — run one
 *   action. Settle succeeded when it reports success (sensing still has to confirm `predicted`), or
 *   failed (a failed attempt: the action is excluded from later plans).
 *
 * Determinism: the payloads are pure functions of the arguments.
 */
export const senseOperation = 'planning.sense';
export const actOperation = 'planning.act';

export function senseEffect(round: number): Effect {
  return Effect.dispatcher(Payload.encode({ operation: senseOperation, round }));
}

export function actEffect(action: PlanningAction, round: number): Effect {
  return Effect.dispatcher(Payload.encode({ operation: actOperation, action: action.name, round, predicted: action.effects }));
}

/** A decoded planning Effect payload, or why it is not one. */
export type PlanningRequest =
  | { readonly ok: true; readonly operation: 'planning.sense'; readonly round: number }
  | { readonly ok: true; readonly operation: 'planning.act'; readonly round: number; readonly action: string; readonly predicted: Facts }
  | { readonly ok: false; readonly problem: string };

/** Strictly decodes a planning Effect payload (for dispatchers). */
export function decodePlanningRequest(payload: Payload): PlanningRequest {
  const value = payload.decode<unknown>();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, problem: 'a planning request is a JSON object' };
  const record = value as Record<string, unknown>;
  const round = record.round;
  if (typeof round !== 'number' || !Number.isSafeInteger(round) || round < 0) return { ok: false, problem: 'round must be a non-negative integer' };
  const members = Object.keys(record).sort().join(',');
  if (record.operation === senseOperation && members === 'operation,round') return { ok: true, operation: senseOperation, round };
  if (record.operation === actOperation && members === 'action,operation,predicted,round' && typeof record.action === 'string') {
    try {
      return { ok: true, operation: actOperation, round, action: record.action, predicted: facts(record.predicted, 'predicted') };
    } catch (error) {
      return { ok: false, problem: error instanceof Error ? error.message : 'predicted is not a fact map' };
    }
  }
  return { ok: false, problem: `not a planning request (${senseOperation} {round} or ${actOperation} {action, round, predicted})` };
}
