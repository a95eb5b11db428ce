/**
 * The planning vocabulary's values (contract §6.5): facts, world states and conditions. A WorldState
 * is an immutable map from fact name to a scalar (boolean, safe integer or short string); a Condition
 * set requires some facts to hold given values (a conjunction), and an effect set assigns facts.
 * Facts a state does not mention hold no value: a condition on such a fact is not met.
 *
 * Determinism: every function here is pure; keys are kept in ascending code-unit order, so the
 * canonical key of a state (what the planner's duplicate detection compares) is unique per state.
 */

/** The value of one fact. */
export type FactValue = boolean | number | string;

/** An immutable fact → value map (a world state, a condition set or an effect set). */
export type Facts = Readonly<Record<string, FactValue>>;

export const maxFacts = 64;
export const maxFactText = 256;
const factName = /^[a-z][a-z0-9_]{0,63}$/;

/** Why a value is not a well-formed fact map; `code` is the planning failure code to report. */
export class PlanningValueError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'PlanningValueError';
    this.code = code;
  }
}

function isFactValue(value: unknown): value is FactValue {
  if (typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isSafeInteger(value);
  return typeof value === 'string' && value.length <= maxFactText;
}

/**
 * Strictly decodes a fact map: a JSON object of at most {@link maxFacts} lowercase fact names, each
 * a boolean, safe integer or string of at most {@link maxFactText} characters. Nothing is repaired.
 */
export function facts(value: unknown, what: string, code = 'planning.invalid_facts'): Facts {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PlanningValueError(code, `${what} must be a JSON object of facts`);
  const names = Object.keys(value).sort();
  if (names.length > maxFacts) throw new PlanningValueError(code, `${what} has ${names.length} facts; at most ${maxFacts}`);
  const out: Record<string, FactValue> = {};
  for (const name of names) {
    if (!factName.test(name)) throw new PlanningValueError(code, `${what}: ${JSON.stringify(name.slice(0, 80))} is not a fact name (^[a-z][a-z0-9_]{0,63}$)`);
    const fact = (value as Record<string, unknown>)[name];
    if (!isFactValue(fact)) throw new PlanningValueError(code, `${what}.${name} must be a boolean, a safe integer or a string of at most ${maxFactText} characters`);
    out[name] = fact;
  }
  return Object.freeze(out);
}

/** True when every condition holds in `world`. */
export function satisfies(world: Facts, conditions: Facts): boolean {
  for (const name of Object.keys(conditions)) {
    if (!Object.hasOwn(world, name) || world[name] !== conditions[name]) return false;
  }
  return true;
}

/** The conditions that do not hold in `world`, in name order. */
export function unmet(world: Facts, conditions: Facts): string[] {
  return Object.keys(conditions).filter((name) => !Object.hasOwn(world, name) || world[name] !== conditions[name]);
}

/** `world` with `effects` assigned (a new, frozen, key-ordered map; `world` is left as it is). */
export function applyEffects(world: Facts, effects: Facts): Facts {
  const merged: Record<string, FactValue> = { ...world, ...effects };
  const out: Record<string, FactValue> = {};
  for (const name of Object.keys(merged).sort()) out[name] = merged[name] as FactValue;
  return Object.freeze(out);
}

/** The canonical text of a fact map: equal maps, and only they, have equal keys. */
export function factsKey(world: Facts): string {
  return JSON.stringify(Object.keys(world).sort().map((name) => [name, world[name]]));
}
