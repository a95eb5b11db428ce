import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import { ChildSpec, ChildWaitCondition, ChildWaitSpec, Effect } from '../../src/kernel/effect.js';
import { KernelError } from '../../src/kernel/errors.js';
import { ExecutionState } from '../../src/kernel/execution-state.js';
import { Failure } from '../../src/kernel/failure.js';
import { ChildKey, EffectId, ProcessId, SignalId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import {
  frameworkSettlementPayload,
  PreparedStep,
  type PreparedEffectInput,
  type StartedChildRenderer,
} from '../../src/kernel/prepared-step.js';
import { Settlement } from '../../src/kernel/settlement.js';
import { SignalRequest } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { testDeploymentRef } from '../../src/testing/snapshot-fixtures.js';

const rejects = (run: () => unknown, code: string, fragment: string): void => {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof KernelError, `expected a KernelError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.ok(error.message.includes(fragment), `"${error.message}" should mention "${fragment}"`);
    return true;
  });
};

const processId = ProcessId.parse('process:00000000000000000000000000000001');
const sequence = 3n;
const idOf = (index: number): EffectId => EffectId.derive(processId, sequence, index);
const state = ExecutionState.encode('test.state', { candidate: true });
const call = (name: string): Effect => Effect.dispatcher(Payload.encode({ call: name }));
const ok = Settlement.of('succeeded', Payload.encode({ ok: true }));
const failed = Settlement.of('failed', Payload.encode({ ok: false }));
const unknown = Settlement.of('unknown', Payload.encode({ reason: 'timeout' }));
const diagnostic = Failure.create('external', 'engine.dispatch.deadline', 'dispatch deadline exceeded');
const childFailure = Failure.create('contract', 'engine.child.input.invalid', 'child input is invalid');
const childSpec = ChildSpec.create({
  key: ChildKey.parse('worker'),
  deploymentRef: testDeploymentRef,
  input: Payload.encode({ task: 1 }),
  budget: Budget.unlimited(),
  capabilities: CapabilitySet.empty,
});
const waitSpec = ChildWaitSpec.create({
  key: WaitKey.parse('workers'),
  children: [ProcessId.parse('process:worker')],
  boundary: 'terminal_result',
  condition: ChildWaitCondition.all(),
});
const startChild = Effect.startChild(childSpec);
const wait = Effect.wait(WaitKey.parse('approval'));

function step(effects: PreparedEffectInput[], intent?: Transition): PreparedStep {
  return PreparedStep.create({
    processId,
    stepSequence: sequence,
    candidateState: state,
    intent: intent ?? Transition.continue(0),
    effects,
  });
}

const decodeOptions = { processId, stepSequence: sequence };

describe('PreparedStep phases and wire', () => {
  test('prepare plans every declared effect and strips them from the intent', () => {
    const prepared = PreparedStep.prepare(processId, sequence, state, Transition.continue(1, [call('a'), call('b')]));
    assert.deepEqual(
      prepared.effects().map((effect) => [effect.phase, effect.index, effect.id.toString()]),
      [
        ['planned', 0, idOf(0).toString()],
        ['planned', 1, idOf(1).toString()],
      ],
    );
    assert.equal(prepared.intent.effects.length, 0);
    assert.equal(prepared.intent.consumedSignals, 1);
    assert.equal(
      prepared.json(),
      '{"candidate_state":{"kind":"test.state","payload":{"candidate":true}},"effects":[' +
        '{"effect":{"payload":{"call":"a"},"target":"dispatcher"}},' +
        '{"effect":{"payload":{"call":"b"},"target":"dispatcher"}}],' +
        '"intent":{"consumed_signals":1,"kind":"continue"}}',
    );
  });

  test('the phase is derived from progress: none, empty, or with a settlement', () => {
    const prepared = step([
      { effect: call('a'), settlement: ok, diagnostic },
      { effect: call('b'), phase: 'pending' },
      { effect: call('c') },
    ]);
    const json = prepared.json();
    assert.ok(
      json.includes(
        '{"effect":{"payload":{"call":"a"},"target":"dispatcher"},"progress":{"diagnostic":' +
          diagnostic.json() +
          ',"settlement":{"payload":{"ok":true},"status":"succeeded"}}}',
      ),
    );
    assert.ok(json.includes('{"effect":{"payload":{"call":"b"},"target":"dispatcher"},"progress":{}}'));
    assert.ok(json.includes('{"effect":{"payload":{"call":"c"},"target":"dispatcher"}}'));
    const back = PreparedStep.parse(json, decodeOptions);
    assert.equal(back.json(), json);
    assert.deepEqual(
      back.effects().map((effect) => effect.phase),
      ['settled', 'pending', 'planned'],
    );
    assert.ok(back.effect(idOf(0))?.diagnostic?.equals(diagnostic));
  });

  test('framework settlements store only an optional failure and render their payload', () => {
    const signal = Effect.signalChild(ProcessId.parse('process:worker'), SignalRequest.create({ id: 'signal:s', payload: Payload.encode({}) }));
    const cancel = Effect.cancelChild(ProcessId.parse('process:worker'), 'no longer needed');
    const prepared = step([
      { effect: wait, phase: 'settled' },
      { effect: Effect.waitChildren(waitSpec), phase: 'settled' },
      { effect: signal, failure: childFailure },
      { effect: cancel, phase: 'settled' },
      { effect: startChild, failure: childFailure },
    ]);
    const json = prepared.json();
    assert.ok(json.includes('"progress":{"settlement":{}}'));
    assert.ok(json.includes(`"progress":{"settlement":{"failure":${childFailure.json()}}}`));
    const settlements = prepared.settlements();
    assert.deepEqual(
      settlements.map((settlement) => [settlement.status, settlement.payload.json()]),
      [
        ['succeeded', '{"operation":"wait"}'],
        ['succeeded', '{"operation":"child_wait_opened"}'],
        ['failed', `{"failure":${childFailure.json()},"operation":"signal_child"}`],
        ['succeeded', '{"operation":"cancel_child"}'],
        ['failed', `{"failure":${childFailure.json()},"operation":"start_child"}`],
      ],
    );
    assert.equal(PreparedStep.parse(json, decodeOptions).json(), json);
  });

  test('a started child is recorded as started_child and rendered from the tree', () => {
    const prepared = step([{ effect: startChild, phase: 'settled' }]);
    const effect = prepared.effects()[0];
    assert.equal(effect?.startedChildId?.toString(), ProcessId.child(idOf(0)).toString());
    assert.equal(
      effect?.settlement?.payload.json(),
      `{"operation":"start_child","process_id":"${ProcessId.child(idOf(0))}"}`,
    );
    const json = prepared.json();
    assert.ok(json.includes('{"progress":{"settlement":{}},"started_child":{"input":{"task":1}}}'));
    assert.ok(!json.includes('"effect":'));
    rejects(() => PreparedStep.parse(json, decodeOptions), 'invalid_snapshot', 'decodes only within its tree snapshot');
    const seen: Array<[string, string]> = [];
    const render: StartedChildRenderer = (effectId, input) => {
      seen.push([effectId.toString(), input.json()]);
      return startChild;
    };
    const back = PreparedStep.parse(json, { ...decodeOptions, renderStartedChild: render });
    assert.equal(back.json(), json);
    assert.deepEqual(seen, [[idOf(0).toString(), '{"task":1}']]);
    const failing: StartedChildRenderer = () => {
      throw new Error('no such child');
    };
    rejects(
      () => PreparedStep.parse(json, { ...decodeOptions, renderStartedChild: failing }),
      'invalid_snapshot',
      'does not match a captured child: no such child',
    );
  });

  test('frameworkSettlementPayload: waits cannot fail', () => {
    rejects(
      () => frameworkSettlementPayload(idOf(0), wait.frameworkOperation(), childFailure),
      'invalid_settlement',
      'settles without failure',
    );
  });

  test('accessors: unknown ids, frontier, settlements, pending flag', () => {
    const prepared = step([{ effect: call('a'), settlement: ok }, { effect: call('b'), settlement: unknown }, { effect: call('c') }]);
    assert.deepEqual(prepared.unknownEffectIds().map(String), [idOf(1).toString()]);
    assert.equal(prepared.frontier()?.index, 1);
    assert.equal(prepared.fullySettled, false);
    assert.equal(prepared.hasPendingEffect, false);
    assert.equal(prepared.settlements().length, 2);
    assert.equal(prepared.effectCount, 3);
    assert.deepEqual(prepared.effectIds().map(String), [0, 1, 2].map((index) => idOf(index).toString()));
    assert.equal(prepared.effect(EffectId.derive(processId, 9n, 0)), undefined);
    assert.ok(step([{ effect: call('a'), settlement: failed }]).fullySettled);
  });
});

describe('PreparedStep rules', () => {
  test('frontier: after a pending effect only planned effects may follow', () => {
    rejects(
      () => step([{ effect: call('a'), phase: 'pending' }, { effect: call('b'), settlement: ok }]),
      'invalid_snapshot',
      'effect 1 is settled succeeded behind an unsettled frontier',
    );
    rejects(
      () => step([{ effect: call('a'), phase: 'pending' }, { effect: call('b'), phase: 'pending' }]),
      'invalid_snapshot',
      'effect 1 is pending behind an unsettled frontier',
    );
  });

  test('frontier: an Unknown occupies the frontier', () => {
    rejects(
      () => step([{ effect: call('a'), settlement: unknown }, { effect: call('b'), settlement: ok }]),
      'invalid_snapshot',
      'behind an unsettled frontier',
    );
    rejects(
      () => step([{ effect: call('a'), settlement: unknown }, { effect: call('b'), settlement: unknown }]),
      'invalid_snapshot',
      'settled unknown behind',
    );
    assert.equal(step([{ effect: call('a'), settlement: unknown }, { effect: call('b') }]).effectCount, 2);
  });

  test('frontier: nothing but planned effects after a planned one', () => {
    rejects(
      () => step([{ effect: call('a') }, { effect: call('b'), settlement: ok }]),
      'invalid_snapshot',
      'behind an unsettled frontier',
    );
    rejects(() => step([{ effect: call('a') }, { effect: call('b'), phase: 'pending' }]), 'invalid_snapshot', 'pending behind');
  });

  test('effects are allowed only on a continue intent', () => {
    rejects(
      () => step([{ effect: call('a') }], Transition.checkpoint(0)),
      'invalid_snapshot',
      'effects are allowed only on a continue intent, not checkpoint',
    );
    assert.equal(step([], Transition.pause(0, 'pausing')).intent.kind, 'pause');
  });

  test("the intent's effects must equal the prepared effects", () => {
    rejects(
      () =>
        PreparedStep.create({
          processId,
          stepSequence: sequence,
          candidateState: state,
          intent: Transition.continue(0, [call('a')]),
          effects: [{ effect: call('b') }],
        }),
      'invalid_snapshot',
      "intent's effects differ",
    );
  });

  test('a dispatcher effect has a settlement exactly when settled', () => {
    rejects(() => step([{ effect: call('a'), phase: 'settled' }]), 'invalid_snapshot', 'exactly when settled');
    rejects(() => step([{ effect: call('a'), phase: 'pending', settlement: ok }]), 'invalid_snapshot', 'exactly when settled');
    rejects(() => step([{ effect: call('a'), failure: childFailure }]), 'invalid_snapshot', 'not a framework failure');
  });

  test('a diagnostic is kept only with a settlement, and never on framework effects', () => {
    rejects(() => step([{ effect: call('a'), phase: 'pending', diagnostic }]), 'invalid_snapshot', 'only with a settlement');
    rejects(() => step([{ effect: wait, phase: 'settled', diagnostic }]), 'invalid_snapshot', 'framework effects are never dispatched');
  });

  test('framework settlements: no explicit settlement, failure only when settled and only where an operation can fail', () => {
    rejects(() => step([{ effect: wait, settlement: ok }]), 'invalid_snapshot', 'rendered from the request');
    rejects(() => step([{ effect: startChild, phase: 'pending', failure: childFailure }]), 'invalid_snapshot', 'only when settled');
    rejects(() => step([{ effect: wait, failure: childFailure }]), 'invalid_snapshot', 'a wait effect settles without failure');
  });

  test('member types are checked', () => {
    rejects(() => step([{ effect: 'x' as unknown as Effect }]), 'invalid_snapshot', 'effect must be an Effect');
    rejects(
      () =>
        PreparedStep.create({
          processId,
          stepSequence: 0n,
          candidateState: state,
          intent: Transition.continue(0),
        }),
      'invalid_snapshot',
      'stepSequence must be a uint64 >= 1',
    );
  });
});

describe('PreparedStep strict decode', () => {
  const base = step([{ effect: call('a'), settlement: ok }, { effect: call('b'), phase: 'pending' }]).json();
  const mutate = (edit: (value: Record<string, any>) => void): string => {
    const value = JSON.parse(base) as Record<string, any>;
    edit(value);
    return JSON.stringify(value);
  };
  const cases: Array<[string, (value: Record<string, any>) => void, string]> = [
    ['unknown step member', (v) => (v.extra = 1), 'unknown member "extra"'],
    ['missing candidate_state', (v) => delete v.candidate_state, '/candidate_state is required'],
    ['missing intent', (v) => delete v.intent, '/intent is required'],
    ['missing effects', (v) => delete v.effects, '/effects is required'],
    ['effects repeated in the intent', (v) => (v.intent.effects = [v.effects[0].effect]), 'must not repeat the prepared effects'],
    ['unknown effect member', (v) => (v.effects[0].extra = 1), '/effects/0 has an unknown member "extra"'],
    ['unknown progress member', (v) => (v.effects[1].progress.extra = 1), '/effects/1/progress has an unknown member'],
    ['unknown settlement member', (v) => (v.effects[0].progress.settlement.extra = 1), 'settlement has an unknown member'],
    ['neither effect nor started_child', (v) => delete v.effects[0].effect, 'exactly one of effect or started_child'],
    ['both effect and started_child', (v) => (v.effects[0].started_child = { input: {} }), 'exactly one of effect or started_child'],
    ['settlement without status', (v) => delete v.effects[0].progress.settlement.status, 'status is required'],
    ['settlement without payload', (v) => delete v.effects[0].progress.settlement.payload, 'payload is required'],
    ['bad settlement status', (v) => (v.effects[0].progress.settlement.status = 'maybe'), 'must be one of succeeded, failed, unknown'],
    ['dispatcher settlement with failure', (v) => (v.effects[0].progress.settlement.failure = JSON.parse(childFailure.json())), 'unknown member "failure"'],
    ['diagnostic without settlement', (v) => (v.effects[1].progress.diagnostic = JSON.parse(diagnostic.json())), 'is kept only with a settlement'],
    ['frontier violation', (v) => (v.effects = [v.effects[1], v.effects[0]]), 'behind an unsettled frontier'],
    ['malformed effect', (v) => (v.effects[0].effect.target = 'elsewhere'), 'target must be one of'],
    ['malformed diagnostic', (v) => (v.effects[0].progress.diagnostic = { kind: 'external' }), 'diagnostic/code is required'],
  ];
  for (const [name, edit, fragment] of cases) {
    test(`rejects ${name}`, () => {
      rejects(() => PreparedStep.parse(mutate(edit), decodeOptions), 'invalid_snapshot', fragment);
    });
  }

  test('framework decode: status/payload not allowed; start_child success must be started_child; waits cannot fail', () => {
    const framework = step([{ effect: wait, phase: 'settled' }]).json();
    const value = JSON.parse(framework) as Record<string, any>;
    value.effects[0].progress.settlement.status = 'succeeded';
    rejects(() => PreparedStep.parse(JSON.stringify(value), decodeOptions), 'invalid_snapshot', 'unknown member "status"');
    value.effects[0].progress.settlement = { failure: JSON.parse(childFailure.json()) };
    rejects(() => PreparedStep.parse(JSON.stringify(value), decodeOptions), 'invalid_snapshot', 'a wait effect cannot fail');
    value.effects[0] = { effect: JSON.parse(startChild.json()), progress: { settlement: {} } };
    rejects(() => PreparedStep.parse(JSON.stringify(value), decodeOptions), 'invalid_snapshot', 'recorded as started_child');
    value.effects[0] = { started_child: { input: {} } };
    rejects(() => PreparedStep.parse(JSON.stringify(value), decodeOptions), 'invalid_snapshot', 'must be settled');
    value.effects[0] = { started_child: { input: {}, extra: 1 }, progress: { settlement: {} } };
    rejects(() => PreparedStep.parse(JSON.stringify(value), decodeOptions), 'invalid_snapshot', 'unknown member "extra"');
    value.effects[0] = { started_child: { input: {} }, progress: { settlement: { failure: JSON.parse(childFailure.json()) } } };
    rejects(() => PreparedStep.parse(JSON.stringify(value), decodeOptions), 'invalid_snapshot', 'unknown member "failure"');
  });

  test('a caller-supplied code is used for nested rejections', () => {
    rejects(
      () => PreparedStep.parse(mutate((v) => (v.effects[0].effect.target = 'x')), { ...decodeOptions, code: 'invalid_tree_snapshot' }),
      'invalid_tree_snapshot',
      'target',
    );
  });
});

describe('PreparedStep transitions', () => {
  const planned = PreparedStep.prepare(processId, sequence, state, Transition.continue(0, [call('a'), wait, call('c')]));

  test('dispatcher: planned → pending → settled, in declaration order', () => {
    const pending = planned.withPending(idOf(0));
    assert.equal(pending.effect(idOf(0))?.phase, 'pending');
    const settled = pending.withSettlement(idOf(0), ok);
    assert.equal(settled.effect(idOf(0))?.phase, 'settled');
    assert.ok(settled.effect(idOf(0))?.settlement?.equals(ok));
    const framework = settled.withFrameworkSettlement(idOf(1));
    assert.equal(framework.frontier()?.index, 2);
  });

  test('only the frontier may progress', () => {
    rejects(() => planned.withPending(idOf(2)), 'invalid_snapshot', 'is not at the frontier');
    rejects(() => planned.withPending(EffectId.derive(processId, 1n, 0)), 'invalid_snapshot', 'is not prepared');
  });

  test('a planned dispatcher effect cannot settle (nor become Unknown) without dispatch permission', () => {
    rejects(() => planned.withSettlement(idOf(0), unknown), 'invalid_snapshot', 'is planned, not pending');
    rejects(() => planned.withPending(idOf(0)).withPending(idOf(0)), 'invalid_snapshot', 'is pending, not planned');
  });

  test('targets are respected', () => {
    const atWait = planned.withPending(idOf(0)).withSettlement(idOf(0), ok);
    rejects(() => atWait.withSettlement(idOf(1), ok), 'invalid_snapshot', 'is a framework effect');
    rejects(() => planned.withFrameworkSettlement(idOf(0)), 'invalid_snapshot', 'is a dispatcher effect');
  });

  test('an Unknown blocks the frontier until resolved; resolution keeps the diagnostic', () => {
    const uncertain = planned.withPending(idOf(0)).withSettlement(idOf(0), unknown, diagnostic);
    assert.deepEqual(uncertain.unknownEffectIds().map(String), [idOf(0).toString()]);
    assert.equal(uncertain.frontier()?.index, 0);
    rejects(() => uncertain.withFrameworkSettlement(idOf(1)), 'invalid_snapshot', 'not at the frontier');
    rejects(() => uncertain.withResolution(idOf(0), unknown), 'invalid_snapshot', 'needs a definite settlement');
    const resolved = uncertain.withResolution(idOf(0), failed);
    assert.equal(resolved.effect(idOf(0))?.settlement?.status, 'failed');
    assert.ok(resolved.effect(idOf(0))?.diagnostic?.equals(diagnostic));
    rejects(() => resolved.withResolution(idOf(0), ok), 'invalid_snapshot', 'is not settled Unknown');
  });

  test('adoptionRecords: openings for waits, settlements (with status for dispatcher) otherwise', () => {
    rejects(() => planned.adoptionRecords(), 'invalid_snapshot', 'is not definitely settled');
    const done = planned
      .withPending(idOf(0))
      .withSettlement(idOf(0), ok)
      .withFrameworkSettlement(idOf(1))
      .withPending(idOf(2))
      .withSettlement(idOf(2), failed);
    const records = done.adoptionRecords();
    assert.deepEqual(
      records.map((record) => [record.kind, record.id.toString(), record.status]),
      [
        ['settlement', SignalId.settlement(idOf(0)).toString(), 'succeeded'],
        ['wait_opening', SignalId.waitOpened(WaitId.derive(idOf(1))).toString(), undefined],
        ['settlement', SignalId.settlement(idOf(2)).toString(), 'failed'],
      ],
    );
    const withChildren = PreparedStep.prepare(processId, sequence, state, Transition.continue(0, [Effect.waitChildren(waitSpec), startChild]))
      .withFrameworkSettlement(idOf(0))
      .withFrameworkSettlement(idOf(1));
    const [opening, settlement] = withChildren.adoptionRecords();
    assert.equal(opening?.opens?.kind, 'children');
    assert.equal(settlement?.status, undefined);
    assert.equal(settlement?.payload?.json(), `{"operation":"start_child","process_id":"${ProcessId.child(idOf(1))}"}`);
  });
});
