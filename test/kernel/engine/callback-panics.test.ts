/**
 * Issue 10, fix 6: the Engine contains a panic at each Host callback boundary as a
 * CallbackPanicError naming the callback, and the boundary still owns the outcome (the seed's
 * CallbackPanicError): execution outcomes use Failure kind `panic`, an uncertain dispatch stays
 * Unknown, storage stops the writer through a RuntimeError, an API call rejects with the
 * CallbackPanicError in its cause chain. In TypeScript a panic is a thrown non-Error value for a
 * callback that has an error result, and any throw for one that has none (`replayPolicy`, the
 * resolver beyond `deployment_unavailable`). A failed initialisation outcome carries its Failure.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CallbackPanicError } from '../../../src/kernel/callback-panic-error.js';
import { counterExhausted } from '../../../src/kernel/classified-error.js';
import type { Dispatcher } from '../../../src/kernel/definition.js';
import { MapDeploymentResolver } from '../../../src/kernel/deployment.js';
import type { ProcessInitializationOutcome } from '../../../src/kernel/engine.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { Payload } from '../../../src/kernel/payload.js';
import { RuntimeError } from '../../../src/kernel/runtime-error.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { Transition } from '../../../src/kernel/transition.js';
import { childSpec, doneProgram, parentProgram } from './child-programs.js';
import { deferred, deploy, ProgramDefinition, published, RecordingCommitter, rejectsWith, setup } from './harness.js';
import { dispatchProgram } from './programs.js';

const done = deploy(doneProgram(), undefined, 'panics-done');
const pausing = () => new ProgramDefinition({ name: 'test.panics', step: ({ step }) => (step === 1 ? Transition.pause(0, 'held') : Transition.complete(0, Payload.encode({}))) });

function assertPanic(error: unknown, operation: string, value: unknown): void {
  assert.ok(CallbackPanicError.is(error, operation), `expected a CallbackPanicError of ${operation}, got ${String(error)}`);
  assert.equal(error.value, value);
}

/** A Definition whose `stage` throws `thrown` (start, the initial snapshot, or restore). */
function throwingAt(stage: 'start' | 'snapshot' | 'restore', thrown: unknown): ProgramDefinition {
  const definition = new ProgramDefinition({
    name: `test.panics.${stage}`,
    step: () => Transition.complete(0, Payload.encode({})),
    onSnapshot: () => {
      if (stage === 'snapshot') throw thrown;
    },
    onRestore: () => {
      if (stage === 'restore') throw thrown;
    },
  });
  if (stage === 'start') {
    definition.start = () => {
      throw thrown;
    };
  }
  return definition;
}

// ---------------------------------------------------------------------------------------------
// Root start: ProcessAdmitter, Definition, ProcessInitializationAcknowledger, TreeCommitter

test('a panicking ProcessAdmitter rejects the start with the CallbackPanicError as cause; an Error stays the rejection', async () => {
  let thrown: unknown = 'no admission';
  const { engine, committer } = setup({
    processAdmitter: () => {
      throw thrown;
    },
  });
  const panic = await rejectsWith(engine.start(done, Payload.encode({})), ErrorCode.processAdmissionRejected);
  assertPanic(panic.cause, 'ProcessAdmitter.admit', 'no admission');
  thrown = new Error('policy says no');
  const rejection = await rejectsWith(engine.start(done, Payload.encode({})), ErrorCode.processAdmissionRejected);
  assert.equal(rejection.cause, thrown);
  assert.equal(committer.attempts.length, 0);
});

