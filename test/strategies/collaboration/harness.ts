/**
 * Shared fixtures of the collaboration tests: a gate Dispatcher the test opens by name (so a task
 * or a turn stays running exactly as long as a test needs, no sleeps), a gated worker, and a
 * builder for collaborations over scripted coordinators that record every Turn they see.
 */
import { echoDefinition } from '../../../strategies/demo/echo.js';
import { collaborationDefinition, type CollaborationConfig, type WorkerConfig } from '../../../strategies/collaboration/collaboration.js';
import { coordinatorDefinition, type CoordinatorSpec } from '../../../strategies/collaboration/coordinator.js';
import type { Decision, Turn } from '../../../strategies/collaboration/schemas.js';
import { singleEffectDefinition } from '../../../strategies/demo/single-effect.js';
import { Budget } from '../../../src/kernel/budget.js';
import { CapabilitySet } from '../../../src/kernel/capability.js';
import type { DeltaEmitter, Dispatcher } from '../../../src/kernel/definition.js';
import type { EffectRequest } from '../../../src/kernel/effect.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Descriptor } from '../../../src/kernel/descriptor.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Engine } from '../../../src/kernel/engine.js';
import type { Event } from '../../../src/kernel/event.js';
import type { Failure } from '../../../src/kernel/failure.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Schema } from '../../../src/kernel/schema.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { echoDispatcher } from '../../../src/server/demo-dispatchers.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';

/** A Dispatcher whose Effects `{gate, value?}` settle only when the test opens their gate. */
export class Gates {
  readonly #opened = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  readonly #started = new Map<string, { promise: Promise<void>; resolve: () => void }>();

  #entry(map: Map<string, { promise: Promise<void>; resolve: () => void }>, name: string) {
    let entry = map.get(name);
    if (entry === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      entry = { promise, resolve };
      map.set(name, entry);
    }
    return entry;
  }

  /** Resolves once a dispatch is waiting at `name`. */
  started(name: string): Promise<void> {
    return this.#entry(this.#started, name).promise;
  }

  open(name: string): void {
    this.#entry(this.#opened, name).resolve();
  }

  readonly dispatcher: Dispatcher = Object.freeze({
    dispatch: async (request: EffectRequest, _emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> => {
      const body = request.effect.payload.decode<{ gate?: string; value?: unknown }>();
      if (typeof body.gate === 'string') {
        this.#entry(this.#started, body.gate).resolve();
        await Promise.race([
          this.#entry(this.#opened, body.gate).promise,
          new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
        ]);
      }
      return Settlement.of('succeeded', Payload.encode({ value: body.value ?? null }));
    },
    replayPolicy: () => 'same_identity' as const,
  });
}

const gatedSchema = Schema.of({
  type: 'object',
  properties: { gate: { type: 'string' }, value: { type: 'string' } },
  required: ['value'],
  additionalProperties: false,
});

/** `test.worker.gated`: one Effect `{gate?, value}` on the gate Dispatcher; output `{value}`. */
export function gatedWorker(gates: Gates): Deployment {
  const definition = singleEffectDefinition<{ gate?: string; value: string }>({
    descriptor: Descriptor.create({
      name: 'test.worker.gated',
      description: 'Settles when its gate opens, with its value.',
      inputSchema: gatedSchema,
      outputSchema: Schema.of({ type: 'object', properties: { value: { type: 'string' } }, required: ['value'], additionalProperties: false }),
    }),
    stateKind: 'test.worker.gated',
    effectPayload: (input) => input,
    finish: (input) => ({ output: { value: input.value } }),
  });
  return deployment('test.worker.gated', definition, gates.dispatcher);
}

export function echoWorker(): Deployment {
  return deployment('demo.echo', echoDefinition, echoDispatcher());
}

export function deployment(name: string, definition: Deployment['definition'], dispatcher?: Dispatcher): Deployment {
  return Deployment.create({ definition, dispatcher, implementationDigest: Digest.of(`test:${name}`), configurationDigest: Digest.of(`test:${name}:config`) });
}

export const grant = (steps = 16): WorkerConfig['budget'] => Budget.of({ steps: Quota.of(steps), effects: Quota.of(8), signals: Quota.of(32) });

export const worker = (deployment: Deployment): WorkerConfig => ({ deployment, budget: grant(), capabilities: CapabilitySet.empty });

export const stateSchema = Schema.of({ type: 'object' });
export const outputSchema = Schema.of({ type: 'object' });

export interface Scripted {
  readonly deployment: Deployment;
  /** Every Turn the coordinator decided on, in order. */
  readonly turns: Turn[];
}

export interface ScriptOptions {
  readonly decide: (turn: Turn, consulted?: { readonly status: string; readonly payload: unknown }) => Decision | Failure;
  readonly consult?: CoordinatorSpec['consult'];
  readonly workers: readonly Deployment[];
  readonly gates?: Gates;
  readonly limits?: Partial<Pick<CollaborationConfig, 'maxTurns' | 'maxTasks' | 'maxConcurrentTasks' | 'maxControlsPerTurn'>>;
}

/** A collaboration `test.collaboration` over a scripted coordinator `test.coordinator`. */
export function scripted(options: ScriptOptions): Scripted {
  const turns: Turn[] = [];
  const coordinator = deployment(
    'test.coordinator',
    coordinatorDefinition({
      name: 'test.coordinator',
      description: 'A scripted coordinator.',
      consult: options.consult,
      decide(turn, consulted) {
        turns.push(turn);
        return options.decide(turn, consulted);
      },
    }),
    options.gates?.dispatcher,
  );
  const definition = collaborationDefinition({
    name: 'test.collaboration',
    description: 'A collaboration under test.',
    coordinator: { deployment: coordinator, budget: grant(), capabilities: CapabilitySet.empty },
    workers: options.workers.map(worker),
    stateSchema,
    outputSchema,
    maxTurns: options.limits?.maxTurns ?? Quota.of(16),
    maxTasks: options.limits?.maxTasks ?? Quota.of(16),
    maxConcurrentTasks: options.limits?.maxConcurrentTasks ?? 8,
    maxControlsPerTurn: options.limits?.maxControlsPerTurn ?? 8,
  });
  return { deployment: deployment('test.collaboration', definition), turns };
}

/** Resolves per child key once that child's terminal commit is published (an Engine event listener). */
export class Finishes {
  readonly #waiting = new Map<string, () => void>();
  readonly #done = new Set<string>();

  readonly listener = (event: Event): void => {
    if (event.name !== 'agent.process.finished' || event.phase !== 'committed') return;
    const key = event.relation.childKey?.toString();
    if (key === undefined) return;
    this.#done.add(key);
    this.#waiting.get(key)?.();
  };

  of(key: string): Promise<void> {
    if (this.#done.has(key)) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.set(key, resolve));
  }
}

export function newEngine(finishes?: Finishes): Engine {
  return new Engine({ committer: new MemoryTreeCommitter(), eventListeners: finishes === undefined ? [] : [finishes.listener] });
}

/** Task keys with their outcome status (or `-` when none), for compact assertions. */
export function taskSummary(turn: Turn): string[] {
  return turn.tasks.map((task) => {
    const start = task.start === undefined ? 'pending' : 'processId' in task.start ? 'started' : task.start.failure.code;
    return `${task.request.key}:${start}:${task.outcome?.status ?? '-'}`;
  });
}
