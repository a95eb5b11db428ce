/**
 * The seed's two runnable examples, rebuilt with the same observable outcomes: the echo Definition
 * under Host-selected bounds ("completed hello 1 / inspected: completed 1"), and successive
 * bounded episodes whose continuation the Host owns ("revision: 1 -> 2 / same successor: true /
 * new allocations: 1").
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Budget } from '../../../src/kernel/budget.js';
import { CapabilitySet } from '../../../src/kernel/capability.js';
import type { EffectBoundary, TreeActivation, TreeCheckpoint } from '../../../src/kernel/commit.js';
import type { Definition, Execution } from '../../../src/kernel/definition.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Descriptor } from '../../../src/kernel/descriptor.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Engine, type ProcessAdmission } from '../../../src/kernel/engine.js';
import { ErrorCode, KernelError } from '../../../src/kernel/errors.js';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import { ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import type { Process } from '../../../src/kernel/process.js';
import { Quota } from '../../../src/kernel/quota.js';
import type { Result } from '../../../src/kernel/result.js';
import { Schema } from '../../../src/kernel/schema.js';
import { Transition } from '../../../src/kernel/transition.js';
import type { TreeCommitter } from '../../../src/kernel/tree-committer.js';
import { TreeLimits } from '../../../src/kernel/tree-limits.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { echoDefinition, echoDispatcher } from '../../../src/testing/example-definitions.js';

test('the echo example: completed hello, 1 dispatch attempt; inspected: completed, 1 prepared effect', async () => {
  let attempts = 0;
  const deployment = Deployment.create({
    definition: echoDefinition,
    dispatcher: {
      dispatch(request, emit, signal) {
        attempts += 1;
        return echoDispatcher.dispatch(request, emit, signal);
      },
      replayPolicy: (effect) => echoDispatcher.replayPolicy(effect),
    },
    implementationDigest: Digest.of('example-echo-implementation'),
    configurationDigest: Digest.of('example-echo-configuration'),
  });
  // Host-selected bounds for this small episode, as in the seed.
  const engine = new Engine({
    committer: new MemoryTreeCommitter(),
    budget: Budget.of({ steps: Quota.of(100), effects: Quota.of(100), signals: Quota.of(200) }),
    treeLimits: TreeLimits.of({
      maxDepth: 4,
      maxActiveChildren: 4,
      maxChildren: Quota.of(16),
      maxTreeProcesses: Quota.of(32),
      maxSnapshotBytes: Quota.of(32 << 20),
      maxProcessSnapshotBytes: Quota.of(1 << 20),
      maxPendingSignals: 64n,
    }),
  });
  const input = echoDefinition.descriptor().encodeInput({ value: 'hello' });
  const process = await engine.start(deployment, input);
  const result = await process.await();
  await process.join();
  const output = result.output;
  assert.ok(output !== undefined, 'a completed Result has an Output');
  echoDefinition.descriptor().validateOutput(output);
  const value = output.decode<{ value: string }>().value;
  const inspection = engine.inspectTree(result.processId);
  const report = inspection.processes.find((entry) => entry.snapshot.processId.equals(result.processId));
  assert.ok(report !== undefined, 'the completed Process is in its tree');
  await engine.releaseTree(result.processId);
  assert.deepEqual(
    [result.status, value, attempts, report.snapshot.status, report.snapshot.usage().preparedEffects],
    ['completed', 'hello', 1, 'completed', 1n],
  );
  await engine.close();
});

// ---------------------------------------------------------------------------------------------
// Successive episodes

interface EpisodeState {
  readonly revision: number;
  readonly summary: string;
}

const episodeSchema = Schema.of({
  type: 'object',
  properties: { revision: { type: 'integer', minimum: 0 }, summary: { type: 'string' } },
  required: ['revision', 'summary'],
  additionalProperties: false,
});
const episodeKind = 'example.episode';

/** One bounded revision: the single Step advances the revision (at most to 3) and completes with it. */
class EpisodeDefinition implements Definition {
  readonly #descriptor = Descriptor.create({
    name: episodeKind,
    description: 'Advance one bounded revision.',
    inputSchema: episodeSchema,
    outputSchema: episodeSchema,
  });

  descriptor(): Descriptor {
    return this.#descriptor;
  }

  childDeployments(): readonly Deployment[] {
    return [];
  }

  start(input: Payload): Execution {
    this.#descriptor.validateInput(input);
    return this.#execution({ done: false, state: input.decode<EpisodeState>() });
  }

  restore(state: ExecutionState, signal: AbortSignal): Execution {
    signal.throwIfAborted();
    return this.#execution(state.decode<{ done: boolean; state: EpisodeState }>(episodeKind));
  }

  #execution(initial: { done: boolean; state: EpisodeState }): Execution {
    let current = initial;
    return {
      step(): Transition {
        if (current.done) throw new Error('the episode already completed');
        if (current.state.revision >= 3) throw new Error('episode revision bound reached');
        const next = { revision: current.state.revision + 1, summary: current.state.summary };
        current = { done: true, state: next };
        return Transition.complete(0, Payload.encode(next));
      },
      snapshot: () => ExecutionState.encode(episodeKind, current),
    };
  }
}