test('a failed initialisation outcome carries its Failure: per stage, panic kind for a panic, the classification preserved', async () => {
  const cases: Array<[string, 'start' | 'snapshot' | 'restore', unknown, { kind: string; code: string }]> = [
    ['start throws an Error', 'start', new Error('no start'), { kind: 'execution', code: 'engine.process.start.failed' }],
    ['start panics', 'start', 'start panic', { kind: 'panic', code: 'engine.process.start.failed' }],
    ['snapshot throws an Error', 'snapshot', new Error('no snapshot'), { kind: 'execution', code: 'engine.process.snapshot.failed' }],
    ['restore panics', 'restore', 42, { kind: 'panic', code: 'engine.process.snapshot.unrestorable' }],
    ['start throws a classified error', 'start', counterExhausted.wrap('init'), { kind: 'execution', code: 'engine.counter.exhausted' }],
  ];
  for (const [name, stage, thrown, expected] of cases) {
    const outcomes: ProcessInitializationOutcome[] = [];
    const { engine, committer } = setup({ initializationAcknowledger: (outcome) => void outcomes.push(outcome) });
    const rejection = await rejectsWith(engine.start(deploy(throwingAt(stage, thrown)), Payload.encode({})), ErrorCode.processStartFailed);
    const outcome = outcomes[0];
    assert.equal(outcome?.status, 'failed', name);
    assert.ok(outcome.status === 'failed');
    assert.deepEqual({ kind: outcome.failure.kind, code: outcome.failure.code }, expected, name);
    if (thrown instanceof Error) {
      assert.equal(rejection.cause, thrown, name);
      assert.equal(outcome.error, thrown, name);
    } else {
      const operation = stage === 'start' ? 'Definition.start' : stage === 'snapshot' ? 'Execution.snapshot' : 'Definition.restore';
      assertPanic(rejection.cause, operation, thrown);
      assert.equal(outcome.error, rejection.cause, name);
    }
    assert.equal(committer.attempts.length, 0, name);
  }
});

test('an acknowledger refusing an initialised outcome rejects the start (a panic is contained); refusing a failed one keeps the start error', async () => {
  let refuse: unknown = 'ack store panic';
  const { engine, committer } = setup({
    initializationAcknowledger: (outcome) => {
      if (outcome.status === 'initialized' || refuse instanceof Error) throw refuse;
    },
  });
  const unacknowledged = await rejectsWith(engine.start(done, Payload.encode({})), ErrorCode.processStartFailed);
  assertPanic(unacknowledged.cause, 'ProcessInitializationAcknowledger.acknowledge', 'ack store panic');
  assert.equal(committer.attempts.length, 0, 'nothing was published');
  refuse = new Error('ack store down');
  const broken = new Error('no start');
  const failedStart = await rejectsWith(engine.start(deploy(throwingAt('start', broken)), Payload.encode({})), ErrorCode.processStartFailed);
  assert.equal(failedStart.cause, broken, 'the start error, not the acknowledger error');
});

test('a TreeCommitter panic rejects a start with a CallbackPanicError and stops a running writer with one as the cause', async () => {
  const committer = new RecordingCommitter();
  committer.intercept = (record) => (record.kind === 'start' ? { fail: { when: 'before', error: 'start disk panic' } } : undefined);
  const { engine } = setup({ committer });
  const start = engine.start(done, Payload.encode({}));
  await assert.rejects(start, (error: unknown) => {
    assertPanic(error, 'TreeCommitter.commitCheckpoint', 'start disk panic');
    return true;
  });

  committer.intercept = (record) => (record.kind === 'parked' ? { fail: { when: 'before', error: 'parked disk panic' } } : undefined);
  const paused = await engine.start(deploy(pausing()), Payload.encode({}));
  await assert.rejects(paused.await(), (error: unknown) => {
    assert.ok(error instanceof RuntimeError);
    assertPanic(error.cause, 'TreeCommitter.commitCheckpoint', 'parked disk panic');
    assert.equal(error.classification().code, 'engine.tree.committer_failed');
    return true;
  });

  committer.intercept = (record) => (record.kind === 'pending' ? { fail: { when: 'before', error: 'effect disk panic' } } : undefined);
  const dispatcher: Dispatcher = { dispatch: async () => Settlement.of('succeeded', Payload.emptyObject), replayPolicy: () => 'never' };
  const dispatching = await engine.start(deploy(dispatchProgram(), dispatcher), Payload.encode({}));
  await assert.rejects(dispatching.await(), (error: unknown) => {
    assert.ok(error instanceof RuntimeError);
    assertPanic(error.cause, 'TreeCommitter.commitEffect', 'effect disk panic');
    return true;
  });
});

