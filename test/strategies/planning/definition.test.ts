/**
 * The planning Definition without a Host: the Definition conformance suite over its fixtures (every
 * phase: sense, plan, delegate to a child, wait for its drained subtree, confirm, complete), and the
 * Step-level rules the engine tests do not reach: a sensor failure, a malformed world, a drained
 * subtree with unresolved effects, a child that ended without completing, eager action validation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningDefinition, type PlanningActionSpec } from '../../../strategies/planning/definition.js';
import { goapPlanner } from '../../../strategies/planning/goap/planner.js';
import { PlanningValueError } from '../../../strategies/planning/world.js';
import { echoDefinition } from '../../../strategies/demo/echo.js';
import { Budget } from '../../../src/kernel/budget.js';
import type { Execution } from '../../../src/kernel/definition.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import { EffectId, ProcessId, SignalId, WaitId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Quota } from '../../../src/kernel/quota.js';
import type { SettlementStatus } from '../../../src/kernel/settlement.js';
import { Signal } from '../../../src/kernel/signal.js';
import type { Transition } from '../../../src/kernel/transition.js';
import { echoDispatcher } from '../../../src/server/demo-dispatchers.js';
import { runDefinitionConformance } from '../../../src/testing/definition-conformance.js';

const kind = 'test.planning.conformance';
const parent = ProcessId.parse('process:planner');
const helper = Deployment.create({
  definition: echoDefinition,
  dispatcher: echoDispatcher(),
  implementationDigest: Digest.of('test:planning:conformance-helper'),
  configurationDigest: Digest.of('test:planning:conformance-helper'),
});
const budget = Budget.of({ steps: Quota.of(8), effects: Quota.of(4), signals: Quota.of(16) });
const actions: PlanningActionSpec[] = [
  { name: 'ask_helper', effects: { asked: true }, cost: 1, execution: { kind: 'delegate', deployment: helper, input: { value: 'please' }, budget } },
  { name: 'do_it_myself', effects: { asked: true }, cost: 10, execution: { kind: 'dispatch' } },
];
const definition = planningDefinition({ name: kind, description: 'asks a helper child, or does it itself', actions, planner: goapPlanner(), maxRounds: 4 });

const effect = (step: number): EffectId => EffectId.derive(parent, BigInt(step), 0);
const settled = (step: number, status: SettlementStatus, payload: unknown): Signal => Signal.create({ id: SignalId.settlement(effect(step)), status, payload: Payload.encode(payload) });
const world = (step: number, facts: Record<string, unknown>): Signal => settled(step, 'succeeded', { world: facts });
const child = ProcessId.child(effect(2)).toString();
const started = Signal.create({ id: SignalId.settlement(effect(2)), payload: Payload.encode({ operation: 'start_child', process_id: child }) });
const waitId = WaitId.derive(effect(3));
const opened = Signal.create({ id: SignalId.waitOpened(waitId), waitId, payload: Payload.encode({ operation: 'child_wait_opened' }) });
function drained(status: string, unresolved: unknown[] = []): Signal {
  return Signal.create({
    id: SignalId.childWaitSatisfied(waitId),
    waitId,
    payload: Payload.encode({ operation: 'child_wait_satisfied', outcomes: [{ result: { process_id: child, termination: { status } }, subtree_unresolved_effects: unresolved }] }),
  });
}

const goal = { asked: true };
const round = (outcome: string, action = 'ask_helper', plan = ['ask_helper']) => ({ round: 1, plan, action, outcome });
const state = (phase: string, extra: Record<string, unknown> = {}) => ExecutionState.encode(kind, { phase, goal, maxRounds: 4, excluded: [], rounds: [round('pending')], ...extra });

runDefinitionConformance('planning', {
  definition,
  input: Payload.encode({ goal }),
  initialSignals: [],
  followingSignals: [[world(1, { asked: false })], [started], [opened], [drained('completed')], [world(5, { asked: true })]],
  restoredCases: [
    { name: 'waiting, the subtree drained with an unresolved effect', state: state('waiting', { child, waitId: waitId.toString() }), signals: [drained('completed', [{ process_id: child, effect_id: EffectId.derive(ProcessId.parse(child), 1n, 0).toString() }])] },
    { name: 'sensing, a reported action not confirmed', state: state('sensing', { rounds: [round('reported')] }), signals: [world(5, { asked: false })], followingSignals: [[settled(6, 'succeeded', {})], [world(7, { asked: true })]] },
    { name: 'acting, the action failed', state: state('acting', { rounds: [round('pending', 'do_it_myself', ['do_it_myself'])] }), signals: [settled(2, 'failed', { error: 'no' })], followingSignals: [[world(3, { asked: false })]] },
  ],
  rejectedCases: [
    { name: 'sensing without the sensor settlement', state: ExecutionState.encode(kind, { phase: 'sensing', goal, maxRounds: 4, excluded: [], rounds: [] }), signals: [], failureKind: 'contract', failureCode: 'planning.missing_settlement' },
    { name: 'starting without the start result', state: state('starting'), signals: [world(2, {})], failureKind: 'contract', failureCode: 'planning.missing_settlement' },
    { name: 'opening without the wait opening', state: state('opening', { child }), signals: [], failureKind: 'contract', failureCode: 'planning.missing_wait' },
  ],
});

/** One Step of a restored execution. */
function stepFrom(encoded: ExecutionState, signals: readonly Signal[]): Transition {
  return (definition.restore(encoded, new AbortController().signal) as Execution).step(new AbortController().signal, signals) as Transition;
}

