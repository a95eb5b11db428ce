import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CallbackPanicError } from '../../src/kernel/callback-panic-error.js';
import { ClassifiedError } from '../../src/kernel/classified-error.js';
import type { Definition, Execution } from '../../src/kernel/definition.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import { EffectRequest } from '../../src/kernel/effect.js';
import { ExecutionState } from '../../src/kernel/execution-state.js';
import { WaitId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import type { Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { ConformanceFailure } from '../../src/testing/committer-conformance.js';
import {
  definitionConformanceCases,
  runDefinitionCase,
  runDefinitionConformance,
  verifyRejectedStep,
  type DefinitionConformanceConfig,
} from '../../src/testing/definition-conformance.js';
import {
  counterDefinition,
  counterIdleReason,
  counterStateKind,
  echoDefinition,
  echoDescriptor,
  echoDispatcher,
  echoEffect,
  echoStateKind,
  exampleEffectId,
  exampleProcessId,
  hiddenMutableInputDefinition,
  hostSignal,
  lossyRestoreDefinition,
  nondeterministicStepDefinition,
  pauseDefinition,
  pauseReason,
  pauseStateKind,
  progressDefinition,
  progressStateKind,
  settlementSignal,
  sharedExecutionStateDefinition,
  waitAnswerSignal,
  waitDefinition,
  waitOpenedSignal,
  waitStateKind,
} from '../../src/testing/example-definitions.js';

const value = (text: string): Payload => Payload.encode({ value: text });
const state = (kind: string, body: unknown): ExecutionState => ExecutionState.encode(kind, body);

// ---------------------------------------------------------------------------------------------
// Real configurations: the suite runs against every example definition.

const echoSettled = settlementSignal(exampleEffectId(), 'succeeded', value('hello'));
const echoAwaiting = state(echoStateKind, { phase: 'awaiting_echo', value: 'hello' });

function echoConfig(): DefinitionConformanceConfig {
  return {
    definition: echoDefinition,
    input: value('hello'),
    initialSignals: [],
    followingSignals: [[echoSettled]],
    restoredCases: [
      { name: 'awaiting its settlement', state: echoAwaiting, signals: [echoSettled] },
      {
        name: 'a failed settlement',
        state: echoAwaiting,
        signals: [settlementSignal(exampleEffectId(), 'failed', Payload.encode({ error: 'refused' }))],
      },
      {
        name: 'a settlement followed by later input',
        state: echoAwaiting,
        signals: [echoSettled, hostSignal('host:late', Payload.emptyObject)],
      },
    ],
    rejectedCases: [
      {
        name: 'a signal before the effect',
        state: state(echoStateKind, { phase: 'ready', value: 'hello' }),
        signals: [hostSignal('host:early', Payload.emptyObject)],
        failureKind: 'contract',
        failureCode: 'example.echo.unexpected_signal',
      },
      {
        name: 'no settlement',
        state: echoAwaiting,
        signals: [],
        failureKind: 'contract',
        failureCode: 'example.echo.missing_settlement',
      },
      {
        name: 'an invalid settlement',
        state: echoAwaiting,
        signals: [settlementSignal(exampleEffectId(), 'succeeded', Payload.encode({ other: 1 }))],
        failureKind: 'contract',
        failureCode: 'example.echo.invalid_settlement',
      },
      {
        name: 'a finished echo',
        state: state(echoStateKind, { phase: 'completed', value: 'hello' }),
        signals: [],
        failureKind: 'execution',
        failureCode: 'example.echo.finished',
      },
    ],
  };
}

runDefinitionConformance('echo', echoConfig());

const add = (id: string, amount: unknown): Signal => hostSignal(id, Payload.encode({ add: amount }));
const finish = (id: string): Signal => hostSignal(id, Payload.encode({ finish: true }));

runDefinitionConformance('counter', {
  definition: counterDefinition,
  input: Payload.encode({ start: 1 }),
  initialSignals: [add('host:1', 2), add('host:2', 3)],
  followingSignals: [[], [add('host:3', 4), finish('host:4'), add('host:5', 5)]],
  restoredCases: [
    { name: 'mid-count', state: state(counterStateKind, { phase: 'counting', total: 5, count: 2 }), signals: [finish('host:f')] },
    {
      name: 'an idle counter',
      state: state(counterStateKind, { phase: 'counting', total: 0, count: 0 }),
      signals: [],
      followingSignals: [[add('host:a', -7)], [finish('host:b')]],
    },
  ],
  rejectedCases: [
    {
      name: 'an addressed signal',
      state: state(counterStateKind, { phase: 'counting', total: 0, count: 0 }),
      signals: [waitAnswerSignal('host:w', WaitId.parse('wait:other'), Payload.encode({ add: 1 }))],
      failureKind: 'contract',
      failureCode: 'example.counter.unexpected_signal',
    },
    {
      name: 'an invalid signal',
      state: state(counterStateKind, { phase: 'counting', total: 0, count: 0 }),
      signals: [add('host:x', 'x')],
      failureKind: 'contract',
      failureCode: 'example.counter.invalid_signal',
    },
    {
      name: 'a finished counter',
      state: state(counterStateKind, { phase: 'finished', total: 3, count: 1 }),
      signals: [add('host:y', 1)],
      failureKind: 'execution',
      failureCode: 'example.counter.finished',
    },
  ],
});

const waitId = WaitId.derive(exampleEffectId());
const opening = waitOpenedSignal(waitId);
const answer = waitAnswerSignal('host:answer', waitId, Payload.encode({ text: 'yes' }));

runDefinitionConformance('wait', {
  definition: waitDefinition,
  input: Payload.encode({ key: 'question' }),
  initialSignals: [],
  followingSignals: [[opening], [answer]],
  restoredCases: [
    {
      name: 'an early answer',
      state: state(waitStateKind, { phase: 'opening', key: 'question' }),
      signals: [opening, answer],
      followingSignals: [[answer]],
    },
    {
      name: 'waiting with an empty window',
      state: state(waitStateKind, { phase: 'waiting', key: 'question', wait_id: waitId.toString() }),
      signals: [],
    },
  ],
  rejectedCases: [
    {
      name: 'no opening',
      state: state(waitStateKind, { phase: 'opening', key: 'question' }),
      signals: [],
      failureKind: 'contract',
      failureCode: 'example.wait.missing_opening',
    },
    {
      name: 'an answer to another wait',
      state: state(waitStateKind, { phase: 'waiting', key: 'question', wait_id: waitId.toString() }),
      signals: [waitAnswerSignal('host:other', WaitId.parse('wait:other'), Payload.emptyObject)],
      failureKind: 'contract',
      failureCode: 'example.wait.unexpected_signal',
    },
    {
      name: 'a completed wait',
      state: state(waitStateKind, { phase: 'completed', key: 'question', wait_id: waitId.toString() }),
      signals: [],
      failureKind: 'execution',
      failureCode: 'example.wait.finished',
    },
  ],
});

for (const [name, definition, kind, middle, code] of [
  ['pause', pauseDefinition, pauseStateKind, 'paused', 'example.pause.finished'],
  ['progress', progressDefinition, progressStateKind, 'checkpointed', 'example.progress.finished'],
] as const) {
  runDefinitionConformance(name, {
    definition,
    input: value('v'),
    initialSignals: [],
    followingSignals: [[]],
    restoredCases: [{ name: middle, state: state(kind, { phase: middle, value: 'v' }), signals: [] }],
    rejectedCases: [
      {
        name: 'completed',
        state: state(kind, { phase: 'completed', value: 'v' }),
        signals: [],
        failureKind: 'execution',
        failureCode: code,
      },
    ],
  });
}

// ---------------------------------------------------------------------------------------------
// The examples do what their documentation says.

async function drive(definition: Definition, input: Payload, windows: readonly (readonly Signal[])[]): Promise<Transition[]> {
  const execution = await definition.start(input);
  const transitions: Transition[] = [];
  for (const window of windows) transitions.push(await execution.step(new AbortController().signal, window));
  return transitions;
}

test('examples: echo declares one effect and completes with the settled value', async () => {
  const [first, second] = await drive(echoDefinition, value('hello'), [[], [echoSettled]]);
  assert.equal(first?.json(), Transition.continue(0, [echoEffect('hello')]).json());
  assert.equal(second?.json(), Transition.complete(1, value('hello')).json());
});

test('examples: echoDispatcher settles succeeded with the effect payload', async () => {
  const request = EffectRequest.create({
    processId: exampleProcessId,
    relation: ProcessRelation.root(exampleProcessId),
    deploymentRef: Deployment.create({
      definition: echoDefinition,
      dispatcher: echoDispatcher,
      implementationDigest: Digest.of('echo-implementation'),
      configurationDigest: Digest.of('echo-configuration'),
    }).ref,
    stepSequence: 1n,
    batchIndex: 0,
    effect: echoEffect('hi'),
  });
  const deltas: Payload[] = [];
  const settlement = await echoDispatcher.dispatch(request, (delta) => deltas.push(delta), new AbortController().signal);
  assert.equal(settlement.status, 'succeeded');
  assert.equal(settlement.payload.json(), '{"value":"hi"}');
  assert.deepEqual(deltas.map((delta) => delta.json()), ['{"value":"hi"}']);
  assert.equal(echoDispatcher.replayPolicy(echoEffect('hi')), 'same_identity');
  const aborted = new AbortController();
  aborted.abort();
  await assert.rejects(echoDispatcher.dispatch(request, undefined, aborted.signal), { name: 'AbortError' });
});

test('examples: counter pauses when idle, sums adds and leaves input after finish unconsumed', async () => {
  const transitions = await drive(counterDefinition, Payload.encode({ start: 1 }), [
    [],
    [add('host:1', 2), add('host:2', 3)],
    [finish('host:3'), add('host:4', 9)],
  ]);
  assert.deepEqual(
    transitions.map((transition) => transition.json()),
    [
      Transition.pause(0, counterIdleReason).json(),
      Transition.continue(2).json(),
      Transition.complete(1, Payload.encode({ total: 6, count: 2 })).json(),
    ],
  );
  assert.ok(counterDefinition.descriptor().outputSchema.accepts(Payload.encode({ total: 6, count: 2 })));
});

test('examples: wait opens a wait, records the minted WaitId and completes with the answer', async () => {
  const transitions = await drive(waitDefinition, Payload.emptyObject, [[], [opening, answer], [answer]]);
  const [open, wait, complete] = transitions;
  assert.equal(open?.effects[0]?.frameworkOperation().operation, 'wait');
  assert.equal(open?.effects[0]?.payload.json(), '{"key":"question","operation":"wait"}');
  assert.equal(wait?.json(), Transition.wait(1, waitId).json());
  assert.equal(complete?.json(), Transition.complete(1, Payload.encode({ text: 'yes' })).json());
});

test('examples: pause pauses then completes; progress checkpoints then completes', async () => {
  assert.deepEqual(
    (await drive(pauseDefinition, value('v'), [[], []])).map((transition) => transition.json()),
    [Transition.pause(0, pauseReason).json(), Transition.complete(0, value('v')).json()],
  );
  assert.deepEqual(
    (await drive(progressDefinition, value('v'), [[], []])).map((transition) => transition.json()),
    [Transition.checkpoint(0).json(), Transition.complete(0, value('v')).json()],
  );
});

test('examples: start validates input and restore validates the state', async () => {
  assert.throws(() => echoDefinition.start(Payload.encode({ value: 1 })), { code: 'schema_validation_failed' });
  const signal = new AbortController().signal;
  for (const bad of [
    state(echoStateKind, { phase: 'lost', value: 'x' }),
    state(echoStateKind, { phase: 'ready' }),
    state(echoStateKind, { phase: 'ready', value: 'x', extra: true }),
    state('example.other', { phase: 'ready', value: 'x' }),
    state(waitStateKind, { phase: 'waiting', key: 'question' }),
    state(counterStateKind, { phase: 'counting', total: 1.5, count: 0 }),
  ]) {
    const definition = [echoDefinition, waitDefinition, counterDefinition].find(
      (candidate) => bad.kind === candidate.descriptor().name,
    ) ?? echoDefinition;
    assert.throws(() => definition.restore(bad, signal), { code: 'invalid_execution_state' }, bad.json());
  }
  const aborted = new AbortController();
  aborted.abort();
  assert.throws(() => echoDefinition.restore(echoAwaiting, aborted.signal), { name: 'AbortError' });
});

test('examples: a rejected step leaves the execution as it was', async () => {
  const execution = await echoDefinition.restore(echoAwaiting, new AbortController().signal);
  assert.throws(() => execution.step(new AbortController().signal, []));
  assert.equal(execution.snapshot().json(), echoAwaiting.json());
});

test('examples: every example binds as a Deployment', () => {
  for (const definition of [echoDefinition, counterDefinition, waitDefinition, pauseDefinition, progressDefinition]) {
    const deployment = Deployment.create({
      definition,
      implementationDigest: Digest.of('examples'),
      configurationDigest: Digest.of('examples'),
    });
    assert.equal(deployment.ref.name, definition.descriptor().name);
  }
  assert.equal(echoDescriptor.name, 'example.echo');
});

// ---------------------------------------------------------------------------------------------
// Self-tests: the suite fails, with a named message, against definitions that break one rule.

async function failures(config: DefinitionConformanceConfig, signal?: AbortSignal): Promise<Map<string, unknown>> {
  const failed = new Map<string, unknown>();
  for (const conformanceCase of definitionConformanceCases(config)) {
    try {
      await runDefinitionCase(conformanceCase, { signal });
    } catch (error) {
      failed.set(conformanceCase.name, error);
    }
  }
  return failed;
}

function messages(failed: Map<string, unknown>): string {
  return JSON.stringify([...failed].map(([name, error]) => [name, error instanceof Error ? error.message : String(error)]));
}

async function assertDetected(config: DefinitionConformanceConfig, caseName: string, message: RegExp): Promise<void> {
  const failed = await failures(config);
  const error = failed.get(caseName);
  assert.ok(error instanceof ConformanceFailure, `case "${caseName}" should fail; failures: ${messages(failed)}`);
  assert.match(error.message, message);
}

/** An echo-shaped config for any definition taking `{"value"}`. */
function echoShaped(definition: Definition): DefinitionConformanceConfig {
  return { definition, input: value('hello'), initialSignals: [], followingSignals: [[]] };
}

test('self-test: accepts a deterministic definition', async () => {
  assert.equal(messages(await failures(echoConfig())), '[]');
  assert.deepEqual(
    definitionConformanceCases(echoConfig()).map((conformanceCase) => conformanceCase.name),
    [
      'descriptor is stable',
      'fresh executions are isolated and deterministic',
      'restored awaiting its settlement',
      'restored a failed settlement',
      'restored a settlement followed by later input',
      'rejected a signal before the effect',
      'rejected no settlement',
      'rejected an invalid settlement',
      'rejected a finished echo',
    ],
  );
});

test('self-test: detects hidden mutable input', async () => {
  await assertDetected(
    echoShaped(hiddenMutableInputDefinition()),
    'fresh executions are isolated and deterministic',
    /initial signals: equal executions returned different transitions \(nondeterministic step or hidden mutable input\)/,
  );
});

test('self-test: detects shared execution state', async () => {
  await assertDetected(
    echoShaped(sharedExecutionStateDefinition()),
    'fresh executions are isolated and deterministic',
    /initial signals: stepping one execution changed another execution's state \(shared execution state\)/,
  );
});

test('self-test: detects lossy restore', async () => {
  await assertDetected(
    echoShaped(lossyRestoreDefinition()),
    'fresh executions are isolated and deterministic',
    /initial signals: Snapshot→Restore is not exact \(lossy restore\)/,
  );
});

test('self-test: detects a nondeterministic step', async () => {
  await assertDetected(
    echoShaped(nondeterministicStepDefinition()),
    'fresh executions are isolated and deterministic',
    /initial signals: equal executions reached different states/,
  );
});

test('self-test: detects an execution returned twice', async () => {
  const execution = await echoDefinition.start(value('x'));
  const definition: Definition = { ...delegate(echoDefinition), start: () => execution };
  await assertDetected(echoShaped(definition), 'fresh executions are isolated and deterministic', /same Execution instance/);
});

test('self-test: detects a restored state the definition does not reproduce', async () => {
  // The captured state carries a member the definition drops: restoring it is lossy.
  const noted = state('example.broken.lossy_restore', { phase: 'awaiting', value: 'v', note: 'kept' });
  await assertDetected(
    { ...echoShaped(lossyRestoreDefinition()), restoredCases: [{ name: 'noted', state: noted, signals: [] }] },
    'restored noted',
    /restored noted: Snapshot after Restore is not the captured state \(lossy restore\)/,
  );
});

test('self-test: detects an unstable descriptor', async () => {
  let calls = 0;
  const other = counterDefinition.descriptor();
  const definition: Definition = {
    ...delegate(echoDefinition),
    descriptor: () => (calls++ % 2 === 0 ? echoDefinition.descriptor() : other),
  };
  await assertDetected(echoShaped(definition), 'descriptor is stable', /descriptor is not stable/);
});

test('self-test: detects a descriptor that changes while stepping', async () => {
  let stepped = false;
  const base = stepOverride(echoDefinition, (execution, signal, signals) => {
    stepped = true;
    return execution.step(signal, signals);
  });
  const definition: Definition = {
    ...base,
    descriptor: () => (stepped ? counterDefinition.descriptor() : echoDefinition.descriptor()),
  };
  await assertDetected(echoShaped(definition), 'fresh executions are isolated and deterministic', /the descriptor changed while stepping/);
});

test('self-test: requires the configured input to satisfy the descriptor', async () => {
  await assertDetected(
    { ...echoShaped(echoDefinition), input: Payload.encode({ value: 3 }) },
    'fresh executions are isolated and deterministic',
    /the configured input does not satisfy the descriptor/,
  );
});

test('self-test: a consumed count beyond the delivered window fails', async () => {
  const definition = stepOverride(echoDefinition, () => Transition.continue(2));
  await assertDetected(
    { ...echoShaped(definition), initialSignals: [hostSignal('host:only', Payload.emptyObject)] },
    'fresh executions are isolated and deterministic',
    /consumed 2 signals of a 1-signal window \(the consumed count must not exceed the delivered prefix\)/,
  );
});

test('self-test: validates each configured batch', async () => {
  // Deterministic for two Steps, then drifting: only the third window reveals it.
  let drift = 0;
  const lateDrift = stepOverride(counterDefinition, (execution, signal, signals) => {
    const transition = execution.step(signal, signals);
    if (!signals.some((item) => item.id.toString() === 'host:late')) return transition;
    drift += 1;
    return Transition.continue(drift % 2);
  });
  const config: DefinitionConformanceConfig = {
    definition: lateDrift,
    input: Payload.emptyObject,
    initialSignals: [add('host:1', 1)],
    followingSignals: [[add('host:2', 2)], [add('host:late', 3)]],
  };
  await assertDetected(config, 'fresh executions are isolated and deterministic', /^fresh executions, following signals 2: equal executions returned different transitions/);
  await assertDetected(
    {
      ...config,
      followingSignals: [],
      restoredCases: [
        {
          name: 'late',
          state: state(counterStateKind, { phase: 'counting', total: 0, count: 0 }),
          signals: [add('host:1', 1)],
          followingSignals: [[add('host:late', 3)]],
        },
      ],
    },
    'restored late',
    /^restored late, following signals 1: equal executions returned different transitions/,
  );
  // A failing Step in a later batch is reported with that batch.
  await assertDetected(
    { ...echoShaped(echoDefinition), followingSignals: [[echoSettled], []] },
    'fresh executions are isolated and deterministic',
    /^fresh executions, following signals 2, first execution: Execution\.step failed: .*the echo has finished/,
  );
});

test('self-test: config validation rejects invalid configurations before running', () => {
  const base = echoConfig();
  const ready = state(echoStateKind, { phase: 'ready', value: 'x' });
  const invalid: Array<[string, unknown, RegExp]> = [
    ['no config', undefined, /expected a config object/],
    ['no definition', { ...base, definition: {} }, /definition must implement/],
    ['input not a Payload', { ...base, input: { value: 'x' } }, /input must be a Payload/],
    ['initial signals not an array', { ...base, initialSignals: undefined }, /initialSignals must be an array/],
    ['a non-Signal in a batch', { ...base, followingSignals: [[], ['x']] }, /followingSignals\[1\]\[0\] is not a Signal/],
    ['a repeated id in a batch', { ...base, initialSignals: [echoSettled, echoSettled] }, /initialSignals\[1\] repeats signal id/],
    ['an empty case name', { ...base, restoredCases: [{ name: '', state: ready, signals: [] }] }, /restoredCases\[0\]\.name "" must be non-empty, trimmed text/],
    ['an untrimmed case name', { ...base, restoredCases: [{ name: ' a', state: ready, signals: [] }] }, /restoredCases\[0\]\.name " a"/],
    [
      'a duplicate case name',
      { ...base, restoredCases: [{ name: 'a', state: ready, signals: [] }, { name: 'a', state: ready, signals: [] }] },
      /restoredCases\[1\]\.name "a" is not unique/,
    ],
    ['a state that is not an ExecutionState', { ...base, restoredCases: [{ name: 'a', state: {}, signals: [] }] }, /restoredCases\[0\]\.state must be an ExecutionState/],
    [
      'an invalid restored batch',
      { ...base, restoredCases: [{ name: 'a', state: ready, signals: [], followingSignals: [[1]] }] },
      /restoredCases\[0\]\.followingSignals\[0\]\[0\] is not a Signal/,
    ],
    [
      'an invalid failure kind',
      { ...base, rejectedCases: [{ name: 'a', state: ready, signals: [], failureKind: 'fatal', failureCode: 'a.b' }] },
      /rejectedCases\[0\]\.failureKind "fatal" is not a failure kind/,
    ],
    [
      'an unqualified failure code',
      { ...base, rejectedCases: [{ name: 'a', state: ready, signals: [], failureKind: 'contract', failureCode: 'Bad Code' }] },
      /rejectedCases\[0\]\.failureCode "Bad Code" is not a qualified name/,
    ],
    [
      'a duplicate rejected name',
      {
        ...base,
        rejectedCases: [
          { name: 'a', state: ready, signals: [], failureKind: 'contract', failureCode: 'a.b' },
          { name: 'a', state: ready, signals: [], failureKind: 'contract', failureCode: 'a.b' },
        ],
      },
      /rejectedCases\[1\]\.name "a" is not unique/,
    ],
  ];
  for (const [what, config, message] of invalid) {
    assert.throws(
      () => definitionConformanceCases(config as DefinitionConformanceConfig),
      (error: unknown) =>
        error instanceof ConformanceFailure &&
        error.message.startsWith('invalid definition conformance config: ') &&
        message.test(error.message),
      what,
    );
  }
  // Names are unique per kind only: a restored and a rejected case may share one.
  assert.doesNotThrow(() =>
    definitionConformanceCases({
      ...base,
      restoredCases: [{ name: 'same', state: echoAwaiting, signals: [echoSettled] }],
      rejectedCases: [{ name: 'same', state: echoAwaiting, signals: [], failureKind: 'contract', failureCode: 'example.echo.missing_settlement' }],
    }),
  );
});

test('self-test: config validation runs no definition code', () => {
  let called = false;
  const spy: Definition = {
    descriptor: () => ((called = true), echoDescriptor),
    childDeployments: () => [],
    start: () => ((called = true), echoDefinition.start(value('x'))),
    restore: (snapshot, signal) => ((called = true), echoDefinition.restore(snapshot, signal)),
  };
  assert.throws(() => definitionConformanceCases({ ...echoConfig(), definition: spy, input: 'x' as unknown as Payload }), ConformanceFailure);
  definitionConformanceCases({ ...echoConfig(), definition: spy });
  assert.equal(called, false);
});

// ---------------------------------------------------------------------------------------------
// Rejected-step verification

const readyEcho = state(echoStateKind, { phase: 'ready', value: 'x' });

async function restoredEcho(from: ExecutionState = readyEcho): Promise<Execution> {
  return echoDefinition.restore(from, new AbortController().signal);
}

function throwing(thrown: unknown): Execution {
  return {
    step: () => {
      throw thrown;
    },
    snapshot: () => readyEcho,
  };
}

const unexpected = { failureKind: 'contract', failureCode: 'example.echo.unexpected_signal' } as const;
const early = [hostSignal('host:early', Payload.emptyObject)];

test('rejected step: the declared classification is accepted', async () => {
  const failure = await verifyRejectedStep(await restoredEcho(), early, unexpected);
  assert.equal(failure.kind, 'contract');
  assert.equal(failure.code, 'example.echo.unexpected_signal');
  assert.match(failure.message, /the ready echo received 1 signal\(s\): unexpected signal/);
});

test('rejected step: a step that accepts the signals fails', async () => {
  await assert.rejects(
    verifyRejectedStep(await restoredEcho(), [], unexpected),
    (error: unknown) => error instanceof ConformanceFailure && /Step accepted the signals with a continue transition/.test(error.message),
  );
});

test('rejected step: an unclassified error fails as execution.step.failed', async () => {
  await assert.rejects(
    verifyRejectedStep(throwing(new Error('plain trouble')), early, unexpected),
    (error: unknown) =>
      error instanceof ConformanceFailure &&
      /unclassified error that would be persisted as execution\.step\.failed \(plain trouble\)/.test(error.message),
  );
  // A cancellation is never the Strategy's classification either.
  const abort = new DOMException('stop', 'AbortError');
  await assert.rejects(
    verifyRejectedStep(throwing(new Error('cancelled', { cause: abort })), early, unexpected),
    (error: unknown) => error instanceof ConformanceFailure && /execution\.step\.failed/.test(error.message),
  );
});

test('rejected step: an invalid classified failure fails', async () => {
  // A forged sentinel (ClassifiedError's constructor would refuse this kind).
  const forged = Object.create(ClassifiedError.prototype) as { kind: string; code: string; message: string };
  Object.assign(forged, { kind: 'fatal', code: 'example.forged', message: 'forged' });
  await assert.rejects(
    verifyRejectedStep(throwing(forged), early, unexpected),
    (error: unknown) => error instanceof ConformanceFailure && /Step threw an invalid classified failure/.test(error.message),
  );
});

test('rejected step: a different classification fails', async () => {
  await assert.rejects(
    verifyRejectedStep(await restoredEcho(), early, { failureKind: 'execution', failureCode: 'example.echo.finished' }),
    (error: unknown) =>
      error instanceof ConformanceFailure &&
      /Step failed with contract\/example\.echo\.unexpected_signal, want execution\/example\.echo\.finished/.test(error.message),
  );
});

test('rejected step: a thrown non-Error value is a panic', async () => {
  for (const thrown of [undefined, 'text', { reason: 'object' }]) {
    await assert.rejects(verifyRejectedStep(throwing(thrown), early, unexpected), (error: unknown) => {
      return CallbackPanicError.is(error, 'Execution.step') && error.cause === thrown && error.code === 'callback_panic';
    });
  }
});

test('rejected step: the suite checks both restored copies and reports through the case', async () => {
  const config: DefinitionConformanceConfig = {
    ...echoConfig(),
    restoredCases: [],
    rejectedCases: [
      { name: 'right', state: readyEcho, signals: early, ...unexpected },
      { name: 'wrong', state: readyEcho, signals: early, failureKind: 'contract', failureCode: 'example.echo.other' },
      { name: 'accepted', state: readyEcho, signals: [], ...unexpected },
    ],
  };
  const failed = await failures(config);
  assert.deepEqual([...failed.keys()], ['rejected wrong', 'rejected accepted']);
  assert.match((failed.get('rejected wrong') as Error).message, /^rejected wrong \(first copy\): Step failed with/);
  assert.match((failed.get('rejected accepted') as Error).message, /^rejected accepted \(first copy\): Step accepted/);
});

// ---------------------------------------------------------------------------------------------
// Panics, signals and cancellation

function delegate(definition: Definition): Definition {
  return {
    descriptor: () => definition.descriptor(),
    childDeployments: () => definition.childDeployments(),
    start: (input) => definition.start(input),
    restore: (snapshot, signal) => definition.restore(snapshot, signal),
  };
}

type StepFn = (execution: Execution, signal: AbortSignal, signals: readonly Signal[]) => Transition | Promise<Transition>;

/** `definition` with every Execution's step replaced by `step` (which may call the original). */
function stepOverride(definition: Definition, step: StepFn, snapshot?: (execution: Execution) => ExecutionState): Definition {
  const wrap = (execution: Execution): Execution => ({
    step: (signal, signals) => step(execution, signal, signals),
    snapshot: () => (snapshot ?? ((inner: Execution) => inner.snapshot()))(execution),
  });
  return {
    ...delegate(definition),
    start: async (input) => wrap(await definition.start(input)),
    restore: async (snapshotState, signal) => wrap(await definition.restore(snapshotState, signal)),
  };
}

async function assertPanic(config: DefinitionConformanceConfig, caseName: string, operation: string, cause: unknown): Promise<void> {
  const failed = await failures(config);
  const error = failed.get(caseName);
  assert.ok(CallbackPanicError.is(error, operation), `case "${caseName}" should panic in ${operation}; failures: ${messages(failed)}`);
  assert.equal(error.cause, cause);
  assert.match(error.message, new RegExp(`^${operation.replace('.', '\\.')} panicked: `));
}

test('panics: a throwing descriptor', async () => {
  const cause = new Error('no descriptor');
  const definition: Definition = {
    ...delegate(echoDefinition),
    descriptor: () => {
      throw cause;
    },
  };
  await assertPanic(echoShaped(definition), 'descriptor is stable', 'Definition.descriptor', cause);
});

test('panics: start and restore throwing non-Error values; their Errors are failures', async () => {
  await assertPanic(
    echoShaped({
      ...delegate(echoDefinition),
      start: () => {
        throw 'start exploded';
      },
    }),
    'fresh executions are isolated and deterministic',
    'Definition.start',
    'start exploded',
  );
  await assertPanic(
    echoShaped({
      ...delegate(echoDefinition),
      restore: () => {
        throw undefined;
      },
    }),
    'fresh executions are isolated and deterministic',
    'Definition.restore',
    undefined,
  );
  await assertDetected(
    echoShaped({
      ...delegate(echoDefinition),
      start: () => {
        throw new Error('refused');
      },
    }),
    'fresh executions are isolated and deterministic',
    /Definition\.start rejected the configured input: refused/,
  );
  await assertDetected(
    echoShaped({ ...delegate(echoDefinition), start: () => ({}) as Execution }),
    'fresh executions are isolated and deterministic',
    /Definition\.start returned an object, not an Execution/,
  );
});

test('panics: step throwing a non-Error value and snapshot throwing anything', async () => {
  await assertPanic(
    echoShaped(
      stepOverride(echoDefinition, () => {
        throw 42;
      }),
    ),
    'fresh executions are isolated and deterministic',
    'Execution.step',
    42,
  );
  const cause = new Error('cannot snapshot');
  await assertPanic(
    echoShaped(
      stepOverride(
        echoDefinition,
        (execution, signal, signals) => execution.step(signal, signals),
        () => {
          throw cause;
        },
      ),
    ),
    'fresh executions are isolated and deterministic',
    'Execution.snapshot',
    cause,
  );
});

test('signals: every step and restore gets its own signal, aborted when the call returns', async () => {
  const seen: Array<{ operation: string; signal: AbortSignal; abortedDuringCall: boolean }> = [];
  const base = stepOverride(echoDefinition, (execution, signal, signals) => {
    seen.push({ operation: 'step', signal, abortedDuringCall: signal.aborted });
    return execution.step(signal, signals);
  });
  const definition: Definition = {
    ...base,
    restore: (snapshot, signal) => {
      seen.push({ operation: 'restore', signal, abortedDuringCall: signal.aborted });
      return base.restore(snapshot, signal);
    },
  };
  assert.equal(messages(await failures({ ...echoConfig(), definition })), '[]');
  assert.ok(seen.filter((call) => call.operation === 'step').length >= 6);
  assert.ok(seen.filter((call) => call.operation === 'restore').length >= 4);
  assert.equal(new Set(seen.map((call) => call.signal)).size, seen.length, 'each call has its own signal');
  assert.ok(seen.every((call) => !call.abortedDuringCall), 'no call starts cancelled');
  assert.ok(seen.every((call) => call.signal.aborted), 'every signal is aborted once its call returned');
});

test('signals: caller cancellation reaches the step', async () => {
  const reason = new Error('caller gave up');
  const caller = new AbortController();
  let observed: unknown;
  const definition = stepOverride(echoDefinition, (execution, signal, signals) => {
    caller.abort(reason);
    observed = signal.aborted ? signal.reason : undefined;
    return execution.step(signal, signals);
  });
  const [fresh] = definitionConformanceCases(echoShaped(definition)).slice(1);
  await assert.rejects(runDefinitionCase(fresh!, { signal: caller.signal }), (error: unknown) => {
    return error instanceof ConformanceFailure && /Execution\.step failed/.test(error.message);
  });
  assert.equal(observed, reason);
  // Already cancelled before the case: the first restore sees it.
  const failed = await failures(echoShaped(echoDefinition), AbortSignal.abort(reason));
  assert.match(String((failed.get('fresh executions are isolated and deterministic') as Error).message), /Definition\.restore rejected/);
});

test('CallbackPanicError names the operation and keeps the thrown value', () => {
  const cause = { detail: 'x' };
  const error = new CallbackPanicError('Definition.start', cause);
  assert.ok(error instanceof Error);
  assert.equal(error.name, 'CallbackPanicError');
  assert.equal(error.code, 'callback_panic');
  assert.equal(error.operation, 'Definition.start');
  assert.equal(error.cause, cause);
  assert.equal(error.value, cause);
  assert.equal(error.message, 'Definition.start panicked: an object');
  assert.equal(new CallbackPanicError('Execution.step', 'boom').message, 'Execution.step panicked: "boom"');
  assert.equal(new CallbackPanicError('Execution.step', undefined).message, 'Execution.step panicked: undefined');
  assert.equal(new CallbackPanicError('', 1).operation, 'an unnamed callback');
  assert.equal(CallbackPanicError.is(error, 'Definition.restore'), false);
  assert.equal(CallbackPanicError.is(new Error('x')), false);
});
