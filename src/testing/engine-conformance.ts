// Over 500 lines: one exported conformance suite (the Engine-driven committer cases and the crash matrix).
import { TreeCheckpoint, type EffectBoundary } from '../kernel/commit.js';
import type { Definition, Dispatcher, ReplayPolicy } from '../kernel/definition.js';
import { Descriptor } from '../kernel/descriptor.js';
import { Schema } from '../kernel/schema.js';
import type { EffectRequest } from '../kernel/effect.js';
import { KernelError } from '../kernel/errors.js';
import type { EffectId, ProcessId } from '../kernel/identity.js';
import { Payload } from '../kernel/payload.js';
import type { Process } from '../kernel/process.js';
import { Settlement } from '../kernel/settlement.js';
import { SignalRequest } from '../kernel/signal.js';
import { CommitGate, DurabilityProbe } from './commit-gate.js';
import {
  committedStatus,
  deploymentOf,
  engineOver,
  expect,
  expectCrash,
  expectHeadDigest,
  expectRuntimeError,
  head,
  input,
  restoreFromStore,
  startGated,
  type Harness,
} from './conformance-harness.js';
import { echoDefinition, pauseDefinition, progressDefinition, waitDefinition } from './example-definitions.js';
import { ConformanceFailure, type CommitterConformanceCase } from './conformance-failure.js';

/**
 * The Engine-driven cases of the committer conformance suite (kernel-contract §5.3): a real Engine
 * runs real Definitions over the store under test, with commit gates that cut execution before or
 * after every commit kind, and fresh Engines that restore from whatever the store holds.
 */

// ---------------------------------------------------------------------------------------------
// Fixtures

/** Counts dispatches; echoes the Effect payload, or settles Unknown in `unknown` mode. Replay: never. */
class ConformanceDispatcher implements Dispatcher {
  readonly requests: EffectRequest[] = [];

  constructor(readonly mode: 'echo' | 'unknown') {}

  async dispatch(request: EffectRequest): Promise<Settlement> {
    this.requests.push(request);
    return this.mode === 'echo' ? Settlement.of('succeeded', request.effect.payload) : Settlement.of('unknown', Payload.emptyObject);
  }

  replayPolicy(): ReplayPolicy {
    return 'never';
  }

  dispatchesOf(effectId: EffectId): number {
    return this.requests.filter((request) => request.id.equals(effectId)).length;
  }
}


/** The pause example, accepting any unaddressed input (the signal-admission cases deliver some). */
const pauseAcceptingInput: Definition = {
  descriptor: () =>
    Descriptor.create({
      name: pauseDefinition.descriptor().name,
      description: 'The pause example, accepting any unaddressed input.',
      inputSchema: pauseDefinition.descriptor().inputSchema,
      outputSchema: pauseDefinition.descriptor().outputSchema,
      signalSchema: Schema.of(true),
    }),
  childDeployments: () => [],
  start: (value) => pauseDefinition.start(value),
  restore: (state, signal) => pauseDefinition.restore(state, signal),
};

// ---------------------------------------------------------------------------------------------
// Cases