test('a TreeCommitter panic on activation rejects the restore with a CallbackPanicError', async () => {
  const first = setup();
  const deployment = deploy(pausing(), undefined, 'panics-activation');
  const process = await first.engine.start(deployment, Payload.encode({}));
  await published(first.recorder, process.id, 'agent.process.paused');
  const head = await first.engine.captureTree(process.id);
  const committer = new RecordingCommitter(first.committer.store);
  committer.intercept = (record) => (record.type === 'activation' ? { fail: { when: 'before', error: 'activation panic' } } : undefined);
  const second = setup({ committer });
  await assert.rejects(second.engine.restoreTree(deployment, head), (error: unknown) => {
    assertPanic(error, 'TreeCommitter.activateTree', 'activation panic');
    return true;
  });
  assert.equal(second.engine.process(process.id), undefined);
});

// ---------------------------------------------------------------------------------------------
// Child admission: DeploymentResolver, ProcessAdmitter, Definition, ProcessInitializationAcknowledger

/** Starts a parent with one child of `child` and returns the child start's Failure. */
async function childStartFailure(config: Parameters<typeof setup>[0], child = done): Promise<{ kind: string; code: string }> {
  const { engine } = setup(config);
  const root = await engine.start(deploy(parentProgram({ children: [childSpec('x', child)] })), Payload.encode({}));
  const result = await root.await();
  await root.join();
  assert.equal(result.status, 'completed');
  const started = (result.output?.decode() as { started: Array<{ process_id?: string; failure?: { kind: string; code: string } }> }).started[0];
  assert.equal(started?.process_id, undefined, 'no child was published');
  assert.ok(started?.failure !== undefined);
  return { kind: started.failure.kind, code: started.failure.code };
}

test('child admission: each callback panic settles the start definitely failed with Failure kind panic', async () => {
  const panicking = { resolve: () => { throw 'resolver panic'; } };
  assert.deepEqual(await childStartFailure({ deploymentResolver: panicking }), { kind: 'panic', code: 'engine.child.deployment_unavailable' });
  const resolver = new MapDeploymentResolver([done]);
  const childrenOnly = (thrown: unknown) => (admission: { relation: { parentId?: unknown } }) => {
    if (admission.relation.parentId !== undefined) throw thrown;
  };
  assert.deepEqual(await childStartFailure({ deploymentResolver: resolver, processAdmitter: childrenOnly('admitter panic') }), {
    kind: 'panic',
    code: 'engine.child.admission.rejected',
  });
  assert.deepEqual(await childStartFailure({ deploymentResolver: resolver, processAdmitter: childrenOnly(new Error('no')) }), {
    kind: 'execution',
    code: 'engine.child.admission.rejected',
  });
  assert.deepEqual(
    await childStartFailure({ deploymentResolver: resolver, initializationAcknowledger: (outcome) => childrenOnly('ack panic')(outcome.admission) }),
    { kind: 'panic', code: 'engine.child.initialization_outcome.unacknowledged' },
  );
  const broken = deploy(throwingAt('start', 'child start panic'), undefined, 'panics-child-start');
  assert.deepEqual(await childStartFailure({ deploymentResolver: new MapDeploymentResolver([broken]) }, broken), {
    kind: 'panic',
    code: 'engine.process.start.failed',
  });
});

test('a child whose initialisation fails reaches the acknowledger with its Failure, even when the acknowledger throws synchronously', { timeout: 20_000 }, async () => {
  const broken = deploy(throwingAt('restore', new Error('no restore')), undefined, 'panics-child-restore');
  const outcomes: ProcessInitializationOutcome[] = [];
  const failure = await childStartFailure(
    {
      deploymentResolver: new MapDeploymentResolver([broken]),
      initializationAcknowledger: (outcome) => {
        outcomes.push(outcome);
        if (outcome.status === 'failed') throw new Error('the acknowledgment store is down');
      },
    },
    broken,
  );
  assert.deepEqual(failure, { kind: 'execution', code: 'engine.process.snapshot.unrestorable' });
  const outcome = outcomes.find((entry) => entry.status === 'failed');
  assert.ok(outcome?.status === 'failed');
  assert.equal(outcome.failure.code, 'engine.process.snapshot.unrestorable');
});

