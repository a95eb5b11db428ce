import { planningDefinition } from '../../../strategies/planning/definition.js';
import { goapPlanner } from '../../../strategies/planning/goap/planner.js';
import type { Planner } from '../../../strategies/planning/planner.js';
import { type Definition, Deployment, Digest } from '../../kernel/index.js';
import { ownerDispatched } from '../../transport/placement.js';
import { type WorldAction, planningWorldDispatcher } from '../dispatchers/planning-world.js';

/**
 * The planning example (docs/strategies/planning.md): `example.planning.errands` plans errands with
 * goap over a simulated world (src/server/dispatchers/planning-world.ts). Every process starts at
 * home with the car at home and no groceries. Driving is cheapest, but `drive_to_store` fails its first
 * attempt (the car does not start) and `take_bus_home` reports success without taking anyone home
 * (the bus was full): one failed and one unconfirmed action, so the re-planning is visible.
 */
export const errandsName = 'example.planning.errands';

export const errandActions: Readonly<Record<string, WorldAction & { readonly cost: number }>> = Object.freeze({
  drive_to_store: { preconditions: { at: 'home', car_at: 'home' }, effects: { at: 'store', car_at: 'store' }, cost: 2 },
  walk_to_store: { preconditions: { at: 'home' }, effects: { at: 'store' }, cost: 5 },
  buy_groceries: { preconditions: { at: 'store' }, effects: { groceries: true }, cost: 1 },
  drive_home: { preconditions: { at: 'store', car_at: 'store' }, effects: { at: 'home', car_at: 'home' }, cost: 2 },
  take_bus_home: { preconditions: { at: 'store' }, effects: { at: 'home' }, cost: 3 },
  walk_home: { preconditions: { at: 'store' }, effects: { at: 'home' }, cost: 5 },
});

/** The errands Definition (a test may rename it or give it another planner). */
export function errandsDefinition(options: { readonly name?: string; readonly planner?: Planner } = {}): Definition {
  return planningDefinition({
    name: options.name ?? errandsName,
    description: 'Plans and runs errands toward a goal {goal: {fact: value}} over a simulated world, re-sensing after every action.',
    actions: Object.entries(errandActions).map(([name, action]) => ({ name, ...action, execution: { kind: 'dispatch' } as const })),
    planner: options.planner ?? goapPlanner({ maxExpansions: 1_000, maxGenerated: 10_000 }),
    maxRounds: 16,
  });
}

/** The errands world: every process starts at home, the car at home, no groceries. */
export function errandsWorld(): ReturnType<typeof planningWorldDispatcher> {
  return planningWorldDispatcher({ initial: { at: 'home', car_at: 'home', groceries: false }, actions: errandActions, failOnce: ['drive_to_store'], noEffect: ['take_bus_home'] });
}

export function planningDeployments(): Deployment[] {
  return [
    Deployment.create({
      definition: errandsDefinition(),
      // The world is this process's memory: only the tree's owner may serve it.
      dispatcher: ownerDispatched(errandsWorld()),
      implementationDigest: Digest.of(`scope:${errandsName}:implementation:v1`),
      configurationDigest: Digest.of(`scope:${errandsName}:configuration:v1`),
    }),
  ];
}