const crashCases: CommitterConformanceCase[] = [
  {
    name: 'crash boundaries/root start before commit',
    async run(store) {
      const { gate, engine, started, held } = await startGated(store, deploymentOf('pause', pauseDefinition), 'start', 'before');
      await expectHeadDigest(store, held.snapshot.rootId, undefined, 'at the cut');
      expect(engine.process(held.snapshot.rootId) === undefined, 'the root is findable before its start commit');
      gate.abort();
      await expectCrash(started, 'Start');
      await expectHeadDigest(store, held.snapshot.rootId, undefined, 'after the crash');
    },
  },
  {
    name: 'crash boundaries/root start after commit before Process publication',
    async run(store) {
      const deployment = deploymentOf('pause', pauseDefinition);
      const { gate, engine, started, held } = await startGated(store, deployment, 'start', 'after');
      const rootId = held.snapshot.rootId;
      await expectHeadDigest(store, rootId, held.snapshot.digest, 'at the cut');
      expect(engine.process(rootId) === undefined, 'the root was published before its start was acknowledged');
      const restored = await restoreFromStore(store, rootId, deployment);
      await committedStatus(restored.recorder, rootId, 'paused');
      gate.abort();
      await expectCrash(started, 'the original Start');
      expect(engine.process(rootId) === undefined, 'the original engine published the root after a crash');
      await restored.process.kill('conformance cleanup');
      await restored.process.await();
    },
  },
  {
    name: 'crash boundaries/pending before commit',
    async run(store) {
      const dispatcher = new ConformanceDispatcher('echo');
      const deployment = deploymentOf('echo', echoDefinition, dispatcher);
      const { gate, started, held } = await startGated(store, deployment, 'pending', 'before');
      const process = await started;
      await expectHeadDigest(store, process.id, gate.durableDigest(), 'at the cut');
      expect(dispatcher.requests.length === 0, 'dispatch started before its pending boundary committed');
      gate.abort();
      await expectRuntimeError(process.await(), 'the original writer');
      const restored = await restoreFromStore(store, process.id, deployment);
      const result = await restored.process.await();
      expect(result.status === 'completed', `restored status ${result.status}`);
      expect(dispatcher.requests.length === 1, `${dispatcher.requests.length} dispatches, want exactly 1`);
      void held;
    },
  },
  {
    name: 'crash boundaries/pending after commit before dispatch',
    async run(store) {
      const dispatcher = new ConformanceDispatcher('echo');
      const deployment = deploymentOf('echo', echoDefinition, dispatcher);
      const { gate, started, held } = await startGated(store, deployment, 'pending', 'after');
      const process = await started;
      const effectId = (held as EffectBoundary).effectId;
      await expectHeadDigest(store, process.id, gate.durableDigest(), 'at the cut');
      expect(dispatcher.requests.length === 0, 'dispatch started before the pending boundary was acknowledged');
      gate.abort();
      await expectRuntimeError(process.await(), 'the original writer');
      const restored = await restoreFromStore(store, process.id, deployment);
      await waitForUnknown(restored, process.id, effectId);
      expect(dispatcher.requests.length === 0, 'a replay-forbidden pending effect was dispatched after restore');
      await restored.process.resolveUnknownEffect(effectId, Settlement.of('succeeded', input));
      const result = await restored.process.await();
      expect(result.status === 'completed', `status ${result.status}`);
      expect(dispatcher.requests.length === 0, 'the effect ran after resolution');
    },
  },
  {
    name: 'crash boundaries/after dispatch before settled commit',
    async run(store) {
      const dispatcher = new ConformanceDispatcher('echo');
      const deployment = deploymentOf('echo', echoDefinition, dispatcher);
      const { gate, started, held } = await startGated(store, deployment, 'settled', 'before');
      const process = await started;
      const effectId = (held as EffectBoundary).effectId;
      expect(dispatcher.requests.length === 1, 'the held settlement had no dispatch');
      await expectHeadDigest(store, process.id, gate.durableDigest(), 'at the cut');
      gate.abort();
      const stopped = await expectRuntimeError(process.await(), 'the original writer');
      expect(stopped.unresolvedEffectIds.some((id) => id.equals(effectId)), 'the unadopted settlement is not listed as unresolved');
      const restored = await restoreFromStore(store, process.id, deployment);
      await waitForUnknown(restored, process.id, effectId);
      await restored.process.resolveUnknownEffect(effectId, Settlement.of('succeeded', input));
      const result = await restored.process.await();
      expect(result.status === 'completed', `status ${result.status}`);
      expect(dispatcher.requests.length === 1, `${dispatcher.requests.length} dispatches, want exactly 1`);
    },
  },
  {
    name: 'crash boundaries/settled after commit before memory apply',
    async run(store) {
      const dispatcher = new ConformanceDispatcher('echo');
      const deployment = deploymentOf('echo', echoDefinition, dispatcher);
      const { gate, started } = await startGated(store, deployment, 'settled', 'after');
      const process = await started;
      await expectHeadDigest(store, process.id, gate.durableDigest(), 'at the cut');
      gate.abort();
      await expectRuntimeError(process.await(), 'the original writer');
      const restored = await restoreFromStore(store, process.id, deployment);
      const result = await restored.process.await();
      expect(result.status === 'completed', `status ${result.status}`);
      expect(dispatcher.requests.length === 1, `${dispatcher.requests.length} dispatches, want exactly 1 (no redispatch)`);
    },
  },
  ...(['before', 'after'] as const).map<CommitterConformanceCase>((position) => ({
    name: `crash boundaries/resolved ${position === 'before' ? 'before commit' : 'after commit before acknowledgment'}`,
    async run(store) {
      const dispatcher = new ConformanceDispatcher('unknown');
      const deployment = deploymentOf('unknown', echoDefinition, dispatcher);
      const gate = new CommitGate(store, 'resolved', position);
      const harness = engineOver(gate);
      const process = await harness.engine.start(deployment, input);
      const effectId = await waitForUnknown(harness, process.id);
      const resolving = process.resolveUnknownEffect(effectId, Settlement.of('succeeded', input));
      resolving.catch(() => undefined);
      await gate.reached;
      await expectHeadDigest(store, process.id, gate.durableDigest(), 'at the cut');
      gate.abort();
      await expectCrash(resolving, 'the blocked resolution');
      await expectRuntimeError(process.await(), 'the original writer');
      const restored = await restoreFromStore(store, process.id, deployment);
      if (position === 'before') {
        const unknown = await waitForUnknown(restored, process.id);
        expect(unknown.equals(effectId), 'the restored process shows another Unknown');
        await restored.process.resolveUnknownEffect(effectId, Settlement.of('succeeded', input));
      }
      const result = await restored.process.await();
      expect(result.status === 'completed', `status ${result.status}`);
      expect(result.output?.equals(input) === true, 'the output is not the resolved value');
      const usage = result.usage;
      expect(
        usage.committedSteps === 2n && usage.preparedEffects === 1n && usage.acceptedSignals === 1n,
        `usage ${usage.json()}, want 2 steps, 1 effect, 1 signal`,
      );
      expect(dispatcher.requests.length === 1 && dispatcher.requests[0]?.id.equals(effectId) === true, 'the dispatcher did not see exactly one request for the effect');
    },
  })),
  ...(['before', 'after'] as const).map<CommitterConformanceCase>((position) => ({
    name: `crash boundaries/progress ${position} commit`,
    async run(store) {
      const deployment = deploymentOf('progress', progressDefinition);
      const { gate, started } = await startGated(store, deployment, 'progress', position);
      const process = await started;
      await expectHeadDigest(store, process.id, gate.durableDigest(), 'at the cut');
      const cut = await head(store, process.id);
      expect(cut.committedSteps === (position === 'before' ? 0n : 1n), `head has ${cut.committedSteps} committed steps`);
      gate.abort();
      await expectRuntimeError(process.await(), 'the original writer');
      const restored = await restoreFromStore(store, process.id, deployment);
      const result = await restored.process.await();
      expect(result.status === 'completed' && result.usage.committedSteps === 2n, `restored ${result.status} after ${result.usage.committedSteps} steps`);
    },
  })),
  {
    name: 'crash boundaries/parked after commit before Event publication',
    async run(store) {
      const deployment = deploymentOf('pause', pauseDefinition);
      const { gate, started, recorder } = await startGated(store, deployment, 'parked', 'after');
      const process = await started;
      expect(!recorder.events().some((event) => event.name === 'agent.process.paused'), 'paused was published before its commit returned');
      gate.abort();
      await expectRuntimeError(process.await(), 'the original writer');
      expect(!recorder.events().some((event) => event.name === 'agent.process.paused'), 'paused was published after a failed acknowledgment');
      const restored = await restoreFromStore(store, process.id, deployment);
      expect((await head(store, process.id)).status === 'paused', 'the restored head is not paused');
      await restored.process.kill('conformance cleanup');
      await restored.process.await();
    },
  },
  {
    name: 'crash boundaries/terminal after commit before Result publication',
    async run(store) {
      const deployment = deploymentOf('progress', progressDefinition);
      const { gate, started, recorder } = await startGated(store, deployment, 'terminal', 'after');
      const process = await started;
      let returned = false;
      const awaited = process.await().finally(() => {
        returned = true;
      });
      awaited.catch(() => undefined);
      await Promise.resolve();
      expect(!returned, 'Await returned before the terminal commit was acknowledged');
      expect(!recorder.events().some((event) => event.name === 'agent.process.finished'), 'finished was published before acknowledgment');
      const restored = await restoreFromStore(store, process.id, deployment);
      const result = await restored.process.await();
      expect(result.status === 'completed', `restored status ${result.status}`);
      gate.abort();
      await expectRuntimeError(awaited, 'the original writer');
      expect(!recorder.events().some((event) => event.name === 'agent.process.finished'), 'finished was published after a failed acknowledgment');
    },
  },
  {
    name: 'crash boundaries/activation after CAS before Process publication',
    async run(store) {
      const deployment = deploymentOf('pause', pauseDefinition);
      const source = engineOver(store);
      const original = await source.engine.start(deployment, input);
      await committedStatus(source.recorder, original.id, 'paused');
      const base = await store.loadTree(original.id);
      if (base === undefined) throw new ConformanceFailure('no head after the parked checkpoint');
      const gate = new CommitGate(store, 'activation', 'after');
      const first = engineOver(gate);
      const restoring = first.engine.restoreTree(deployment, base);
      restoring.catch(() => undefined);
      await gate.reached;
      expect(first.engine.process(original.id) === undefined, 'the first restore published before its activation returned');
      const second = await restoreFromStore(store, original.id, deployment);
      expect((await head(store, original.id)).status === 'paused', 'the second restore is not paused');
      gate.abort();
      await expectCrash(restoring, 'the first restore');
      expect(first.engine.process(original.id) === undefined, 'the first restore published a process after its crash');
      // A kill is acknowledged only with its commit, which the new incarnation fences.
      await expectRuntimeError(original.kill('the superseded writer'), 'the source writer kill', 'tree_incarnation_conflict');
      await expectRuntimeError(original.await(), 'the source writer', 'tree_incarnation_conflict');
      await second.process.kill('conformance cleanup');
      await second.process.await();
    },
  },
];

