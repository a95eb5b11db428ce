/**
 * Three-level trees for the tree-control tests: a root that starts a middle process, which starts one
 * demo leaf (demo.sleep: a dispatch in flight; demo.approval: an open wait); each parent waits for its
 * child's terminal result. And a gated parent whose one batch is a dispatch the test releases, then a
 * child start — the shape an interrupt barrier exists for.
 */
import { Budget } from '../../src/kernel/budget.js';
import type { Deployment } from '../../src/kernel/deployment.js';
import { ChildWaitCondition, Effect } from '../../src/kernel/effect.js';
import { Payload } from '../../src/kernel/payload.js';
import { Quota } from '../../src/kernel/quota.js';
import { Settlement } from '../../src/kernel/settlement.js';
import { Transition } from '../../src/kernel/transition.js';
import { demoDeployments } from '../../src/server/demos.js';
import { childSpec, parentProgram } from '../kernel/engine/child-programs.js';
import { deferred, deploy, ProgramDefinition, type Deferred } from '../kernel/engine/harness.js';

/** A finite grant a finite parent can give (steps and effects unlimited are covered by an unlimited parent). */
const childBudget = (signals: number) => Budget.of({ steps: Quota.unlimited(), effects: Quota.unlimited(), signals: Quota.of(signals) });

function demo(name: string): Deployment {
  const found = demoDeployments().find((deployment) => deployment.ref.name === name);
  if (found === undefined) throw new Error(`no demo ${name}`);
  return found;
}

export interface ThreeLevels {
  /** Register these with the Host (the demos are registered by the Host itself). */
  readonly deployments: readonly Deployment[];
  readonly root: string;
}

/** `<prefix>.root` → `<prefix>.mid` → the demo leaf (`demo.sleep` 10 min, or `demo.approval`). */
export function threeLevels(prefix: string, leaf: 'sleep' | 'approval'): ThreeLevels {
  const leafDeployment = demo(leaf === 'sleep' ? 'demo.sleep' : 'demo.approval');
  const leafInput = leaf === 'sleep' ? { ms: 600_000 } : { subject: 'three levels' };
  const wait = { boundary: 'terminal_result' as const, condition: ChildWaitCondition.all() };
  const mid = deploy(
    parentProgram({ name: `${prefix}.mid`, children: [childSpec('leaf', leafDeployment, { input: leafInput, budget: childBudget(20) })], wait, childDeployments: () => [leafDeployment] }),
    undefined,
    `${prefix}.mid`,
  );
  const root = deploy(parentProgram({ name: `${prefix}.root`, children: [childSpec('mid', mid, { budget: childBudget(100) })], wait, childDeployments: () => [mid] }), undefined, `${prefix}.root`);
  return { deployments: [mid, root], root: `${prefix}.root` };
}

export interface GatedParent {
  readonly deployment: Deployment;
  readonly name: string;
  /** Resolve to let the parent's dispatch settle (then its child start reaches admission). */
  readonly release: Deferred<void>;
  /** Resolves once the dispatch is in flight. */
  readonly dispatching: Deferred<void>;
}

/** One batch: a dispatch held until `release`, then a `start_child` of demo.echo; completes with what the start returned. */
export function gatedParent(name: string): GatedParent {
  const release = deferred<void>();
  const dispatching = deferred<void>();
  const echo = demo('demo.echo');
  const definition = new ProgramDefinition({
    name,
    childDeployments: () => [echo],
    step({ step, signals }) {
      if (step === 1) {
        return Transition.continue(0, [Effect.dispatcher(Payload.encode({ hold: true })), Effect.startChild(childSpec('echo', echo, { input: { value: 'x' }, budget: childBudget(10) }))]);
      }
      return Transition.complete(signals.length, Payload.encode({ results: signals.map((signal) => signal.payload.decode()) }));
    },
  });
  const dispatcher = {
    async dispatch(): Promise<Settlement> {
      dispatching.resolve();
      await release.promise;
      return Settlement.of('succeeded', Payload.emptyObject);
    },
    replayPolicy: () => 'never' as const,
  };
  return { deployment: deploy(definition, dispatcher, name), name, release, dispatching };
}