// ---------------------------------------------------------------------------------------------
// Restore: DeploymentResolver and Definition.restore

test('restore: a panicking resolver rejects with its CallbackPanicError; its deployment_unavailable stays that', async () => {
  const first = setup({ deploymentResolver: new MapDeploymentResolver([done]) });
  const parent = deploy(parentProgram({ children: [childSpec('x', done)] }), undefined, 'panics-restore-parent');
  const root = await first.engine.start(parent, Payload.encode({}));
  await root.await();
  await root.join();
  const head = await first.engine.captureTree(root.id);
  assert.equal(head.processSnapshots().length, 2);
  const panicking = setup({ committer: new RecordingCommitter(first.committer.store), deploymentResolver: { resolve: () => { throw 'resolver panic'; } } });
  await assert.rejects(panicking.engine.restoreTree(parent, head), (error: unknown) => {
    assertPanic(error, 'DeploymentResolver.resolve', 'resolver panic');
    return true;
  });
  const empty = setup({ committer: new RecordingCommitter(first.committer.store), deploymentResolver: new MapDeploymentResolver([]) });
  await rejectsWith(empty.engine.restoreTree(parent, head), ErrorCode.deploymentUnavailable);
});

test('restore: a Definition.restore panic refuses the tree with the CallbackPanicError as cause', async () => {
  let panic = false;
  const definition = new ProgramDefinition({
    name: 'test.panics.restore',
    step: ({ step }) => (step === 1 ? Transition.pause(0, 'held') : Transition.complete(0, Payload.encode({}))),
    onRestore: () => {
      if (panic) throw 'restore panic';
    },
  });
  const deployment = deploy(definition, undefined, 'panics-restore');
  const first = setup();
  const process = await first.engine.start(deployment, Payload.encode({}));
  await published(first.recorder, process.id, 'agent.process.paused');
  const head = await first.engine.captureTree(process.id);
  panic = true;
  const refusal = await rejectsWith(setup().engine.validateRestorableTree(deployment, head), ErrorCode.invalidTreeSnapshot);
  assertPanic(refusal.cause, 'Definition.restore', 'restore panic');
});

// ---------------------------------------------------------------------------------------------
// Dispatcher.replayPolicy

test('a panicking replayPolicy leaves a restored pending Effect Unknown (panic diagnostic) and rejects a replay; the writer lives on', async () => {
  const program = dispatchProgram({ name: 'test.panics.policy' });
  const hold = deferred();
  const hanging: Dispatcher = { dispatch: async () => (await hold.promise, Settlement.of('succeeded', Payload.emptyObject)), replayPolicy: () => 'never' };
  const first = setup();
  const process = await first.engine.start(deploy(program, hanging, 'panics-policy'), Payload.encode({}));
  await first.committer.acknowledgement((record) => record.kind === 'pending');
  const head = await first.committer.loadTree(process.id);

  const panicking: Dispatcher = {
    dispatch: async () => Settlement.of('succeeded', Payload.emptyObject),
    replayPolicy: () => {
      throw new Error('policy bug');
    },
  };
  const deployment = deploy(program, panicking, 'panics-policy');
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(deployment, head!);
  const settled = await second.committer.acknowledgement((record) => record.kind === 'settled');
  const effect = settled.snapshot.root.prepared!.effects()[0]!;
  assert.equal(effect.unknown, true);
  assert.equal(effect.diagnostic?.kind, 'panic');
  assert.equal(effect.diagnostic?.code, 'engine.effect.recovery.invalid');
  await assert.rejects(restored.replayUnknownEffect(effect.id), (error: unknown) => {
    assert.ok(CallbackPanicError.is(error, 'Dispatcher.replayPolicy'));
    assert.ok(error.value instanceof Error && error.value.message === 'policy bug');
    return true;
  });
  await restored.resolveUnknownEffect(effect.id, Settlement.of('succeeded', Payload.encode({ by: 'host' })));
  assert.equal((await restored.await()).status, 'completed');
  hold.resolve();
  await assert.rejects(process.await(), RuntimeError);
});