function episodeDeployment(): Deployment {
  const definition = new EpisodeDefinition();
  return Deployment.create({
    definition,
    implementationDigest: Digest.of('example-episode-implementation'),
    configurationDigest: Digest.of(`${definition.descriptor().name}/revision-bound-3`),
  });
}

/**
 * What the Host asks for when it continues a predecessor: request equality freezes state,
 * behaviour, limits and authority. The Host chooses an explicit new allocation; unused
 * predecessor budget is never refunded.
 */
interface SuccessorRequest {
  readonly predecessor: ProcessId;
  readonly deployment: Deployment;
  readonly input: Payload;
  readonly budget: Budget;
  readonly treeLimits: TreeLimits;
  readonly capabilities: CapabilitySet;
}

function requestIdentity(request: SuccessorRequest): string {
  const canonical = Payload.parse(
    `{"predecessor":${JSON.stringify(request.predecessor.toString())},"deployment_ref":${request.deployment.ref.json()},` +
      `"input":${request.input.json()},"budget":${request.budget.json()},"tree_limits":${request.treeLimits.json()},` +
      `"capabilities":${request.capabilities.json()}}`,
  );
  return Digest.of(canonical.json()).toString();
}

/** The successor record of one request: absent until the admitted tree's first head commits. */
interface SuccessorRecord {
  processId: ProcessId | undefined;
}

/**
 * The teaching store: tree heads plus successor records. Linking a successor to its request and
 * committing that successor's initial head happen in one step (a real database: one transaction).
 */
class EpisodeStore {
  readonly trees = new MemoryTreeCommitter();
  allocations = 0;
  readonly #records = new Map<string, SuccessorRecord>();

  /** Waits for an episode's Result and owned work; the Result is what the Host continues from. */
  async sealEpisode(process: Process): Promise<Result> {
    const result = await process.await();
    await process.join();
    return result;
  }

  /** Claims the request: an attempt that may admit it, and the already admitted successor if any. */
  claim(request: SuccessorRequest): { attempt: EpisodeAttempt; existing: ProcessId | undefined } {
    const identity = requestIdentity(request);
    let record = this.#records.get(identity);
    if (record === undefined) {
      record = { processId: undefined };
      this.#records.set(identity, record);
    }
    return { attempt: new EpisodeAttempt(this, record), existing: record.processId };
  }

  /** The atomic admission: the successor's start head and its link to the request, or neither. */
  async admit(record: SuccessorRecord, processId: ProcessId, checkpoint: TreeCheckpoint): Promise<void> {
    if (record.processId !== undefined && !record.processId.equals(processId)) {
      throw new KernelError(ErrorCode.commitConflict, 'the request already admitted another successor');
    }
    await this.trees.commitCheckpoint(checkpoint);
    if (record.processId === undefined) {
      record.processId = processId;
      this.allocations += 1;
    }
  }
}

/** One admission attempt: the Engine's committer and ProcessAdmitter for a successor start. */
class EpisodeAttempt implements TreeCommitter {
  readonly #store: EpisodeStore;
  readonly #record: SuccessorRecord;
  #admitted: ProcessId | undefined;

  constructor(store: EpisodeStore, record: SuccessorRecord) {
    this.#store = store;
    this.#record = record;
  }

