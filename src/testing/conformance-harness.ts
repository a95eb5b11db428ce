import type { Definition, Dispatcher } from '../kernel/definition.js';
import { Deployment } from '../kernel/deployment.js';
import { Digest } from '../kernel/digest.js';
import { Engine, type EngineConfig } from '../kernel/engine.js';
import type { Event } from '../kernel/event.js';
import type { ProcessId } from '../kernel/identity.js';
import { Payload } from '../kernel/payload.js';
import type { Process } from '../kernel/process.js';
import type { ProcessSnapshot } from '../kernel/process-snapshot.js';
import { RuntimeError } from '../kernel/runtime-error.js';
import type { Status } from '../kernel/status.js';
import type { TreeStore } from '../kernel/tree-committer.js';
import { CommitGate, CommitWatcher, SimulatedHostCrash, type CommitKind, type CutPosition, type GatedCommit } from './commit-gate.js';
import { ConformanceFailure } from './conformance-failure.js';
import { ObservationRecorder } from './scripted-dispatcher.js';

/**
 * What the Engine-driven committer conformance cases share: Engines over the store under test
 * (with an observation recorder and a commit watcher), gated starts, restores from whatever the
 * store holds, and expectations that fail with a ConformanceFailure.
 */

/** A conformance Deployment with digests derived from `name` (the same name binds the same ref). */
export function deploymentOf(name: string, definition: Definition, dispatcher?: Dispatcher): Deployment {
  return Deployment.create({
    definition,
    dispatcher,
    implementationDigest: Digest.of(`scope-conformance-${name}-implementation`),
    configurationDigest: Digest.of(`scope-conformance-${name}-configuration`),
  });
}

/** The input every single-process case starts with. */
export const input = Payload.encode({ value: 'conformance' });

export interface Harness {
  readonly engine: Engine;
  readonly recorder: ObservationRecorder;
  readonly watcher: CommitWatcher;
}

/** Engine settings a case adds to the store (budgets, limits). */
export type HarnessConfig = Partial<Omit<EngineConfig, 'committer' | 'eventListeners'>>;

export function engineOver(store: TreeStore, config: HarnessConfig = {}): Harness {
  const recorder = new ObservationRecorder();
  const watcher = new CommitWatcher(store);
  const engine = new Engine({ ...config, committer: watcher, eventListeners: [recorder] });
  return { engine, recorder, watcher };
}

/** Resolves once an event shows `processId` committed `status` (a Step commit, a pause or its finish). */
export function committedStatus(recorder: ObservationRecorder, processId: ProcessId, status: Status): Promise<Event> {
  return recorder.awaitEvent(
    (event) =>
      event.processId.equals(processId) &&
      ((event.stepCommitted()?.status === status) || (event.name === 'agent.process.finished' && event.processFinished()?.status === status) || (status === 'paused' && event.name === 'agent.process.paused')),
  );
}

export async function head(store: TreeStore, rootId: ProcessId): Promise<ProcessSnapshot> {
  const tree = await store.loadTree(rootId);
  if (tree === undefined) throw new ConformanceFailure('the store has no head for the tree');
  return tree.root;
}

export async function expectHeadDigest(store: TreeStore, rootId: ProcessId, want: Digest | undefined, what: string): Promise<void> {
  const tree = await store.loadTree(rootId);
  if (want === undefined) {
    if (tree !== undefined) throw new ConformanceFailure(`${what}: head exists, want absent`);
    return;
  }
  if (tree === undefined || !tree.digest.equals(want)) {
    throw new ConformanceFailure(`${what}: head digest ${tree?.digest.toString() ?? 'absent'}, want ${want}`);
  }
}

export async function expectRuntimeError(promise: Promise<unknown>, what: string, code?: string): Promise<RuntimeError> {
  try {
    await promise;
  } catch (error) {
    if (!(error instanceof RuntimeError)) throw new ConformanceFailure(`${what}: want a RuntimeError, got ${String(error)}`);
    if (code !== undefined && error.causeCode !== code) throw new ConformanceFailure(`${what}: RuntimeError cause ${error.causeCode}, want ${code}`);
    return error;
  }
  throw new ConformanceFailure(`${what}: succeeded, want a RuntimeError`);
}

export async function expectCrash(promise: Promise<unknown>, what: string): Promise<void> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SimulatedHostCrash || (error instanceof RuntimeError && error.cause instanceof SimulatedHostCrash)) return;
    throw new ConformanceFailure(`${what}: want the simulated crash, got ${String(error)}`);
  }
  throw new ConformanceFailure(`${what}: succeeded, want the simulated crash`);
}

export function expect(condition: boolean, message: string): void {
  if (!condition) throw new ConformanceFailure(message);
}

/** Restores the tree the store holds into a fresh Engine. */
export async function restoreFromStore(
  store: TreeStore,
  rootId: ProcessId,
  deployment: Deployment,
  config: HarnessConfig = {},
): Promise<Harness & { process: Process }> {
  const harness = engineOver(store, config);
  const tree = await store.loadTree(rootId);
  if (tree === undefined) throw new ConformanceFailure('nothing to restore: the store has no head');
  const process = await harness.engine.restoreTree(deployment, tree);
  return { ...harness, process };
}

/** Starts `deployment` over a gate and waits until the gate holds its commit. */
export async function startGated(
  store: TreeStore,
  deployment: Deployment,
  kind: CommitKind,
  position: CutPosition,
  options: { config?: HarnessConfig; input?: Payload; matches?: (commit: GatedCommit) => boolean } = {},
) {
  const gate = new CommitGate(store, kind, position, options.matches);
  const harness = engineOver(gate, options.config);
  const started = harness.engine.start(deployment, options.input ?? input);
  started.catch(() => undefined);
  const held = await gate.reached;
  return { gate, ...harness, started, held };
}
