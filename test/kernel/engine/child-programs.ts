/**
 * Programmed Definitions for the process-tree tests: a parent that starts children, waits for them
 * and reports what it saw; leaf children that finish at once or wait for a Host answer.
 */
import { Budget } from '../../../src/kernel/budget.js';
import { CapabilitySet } from '../../../src/kernel/capability.js';
import type { Deployment } from '../../../src/kernel/deployment.js';
import { ChildSpec, ChildWaitSpec, Effect, type ChildWaitBoundary, type ChildWaitCondition } from '../../../src/kernel/effect.js';
import { ChildKey, ProcessId, WaitId, WaitKey } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import type { Signal } from '../../../src/kernel/signal.js';
import { Transition } from '../../../src/kernel/transition.js';
import { ProgramDefinition } from './harness.js';

/** A child request with test defaults (unlimited budget, no capabilities). */
export function childSpec(
  key: string,
  deployment: Deployment,
  options: { input?: unknown; budget?: Budget; capabilities?: CapabilitySet } = {},
): ChildSpec {
  return ChildSpec.create({
    key: ChildKey.parse(key),
    deploymentRef: deployment.ref,
    input: Payload.encode(options.input ?? {}),
    budget: options.budget ?? Budget.unlimited(),
    capabilities: options.capabilities ?? CapabilitySet.empty,
  });
}

/** A leaf that completes on its first Step with `{"done": name}`. */
export function doneProgram(name = 'test.child.done'): ProgramDefinition {
  return new ProgramDefinition({ name, step: () => Transition.complete(0, Payload.encode({ done: name })) });
}

/** What a parent reports when it completes. */
export interface ParentReport {
  readonly started: Array<{ process_id?: string; failure?: { code: string } }>;
  readonly answer?: { operation: string; outcomes: Array<{ result: { termination: { status: string; cause: string } }; subtree_unresolved_effects?: unknown[] }> };
  readonly controls?: Array<{ operation: string; failure?: { code: string } }>;
}

interface ParentNote {
  readonly phase: 'starting' | 'opening' | 'waiting' | 'controlling';
  readonly started?: ParentReport['started'];
  readonly waitId?: string;
  readonly answer?: ParentReport['answer'];
}

export interface ParentOptions {
  readonly name?: string;
  /** The children to start in one batch. */
  readonly children: readonly ChildSpec[];
  /** How to wait for the started children; without it the parent completes after the starts. */
  readonly wait?: { readonly boundary: ChildWaitBoundary; readonly condition: ChildWaitCondition };
  /** Control Effects declared after the wait is answered (given the started ids); their receipts are reported. */
  readonly control?: (started: readonly ProcessId[]) => readonly Effect[];
  readonly childDeployments?: () => readonly Deployment[];
}

function parse<T>(signal: Signal | undefined): T {
  return signal?.payload.decode() as T;
}

/**
 * Step 1 starts every child in one batch; Step 2 reads the start results and (if every start
 * succeeded and a wait is asked for) declares `wait_children` over them; Step 3 consumes the
 * opening and waits on it (an early answer keeps it running); Step 4 completes with the start
 * results and the answer — or first runs the `control` Effects and completes with their receipts.
 */
export function parentProgram(options: ParentOptions): ProgramDefinition {
  return new ProgramDefinition({
    name: options.name ?? 'test.parent',
    childDeployments: options.childDeployments,
    step({ state, signals }) {
      const note: ParentNote | undefined = state.note === undefined ? undefined : (JSON.parse(state.note) as ParentNote);
      if (note === undefined) {
        return { transition: Transition.continue(0, options.children.map((spec) => Effect.startChild(spec))), note: JSON.stringify({ phase: 'starting' }) };
      }
      if (note.phase === 'starting') {
        const started = signals.slice(0, options.children.length).map((signal) => parse<ParentReport['started'][number]>(signal));
        const ids = started.flatMap((entry) => (entry.process_id === undefined ? [] : [ProcessId.parse(entry.process_id)]));
        if (options.wait === undefined || ids.length < started.length) {
          return Transition.complete(started.length, Payload.encode({ started }));
        }
        const spec = ChildWaitSpec.create({ key: WaitKey.parse('children'), children: ids, ...options.wait });
        return { transition: Transition.continue(started.length, [Effect.waitChildren(spec)]), note: JSON.stringify({ phase: 'opening', started }) };
      }
      if (note.phase === 'opening') {
        const waitId = signals[0]?.waitId as WaitId;
        return { transition: Transition.wait(1, waitId), note: JSON.stringify({ ...note, phase: 'waiting', waitId: waitId.toString() }) };
      }
      if (note.phase === 'waiting') {
        const waitId = WaitId.parse(note.waitId);
        const position = signals.findIndex((signal) => waitId.equals(signal.waitId));
        if (position < 0) return { transition: Transition.wait(0, waitId), note: state.note };
        const answer = parse<ParentReport['answer']>(signals[position]);
        if (options.control === undefined) return Transition.complete(position + 1, Payload.encode({ started: note.started, answer }));
        const ids = (note.started ?? []).map((entry) => ProcessId.parse(entry.process_id));
        return { transition: Transition.continue(position + 1, options.control(ids)), note: JSON.stringify({ ...note, phase: 'controlling', answer }) };
      }
      const controls = signals.map((signal) => parse<{ operation: string; failure?: { code: string } }>(signal));
      return Transition.complete(signals.length, Payload.encode({ started: note.started, answer: note.answer, controls }));
    },
  });
}

/** A leaf that opens one external wait `go` and completes with its answer (see `waitsProgram`). */
export { waitsProgram as gateChildProgram } from './programs.js';
