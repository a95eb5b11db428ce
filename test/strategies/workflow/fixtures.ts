/**
 * Child Deployments and helpers the workflow tests share: pure leaves that complete (or fail) in
 * their first Step, the demo echo (a real dispatcher Effect), and a recorder that wraps a
 * Definition to see every Transition its Executions return.
 */
import type { Definition, Execution } from '../../../src/kernel/definition.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Descriptor } from '../../../src/kernel/descriptor.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Engine } from '../../../src/kernel/engine.js';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import { Failure } from '../../../src/kernel/failure.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Schema } from '../../../src/kernel/schema.js';
import type { Transition } from '../../../src/kernel/transition.js';
import { Transition as T } from '../../../src/kernel/transition.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { echoDefinition } from '../../../strategies/demo/echo.js';
import { echoDispatcher } from '../../../src/server/demo-dispatchers.js';

export function deployment(definition: Definition, tag: string, dispatcher?: Deployment['dispatcher']): Deployment {
  return Deployment.create({ definition, dispatcher, implementationDigest: Digest.of(`test:${tag}`), configurationDigest: Digest.of(`test:${tag}`) });
}

/** A leaf that completes in its first Step with `fn(input)` (or fails with `failure(input)`). */
export function leaf(name: string, fn: (input: unknown) => unknown, options: { inputSchema?: unknown; failure?: (input: unknown) => Failure | undefined } = {}): Deployment {
  const descriptor = Descriptor.create({ name, description: `Test leaf ${name}.`, inputSchema: Schema.of(options.inputSchema ?? true), outputSchema: Schema.of(true) });
  const execution = (input: unknown): Execution => ({
    step(): Transition {
      const failure = options.failure?.(input);
      return failure === undefined ? T.complete(0, Payload.encode(fn(input))) : T.fail(0, failure);
    },
    snapshot: () => ExecutionState.encode(`${name}.state`, { input }),
  });
  const definition: Definition = {
    descriptor: () => descriptor,
    childDeployments: () => [],
    start: (input) => execution(input.decode()),
    restore: (state) => execution(state.decode<{ input: unknown }>(`${name}.state`).input),
  };
  return deployment(definition, name);
}

export const echo: Deployment = deployment(echoDefinition, 'demo.echo', echoDispatcher());

/** `value` → `value * 2` (numbers). */
export const double: Deployment = leaf('test.double', (input) => (input as number) * 2, { inputSchema: { type: 'number' } });

/** Fails with `execution/test.leaf.failed` (message `no <input>`) when the input is in `failing`. */
export function failingOn(name: string, failing: readonly unknown[]): Deployment {
  return leaf(name, (input) => input, {
    failure: (input) => (failing.includes(input) ? Failure.create('execution', 'test.leaf.failed', `no ${JSON.stringify(input)}`) : undefined),
  });
}

/** Every Transition the Executions of `definition` return, in order. */
export function recorded(definition: Definition): { definition: Definition; transitions: Transition[] } {
  const transitions: Transition[] = [];
  const wrap = (execution: Execution): Execution => ({
    async step(signal, signals) {
      const transition = await execution.step(signal, signals);
      transitions.push(transition);
      return transition;
    },
    snapshot: () => execution.snapshot(),
  });
  return {
    transitions,
    definition: {
      descriptor: () => definition.descriptor(),
      childDeployments: () => definition.childDeployments(),
      start: async (input) => wrap(await definition.start(input)),
      restore: async (state, signal) => wrap(await definition.restore(state, signal)),
    },
  };
}

/** The framework operations of a Transition's effects (`start_child`, `wait_children`, …). */
export function operations(transition: Transition): string[] {
  return transition.effects.map((effect) => effect.frameworkOperation().operation);
}

export function engine(): Engine {
  return new Engine({ committer: new MemoryTreeCommitter() });
}
