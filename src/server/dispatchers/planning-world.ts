import { decodePlanningRequest } from '../../../strategies/planning/wire.js';
import { type Facts, applyEffects, satisfies } from '../../../strategies/planning/world.js';
import { type DeltaEmitter, type Dispatcher, type EffectRequest, Payload, type ReplayPolicy, Settlement } from '../../kernel/index.js';

/**
 * A small simulated world for planning deployments (the example `example.planning.errands`): the
 * sensor and the actions of the planning strategy (strategies/planning/wire.ts) over one world state
 * per Process, kept in this dispatcher's memory.
 *
 * - `planning.sense` settles `{world}` — the Process's world now (the `initial` world the first time).
 * - `planning.act` runs the named action against the world: an unknown action, or one whose
 *   preconditions do not hold in the real world, settles failed; an action in `failOnce` fails its
 *   first attempt in each world (`{error:{code:"planning.example.action_failed"}}`); an action in
 *   `noEffect` reports success and changes nothing (sensing will not confirm it); any other action
 *   applies its effects and settles `{world}`.
 *
 * Each settlement is remembered by EffectId, so a replay of the same Effect returns the same
 * settlement and changes nothing again: replay under the same identity is safe. The world lives in
 * this process's memory, so the deployment marks this dispatcher owner-dispatched; a restart starts
 * every world over (a demo, not a store). At most `maxWorlds` worlds are kept (oldest dropped).
 */
export interface WorldAction {
  readonly preconditions: Facts;
  readonly effects: Facts;
}

export interface PlanningWorldOptions {
  readonly initial: Facts;
  readonly actions: Readonly<Record<string, WorldAction>>;
  readonly failOnce?: readonly string[];
  readonly noEffect?: readonly string[];
  readonly maxWorlds?: number;
}

interface World {
  state: Facts;
  readonly failed: Set<string>;
  readonly settled: Map<string, Settlement>;
}

function failed(code: string, message: string): Settlement {
  return Settlement.of('failed', Payload.encode({ error: { code, message } }));
}

export function planningWorldDispatcher(options: PlanningWorldOptions): Dispatcher & { worldOf(processId: string): Facts | undefined } {
  const worlds = new Map<string, World>();
  const maxWorlds = options.maxWorlds ?? 10_000;
  const worldFor = (processId: string): World => {
    let world = worlds.get(processId);
    if (world === undefined) {
      world = { state: options.initial, failed: new Set(), settled: new Map() };
      worlds.set(processId, world);
      if (worlds.size > maxWorlds) worlds.delete(worlds.keys().next().value as string);
    }
    return world;
  };
  const run = (request: EffectRequest, world: World): Settlement => {
    const decoded = decodePlanningRequest(request.effect.payload);
    if (!decoded.ok) return failed('planning.example.invalid_request', decoded.problem);
    if (decoded.operation === 'planning.sense') return Settlement.of('succeeded', Payload.encode({ world: world.state }));
    const action = Object.hasOwn(options.actions, decoded.action) ? options.actions[decoded.action] : undefined;
    if (action === undefined) return failed('planning.example.unknown_action', `this world has no action ${decoded.action}`);
    if (!satisfies(world.state, action.preconditions)) return failed('planning.example.not_applicable', `${decoded.action} is not applicable in this world now`);
    if (options.failOnce?.includes(decoded.action) && !world.failed.has(decoded.action)) {
      world.failed.add(decoded.action);
      return failed('planning.example.action_failed', `${decoded.action} failed (it fails its first attempt)`);
    }
    if (!options.noEffect?.includes(decoded.action)) world.state = applyEffects(world.state, action.effects);
    return Settlement.of('succeeded', Payload.encode({ world: world.state }));
  };
  return Object.freeze({
    async dispatch(request: EffectRequest, _emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
      signal.throwIfAborted();
      const world = worldFor(request.processId.toString());
      const key = request.id.toString();
      const known = world.settled.get(key);
      if (known !== undefined) return known;
      const settlement = run(request, world);
      world.settled.set(key, settlement);
      return settlement;
    },
    replayPolicy(): ReplayPolicy {
      return 'same_identity';
    },
    worldOf(processId: string): Facts | undefined {
      return worlds.get(processId)?.state;
    },
  });
}