/** Resolves with the first Unknown effect id of `processId` (or `effectId`) once an acknowledged head shows it. */
async function waitForUnknown(harness: Harness, processId: ProcessId, effectId?: EffectId): Promise<EffectId> {
  const find = (tree: import('../kernel/tree-snapshot.js').TreeSnapshot): EffectId | undefined => {
    const unknown = tree.process(processId)?.unknownEffectIds() ?? [];
    return effectId === undefined ? unknown[0] : unknown.find((id) => id.equals(effectId));
  };
  const tree = await harness.watcher.awaitTree(processId, (candidate) => find(candidate) !== undefined);
  return find(tree) as EffectId;
}

const scenarioCases: CommitterConformanceCase[] = [
  {
    name: 'effect boundaries and terminal head',
    async run(store) {
      const probe = new DurabilityProbe(store);
      const dispatcher = new ConformanceDispatcher('unknown');
      const deployment = deploymentOf('unknown', echoDefinition, dispatcher);
      const harness = engineOver(probe);
      const process = await harness.engine.start(deployment, input);
      const effectId = await waitForUnknown(harness, process.id);
      await process.resolveUnknownEffect(effectId, Settlement.of('succeeded', input));
      const result = await process.await();
      expect(result.status === 'completed', `status ${result.status}`);
      const tree = await store.loadTree(process.id);
      expect(tree?.root.status === 'completed', 'terminal head exists=false or not completed');
      const boundaries = probe.boundaries();
      expect(boundaries.map((boundary) => boundary.kind).join(',') === 'pending,settled,resolved', `boundaries ${boundaries.map((b) => b.kind).join(',')}`);
      const checkpoints = probe.checkpoints();
      expect(checkpoints[checkpoints.length - 1]?.kind === 'terminal', 'the last checkpoint is not terminal');
      for (const boundary of boundaries) {
        try {
          await store.commitEffect(boundary);
        } catch (error) {
          if (error instanceof KernelError && error.code === 'commit_conflict') continue;
          throw new ConformanceFailure(`stale duplicate ${boundary.kind} failed with ${String(error)}`);
        }
        throw new ConformanceFailure(`stale duplicate ${boundary.kind} boundary returned nil`);
      }
      await expectHeadDigest(store, process.id, tree?.digest, 'after stale duplicates');
      await harness.engine.close();
    },
  },
  {
    name: 'repeated waiting pause resume',
    async run(store) {
      const probe = new DurabilityProbe(store);
      const harness = engineOver(probe);
      const process = await harness.engine.start(deploymentOf('wait', waitDefinition), Payload.encode({}));
      await committedStatus(harness.recorder, process.id, 'waiting');
      const waiting = probe.checkpoints().at(-1) as TreeCheckpoint;
      const waitingSnapshot = waiting.snapshot;
      const waitId = waitingSnapshot.root.waitId;
      const usage = waitingSnapshot.root.usage().json();
      const history: TreeCheckpoint[] = [waiting];
      for (let cycle = 0; cycle < 3; cycle += 1) {
        await process.pause(`conformance pause ${cycle}`);
        await harness.watcher.awaitTree(process.id, (tree) => tree.root.status === 'paused');
        const paused = probe.checkpoints().at(-1) as TreeCheckpoint;
        expect(paused.kind === 'parked' && paused.sequence === waiting.sequence + 2n * BigInt(cycle) + 1n, `pause checkpoint ${paused.kind}@${paused.sequence}`);
        await process.resume();
        const resumed = probe.checkpoints().at(-1) as TreeCheckpoint;
        expect(resumed.sequence === waiting.sequence + 2n * BigInt(cycle) + 2n, `resume checkpoint sequence ${resumed.sequence}`);
        expect(resumed.snapshot.digest.equals(waitingSnapshot.digest), 'the resumed snapshot differs from the waiting one');
        expect(resumed.snapshot.root.waitId?.equals(waitId) === true && resumed.snapshot.root.usage().json() === usage, 'wait or usage changed');
        history.push(paused, resumed);
      }
      for (const old of history.slice(0, -1)) {
        try {
          await store.commitCheckpoint(old);
        } catch (error) {
          if (error instanceof KernelError && error.code === 'commit_conflict') continue;
          throw new ConformanceFailure(`historical replay failed with ${String(error)}`);
        }
        throw new ConformanceFailure(`historical waiting replay returned nil (sequence ${old.sequence})`);
      }
      await expectHeadDigest(store, process.id, waitingSnapshot.digest, 'after historical replays');
      await process.kill('conformance cleanup');
      await process.await();
    },
  },
  {
    name: 'concurrent restore fencing',
    async run(store) {
      const deployment = deploymentOf('pause', pauseDefinition);
      const probe = new DurabilityProbe(store);
      const source = engineOver(probe);
      const process = await source.engine.start(deployment, input);
      await committedStatus(source.recorder, process.id, 'paused');
      expect(probe.checkpoints().map((checkpoint) => checkpoint.kind).join(',') === 'start,parked', `checkpoints ${probe.checkpoints().map((c) => c.kind).join(',')}`);
      const tree = await store.loadTree(process.id);
      if (tree === undefined) throw new ConformanceFailure('no head');
      const contenders = [engineOver(store), engineOver(store)];
      const outcomes = await Promise.allSettled(contenders.map(({ engine }) => engine.restoreTree(deployment, tree)));
      const winners = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      const conflicts = outcomes.filter((outcome) => outcome.status === 'rejected' && outcome.reason instanceof KernelError && outcome.reason.code === 'tree_incarnation_conflict');
      expect(winners.length === 1 && conflicts.length === 1, `winner with ${conflicts.length} conflicts`);
      const winner = (winners[0] as PromiseFulfilledResult<Process>).value;
      await winner.kill('conformance cleanup');
      const result = await winner.await();
      expect(result.status === 'killed', `winner status ${result.status}`);
    },
  },
  {
    name: 'delayed commit loses to activation',
    async run(store) {
      const dispatcher = new ConformanceDispatcher('echo');
      const deployment = deploymentOf('echo', echoDefinition, dispatcher);
      const { gate, started } = await startGated(store, deployment, 'pending', 'before');
      const original = await started;
      const restored = await restoreFromStore(store, original.id, deployment);
      const result = await restored.process.await();
      expect(result.status === 'completed', `winner status ${result.status}`);
      const winnerHead = (await store.loadTree(original.id))?.digest;
      gate.continueCommit();
      await expectRuntimeError(original.await(), 'the delayed writer', 'tree_incarnation_conflict');
      await expectHeadDigest(store, original.id, winnerHead, 'after the delayed commit');
    },
  },
  ...(['before', 'after'] as const).map<CommitterConformanceCase>((position) => ({
    name: `detached storage shutdown/${position} commit`,
    async run(store) {
      const deployment = deploymentOf('progress', progressDefinition);
      const { gate, engine, started } = await startGated(store, deployment, 'progress', position);
      const process = await started;
      const caller = new AbortController();
      const joining = process.join({ signal: caller.signal });
      caller.abort(new Error('the caller gave up'));
      try {
        await joining;
        throw new ConformanceFailure('join returned although the caller canceled');
      } catch (error) {
        if (error instanceof ConformanceFailure) throw error;
      }
      try {
        await engine.close();
        throw new ConformanceFailure('close succeeded while storage was blocked');
      } catch (error) {
        if (!(error instanceof KernelError && error.code === 'engine_has_active_processes')) {
          throw new ConformanceFailure(`close failed with ${String(error)}, want engine_has_active_processes`);
        }
      }
      await expectHeadDigest(store, process.id, gate.durableDigest(), 'at the cut');
      gate.abort();
      await expectRuntimeError(process.join(), 'join after the crash');
      await expectHeadDigest(store, process.id, gate.durableDigest(), 'after the crash');
    },
  })),
  ...(
    [
      ['acknowledgment follows publication', 'before', false],
      ['failure before commit', 'before', true],
      ['response lost after commit', 'after', true],
    ] as const
  ).map<CommitterConformanceCase>(([name, position, crash]) => ({
    name: `durable signal admission/${name}`,
    async run(store) {
      const deployment = deploymentOf('pause-input', pauseAcceptingInput);
      const source = engineOver(store);
      const process = await source.engine.start(deployment, input);
      await committedStatus(source.recorder, process.id, 'paused');
      const gate = new CommitGate(store, 'signals', position);
      const writer = await (async () => {
        const harness = engineOver(gate);
        const tree = await store.loadTree(process.id);
        if (tree === undefined) throw new ConformanceFailure('no head');
        const restored = await harness.engine.restoreTree(deployment, tree);
        return { ...harness, process: restored };
      })();
      const before = (await head(store, process.id)).usage().acceptedSignals;
      const request = SignalRequest.create({ id: 'signal:durable-input', payload: Payload.encode({ value: 'accepted' }) });
      let returned = false;
      const delivering = writer.process.deliverSignals(request).finally(() => {
        returned = true;
      });
      delivering.catch(() => undefined);
      await gate.reached;
      expect(!returned, 'delivery returned before its signals checkpoint');
      expect(!writer.recorder.events().some((event) => event.name === 'agent.signal.accepted'), 'accepted was published before the commit');
      expect(writer.engine.inspectTree(process.id).processes[0]?.snapshot.usage().acceptedSignals === before, 'usage changed before the commit');
      if (!crash) {
        gate.continueCommit();
        expect((await delivering) === true, 'the first delivery was not accepted');
        const receipts = (await head(store, process.id)).signalReceipts().filter((receipt) => receipt.matches(request));
        expect(receipts.length === 1 && !receipts[0]?.consumed, 'the head does not hold one pending receipt for the request');
        await expectConflict(writer.process.deliverSignals(SignalRequest.create({ id: 'signal:durable-input', payload: Payload.encode({ value: 'other' }) })));
        await writer.process.kill('conformance cleanup');
        await writer.process.await();
        return;
      }
      gate.abort();
      await expectCrash(delivering, 'the delivery');
      await expectRuntimeError(writer.process.await(), 'the writer');
      expect(!writer.recorder.events().some((event) => event.name === 'agent.signal.accepted'), 'accepted was published for an unacknowledged admission');
      const landed = position === 'after';
      const stored = await head(store, process.id);
      expect(stored.signalReceipts().some((receipt) => receipt.matches(request)) === landed, `the head ${landed ? 'lacks' : 'holds'} the receipt`);
      const restored = await restoreFromStore(store, process.id, deployment);
      const accepted = await restored.process.deliverSignals(request);
      expect(accepted === !landed, `the retry returned accepted=${accepted}`);
      const after = (await head(store, process.id)).usage().acceptedSignals;
      expect(after === before + 1n, `accepted signals ${after}, want ${before + 1n} (charged once)`);
      await expectConflict(restored.process.deliverSignals(SignalRequest.create({ id: 'signal:durable-input', payload: Payload.encode({ value: 'other' }) })));
      await restored.process.kill('conformance cleanup');
      await restored.process.await();
    },
  })),
];

async function expectConflict(delivery: Promise<boolean>): Promise<void> {
  try {
    await delivery;
  } catch (error) {
    if (error instanceof KernelError && error.code === 'signal_conflict') return;
    throw new ConformanceFailure(`a conflicting retry failed with ${String(error)}, want signal_conflict`);
  }
  throw new ConformanceFailure('a conflicting retry was accepted');
}

/** Every Engine-driven case, in suite order. */
export const engineConformanceCases: readonly CommitterConformanceCase[] = [...scenarioCases, ...crashCases];