// ---------------------------------------------------------------------------------------------
// The Step path: Execution.snapshot and Definition.restore of a candidate or of the committed state

test('a panic while capturing or restoring a Step candidate, or restoring the committed state, fails the Process with kind panic', async () => {
  const cases: Array<[string, (step: number) => { snapshot?: unknown; restore?: unknown }, string]> = [
    // Step 1's candidate is captured as state step 1.
    ['candidate snapshot', (step) => (step === 1 ? { snapshot: 'snapshot panic' } : {}), 'execution.snapshot.failed'],
    // Restores of state step 1: the candidate's restore-before-adopt.
    ['candidate restore', (step) => (step === 1 ? { restore: 'restore panic' } : {}), 'execution.snapshot.unrestorable'],
  ];
  for (const [name, panicAt, code] of cases) {
    const definition = new ProgramDefinition({
      name: 'test.panics.step',
      step: () => Transition.complete(0, Payload.encode({})),
      onSnapshot: (state) => {
        const thrown = panicAt(state.step).snapshot;
        if (thrown !== undefined) throw thrown;
      },
      onRestore: (state) => {
        const thrown = panicAt(state.step).restore;
        if (thrown !== undefined) throw thrown;
      },
    });
    const result = await setup().engine.run(deploy(definition), Payload.encode({}));
    assert.equal(result.status, 'failed', name);
    assert.equal(result.termination.cause, 'panic', name);
    assert.deepEqual([result.termination.failure?.kind, result.termination.failure?.code], ['panic', code], name);
  }
  // The committed state (step 0) restores at start, then refuses when the first Step rebuilds it.
  let restores = 0;
  const committed = new ProgramDefinition({
    name: 'test.panics.committed',
    step: () => Transition.complete(0, Payload.encode({})),
    onRestore: () => {
      restores += 1;
      if (restores === 2) throw 'committed panic';
    },
  });
  const result = await setup().engine.run(deploy(committed), Payload.encode({}));
  assert.deepEqual([result.termination.failure?.kind, result.termination.failure?.code], ['panic', 'engine.committed_execution_state.invalid']);
});

/** An Error whose `message` getter throws: interpreting it panics. */
function unreadableError(): Error {
  const error = new Error('unreadable');
  Object.defineProperty(error, 'message', {
    get() {
      throw new Error('the message getter panicked');
    },
  });
  return error;
}

test('a panic while interpreting a Step error is an execution panic, never a stranded Step', { timeout: 20_000 }, async () => {
  const definition = new ProgramDefinition({
    name: 'test.panics.interpret',
    step: () => {
      throw unreadableError();
    },
  });
  const result = await setup().engine.run(deploy(definition), Payload.encode({}));
  assert.equal(result.status, 'failed');
  assert.deepEqual([result.termination.failure?.kind, result.termination.failure?.code], ['panic', 'execution.step.failed']);
});

test('a panic while interpreting a child initialisation error still settles the child start, kind panic', { timeout: 20_000 }, async () => {
  const broken = deploy(throwingAt('start', unreadableError()), undefined, 'panics-child-unreadable');
  assert.deepEqual(await childStartFailure({ deploymentResolver: new MapDeploymentResolver([broken]) }, broken), {
    kind: 'panic',
    code: 'engine.process.start.failed',
  });
});

test('a panic while interpreting a child admitter rejection still settles the child start, kind panic', { timeout: 20_000 }, async () => {
  const unreadable = (admission: { relation: { parentId?: unknown } }) => {
    if (admission.relation.parentId !== undefined) throw unreadableError();
  };
  assert.deepEqual(await childStartFailure({ deploymentResolver: new MapDeploymentResolver([done]), processAdmitter: unreadable }), {
    kind: 'panic',
    code: 'engine.child.admission.rejected',
  });
});