function failureOf(transition: Transition): { kind: string; code: string; message: string } {
  assert.equal(transition.kind, 'fail');
  const failure = transition.failure;
  assert.ok(failure !== undefined);
  return { kind: failure.kind, code: failure.code, message: failure.message };
}

test('a drained subtree with unresolved effects fails the process with planning.subtree_unresolved', () => {
  const unresolved = [{ process_id: child, effect_id: EffectId.derive(ProcessId.parse(child), 1n, 0).toString() }];
  const failure = failureOf(stepFrom(state('waiting', { child, waitId: waitId.toString() }), [drained('completed', unresolved)]));
  assert.equal(failure.code, 'planning.subtree_unresolved');
  assert.equal(failure.kind, 'external');
  // Without unresolved effects the same answer is a reported success: the next Effect is a sensing.
  const next = stepFrom(state('waiting', { child, waitId: waitId.toString() }), [drained('completed')]);
  assert.equal(next.kind, 'continue');
  assert.deepEqual(next.effects[0]?.payload.decode(), { operation: 'planning.sense', round: 1 });
});

test('a child that did not complete is a failed attempt; a sensed world then plans without it', () => {
  const after = definition.restore(state('waiting', { child, waitId: waitId.toString() }), new AbortController().signal) as Execution;
  const sensing = after.step(new AbortController().signal, [drained('failed')]) as Transition;
  assert.equal(sensing.kind, 'continue');
  const acted = after.step(new AbortController().signal, [world(5, { asked: false })]) as Transition;
  assert.deepEqual(acted.effects[0]?.payload.decode(), { operation: 'planning.act', action: 'do_it_myself', round: 2, predicted: { asked: true } });
  const snapshot = after.snapshot().decode<{ excluded: string[]; rounds: { outcome: string; reason?: string }[] }>(kind);
  assert.deepEqual(snapshot.excluded, ['ask_helper']);
  assert.equal(snapshot.rounds[0]?.outcome, 'failed');
  assert.match(snapshot.rounds[0]?.reason ?? '', /the child ended failed/);
});

test('a failed sensor fails the process (planning.sensor_failed); a malformed world too (planning.invalid_world)', () => {
  const sensing = ExecutionState.encode(kind, { phase: 'sensing', goal, maxRounds: 4, excluded: [], rounds: [] });
  const sensor = failureOf(stepFrom(sensing, [settled(1, 'failed', { error: { code: 'camera.offline', message: 'no picture' } })]));
  assert.deepEqual([sensor.kind, sensor.code], ['external', 'planning.sensor_failed']);
  assert.match(sensor.message, /camera\.offline: no picture/);
  for (const payload of [{}, { world: [] }, { world: { Bad: true } }, { world: { x: 1.5 } }, { world: { x: null } }]) {
    const invalid = failureOf(stepFrom(sensing, [settled(1, 'succeeded', payload)]));
    assert.deepEqual([invalid.kind, invalid.code], ['contract', 'planning.invalid_world'], JSON.stringify(payload));
  }
});

test('actions are validated when the Definition is built: costs finite and non-negative, names distinct, rounds bounded', () => {
  const build = (specs: PlanningActionSpec[], maxRounds = 4) => () => planningDefinition({ name: kind, description: 'x', actions: specs, planner: goapPlanner(), maxRounds });
  const dispatch = { kind: 'dispatch' } as const;
  for (const cost of [Number.NaN, Number.POSITIVE_INFINITY, -1]) {
    assert.throws(build([{ name: 'a', effects: { x: true }, cost, execution: dispatch }]), (error: unknown) => error instanceof PlanningValueError && error.code === 'planning.invalid_action');
  }
  assert.throws(build([{ name: 'a', effects: { x: true }, cost: 1, execution: dispatch }, { name: 'a', effects: { y: true }, cost: 1, execution: dispatch }]), /declared twice/);
  assert.throws(build([], 0), (error: unknown) => error instanceof PlanningValueError && error.code === 'planning.invalid_budget');
  assert.throws(build([], 257), /maxRounds/);
});

test('restore is strict: a running phase needs a pending round, a sensing has none, unknown actions and members are refused', () => {
  const bad = [
    { phase: 'acting', goal, maxRounds: 4, excluded: [], rounds: [] },
    { phase: 'sensing', goal, maxRounds: 4, excluded: [], rounds: [round('pending')] },
    { phase: 'sensing', goal, maxRounds: 4, excluded: ['fly'], rounds: [] },
    { phase: 'sensing', goal, maxRounds: 4, excluded: [], rounds: [round('confirmed', 'fly')] },
    { phase: 'sensing', goal, maxRounds: 4, excluded: [], rounds: [], extra: 1 },
    { phase: 'waiting', goal, maxRounds: 4, excluded: [], rounds: [round('pending')], child },
  ];
  for (const value of bad) {
    assert.throws(() => definition.restore(ExecutionState.encode(kind, value), new AbortController().signal), /invalid test\.planning\.conformance state/, JSON.stringify(value));
  }
});