  readonly admitter = (admission: ProcessAdmission): void => {
    if (this.#admitted !== undefined) throw new Error('one attempt admits one successor');
    this.#admitted = admission.processId;
  };

  commitCheckpoint(checkpoint: TreeCheckpoint): Promise<void> {
    if (checkpoint.kind === 'start') {
      if (this.#admitted === undefined || !checkpoint.rootId.equals(this.#admitted)) {
        return Promise.reject(new KernelError(ErrorCode.commitConflict, 'the start was not admitted by this attempt'));
      }
      return this.#store.admit(this.#record, this.#admitted, checkpoint);
    }
    return this.#store.trees.commitCheckpoint(checkpoint);
  }

  commitEffect(boundary: EffectBoundary): Promise<void> {
    return this.#store.trees.commitEffect(boundary);
  }

  activateTree(activation: TreeActivation): Promise<void> {
    return this.#store.trees.activateTree(activation);
  }
}

/** Each Host owns its runtime instances; a replacement Host restores the admitted tree instead. */
class EpisodeHost {
  readonly engines: Engine[] = [];
  readonly #store: EpisodeStore;

  constructor(store: EpisodeStore) {
    this.#store = store;
  }

  async start(deployment: Deployment, request: SuccessorRequest): Promise<Process> {
    if (!deployment.ref.equals(request.deployment.ref)) throw new KernelError(ErrorCode.invalidDeployment, 'another deployment');
    deployment.descriptor.validateInput(request.input);
    const { attempt, existing } = this.#store.claim(request);
    if (existing !== undefined) {
      for (const engine of this.engines) {
        const process = engine.process(existing);
        if (process !== undefined) return process;
      }
    }
    const engine = new Engine({
      committer: attempt,
      processAdmitter: attempt.admitter,
      budget: request.budget,
      treeLimits: request.treeLimits,
      capabilities: request.capabilities,
    });
    this.engines.push(engine);
    if (existing === undefined) return engine.start(deployment, request.input);
    const head = await this.#store.trees.loadTree(existing);
    if (head === undefined) throw new Error('successor record has no committed tree');
    return engine.restoreTree(deployment, head);
  }

  async close(): Promise<void> {
    for (const engine of this.engines) await engine.close();
  }
}

test('successive episodes: revision 1 -> 2, a duplicate start returns the same successor, 1 allocation', async () => {
  const store = new EpisodeStore();
  const deployment = episodeDeployment();
  const engine = new Engine({ committer: store.trees });
  const initial = Payload.encode({ revision: 0, summary: 'reviewed plan' });
  const previous = await engine.start(deployment, initial);
  const result = await store.sealEpisode(previous);
  assert.ok(result.output !== undefined, 'completed episode has an output');
  const state = result.output.decode<EpisodeState>();
  const request: SuccessorRequest = {
    predecessor: previous.id,
    deployment,
    input: Payload.encode(state),
    budget: Budget.of({ steps: Quota.of(8), effects: Quota.of(4), signals: Quota.of(8) }),
    treeLimits: TreeLimits.of({ maxPendingSignals: 8n }),
    capabilities: CapabilitySet.empty,
  };
  const host = new EpisodeHost(store);
  const next = await host.start(deployment, request);
  const duplicate = await host.start(deployment, request);
  const final = await next.await();
  await next.join();
  assert.ok(final.output !== undefined, 'successor has an output');
  const nextState = final.output.decode<EpisodeState>();
  assert.deepEqual([state.revision, nextState.revision], [1, 2]);
  assert.equal(next.id.equals(duplicate.id), true);
  assert.equal(store.allocations, 1);
  assert.equal(next.budget.steps.maximum, 8n, 'the successor runs under its explicit new allocation');

  // A replacement Host has no live handles: it restores the admitted tree, never a new successor.
  const replacement = new EpisodeHost(store);
  const recovered = await replacement.start(deployment, request);
  assert.ok(recovered.id.equals(next.id));
  assert.deepEqual((await recovered.await()).output?.decode(), { revision: 2, summary: 'reviewed plan' });
  assert.equal(store.allocations, 1);

  await replacement.close();
  await host.close();
  await engine.close();
});
