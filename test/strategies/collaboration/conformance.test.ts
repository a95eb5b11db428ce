/**
 * The collaboration Definition against the kernel's Definition conformance suite (determinism,
 * hidden mutable input, shared state, lossy restore, per-batch validation, rejected steps), over
 * windows shaped exactly like the Engine's: start receipts, watch openings and child-wait answers.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collaborationDefinition } from '../../../strategies/collaboration/collaboration.js';
import { coordinatorDefinition } from '../../../strategies/collaboration/coordinator.js';
import type { Decision, Turn } from '../../../strategies/collaboration/schemas.js';
import { collaborationStateKind } from '../../../strategies/collaboration/state.js';
import { CapabilitySet } from '../../../src/kernel/capability.js';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import { EffectId, ProcessId, SignalId, WaitId } from '../../../src/kernel/identity.js';
import { childWaitOpenedPayload } from '../../../src/kernel/mailbox.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Signal } from '../../../src/kernel/signal.js';
import { runDefinitionConformance } from '../../../src/testing/definition-conformance.js';
import { deployment, echoWorker, grant, outputSchema, stateSchema, worker } from './harness.js';

const root = ProcessId.parse('process:collaboration');
const effect = (step: number, index = 0): EffectId => EffectId.derive(root, BigInt(step), index);
const child = (step: number, index = 0): string => ProcessId.child(effect(step, index)).toString();
const waitOf = (step: number): WaitId => WaitId.derive(effect(step));

const started = (step: number, index = 0): Signal =>
  Signal.create({ id: SignalId.settlement(effect(step, index)), payload: Payload.encode({ operation: 'start_child', process_id: child(step, index) }) });
const refused = (step: number, index = 0): Signal =>
  Signal.create({
    id: SignalId.settlement(effect(step, index)),
    payload: Payload.encode({ operation: 'start_child', failure: { kind: 'contract', code: 'engine.child.input.invalid', message: 'bad input' } }),
  });
const controlled = (step: number, index: number, operation: string, failed = false): Signal =>
  Signal.create({
    id: SignalId.settlement(effect(step, index)),
    payload: Payload.encode(failed ? { operation, failure: { kind: 'execution', code: 'engine.child.signal.rejected', message: 'no' } } : { operation }),
  });
const opening = (step: number): Signal => Signal.create({ id: SignalId.waitOpened(waitOf(step)), waitId: waitOf(step), payload: childWaitOpenedPayload });

interface Outcome {
  readonly processId: string;
  readonly status: string;
  readonly output?: unknown;
  readonly failure?: unknown;
}
const answer = (step: number, outcomes: readonly Outcome[]): Signal =>
  Signal.create({
    id: SignalId.childWaitSatisfied(waitOf(step)),
    waitId: waitOf(step),
    payload: Payload.encode({
      operation: 'child_wait_satisfied',
      outcomes: outcomes.map((outcome) => ({
        result: {
          process_id: outcome.processId,
          started_at: '2026-12-01T00:00:00Z',
          finished_at: '2026-12-01T00:00:01Z',
          ...(outcome.output === undefined ? {} : { output: outcome.output }),
          termination: { status: outcome.status, cause: outcome.status === 'completed' ? 'completion' : 'external_failure', ...(outcome.failure === undefined ? {} : { failure: outcome.failure }) },
          usage: { accepted_signals: 1, committed_steps: 2, dropped_deltas: 0, prepared_effects: 1 },
        },
        subtree_unresolved_effects: [],
      })),
    }),
  });

const decisions: Record<number, Decision> = {
  1: { mode: 'continue', state: { round: 1 }, tasks: [{ key: 'a', worker: 'demo.echo', input: { value: 'a' } }] },
  2: { mode: 'complete', state: { round: 2 }, output: { done: true } },
};
const coordinator = deployment(
  'test.coordinator',
  coordinatorDefinition({ name: 'test.coordinator', description: 'Scripted.', decide: (turn: Turn) => decisions[turn.number] ?? { mode: 'wait', state: {} } }),
);
const definition = collaborationDefinition({
  name: 'test.collaboration',
  description: 'A collaboration under the conformance suite.',
  coordinator: worker(coordinator),
  workers: [{ deployment: echoWorker(), budget: grant(), capabilities: CapabilitySet.empty }],
  stateSchema,
  outputSchema,
  maxTurns: Quota.of(8),
  maxTasks: Quota.of(4),
  maxConcurrentTasks: 2,
  maxControlsPerTurn: 2,
});

const task = (key: string, start: unknown, outcome?: unknown) => ({
  request: { key, worker: 'demo.echo', input: { value: key } },
  ...(start === undefined ? {} : { start }),
  ...(outcome === undefined ? {} : { outcome }),
});
const base = { turn: 2, state: {}, tasks: [], controls: [], attempts: 0, watches: 1, unseen: 0, pending: [] };
const state = (value: Record<string, unknown>): ExecutionState => ExecutionState.encode(collaborationStateKind, { ...base, ...value });

runDefinitionConformance('collaboration', {
  definition,
  input: Payload.encode({ topic: 'x' }),
  initialSignals: [],
  followingSignals: [
    // Step 2: turn 1 started; step 3: its watch opened and answered at once with its Decision.
    [started(1)],
    [opening(2), answer(2, [{ processId: child(1), status: 'completed', output: decisions[1] }])],
    // Step 4: task a started; the Decision was continue, so turn 2 starts.
    [started(3)],
    [started(4)],
    // Step 6: the watch over turn 2 and task a opens; a drains first, then turn 2 completes.
    [opening(5)],
    [answer(5, [{ processId: child(3), status: 'completed', output: { value: 'a' } }])],
    [opening(7), answer(7, [{ processId: child(4), status: 'completed', output: decisions[2] }])],
  ],
  restoredCases: [
    {
      name: 'watching a turn and a task',
      state: state({ phase: 'watching', turnChild: child(4), watch: waitOf(5).toString(), tasks: [task('a', { processId: child(3) })], attempts: 1 }),
      signals: [answer(5, [{ processId: child(4), status: 'completed', output: { mode: 'wait', state: {} } }, { processId: child(3), status: 'failed', failure: { kind: 'external', code: 'demo.echo.failed', message: 'x' } }])],
    },
    {
      name: 'acting on starts and controls',
      state: state({
        phase: 'acting',
        mode: 'wait',
        tasks: [task('a', { processId: child(3) }), task('b', undefined), task('c', undefined)],
        controls: [{ control: { task: 'a', signal: { id: 'nudge', payload: {} } } }],
        attempts: 3,
        pending: [{ task: 1 }, { task: 2 }, { control: 0 }],
      }),
      signals: [started(6, 0), refused(6, 1), controlled(6, 2, 'signal_child', true)],
      followingSignals: [[opening(7)]],
    },
    {
      name: 'completing',
      state: state({ phase: 'completing', output: { done: true }, tasks: [task('a', { processId: child(3) })], attempts: 1, pending: [{ cancel: child(3) }] }),
      signals: [controlled(6, 0, 'cancel_child')],
    },
  ],
  rejectedCases: [
    {
      name: 'a turn start without its receipt',
      state: state({ phase: 'turn_starting' }),
      signals: [opening(5)],
      failureKind: 'contract',
      failureCode: 'collaboration.protocol.invalid',
    },
    {
      name: 'an answer about a child the watch did not await',
      state: state({ phase: 'watching', turnChild: child(4), watch: waitOf(5).toString() }),
      signals: [answer(5, [{ processId: child(9), status: 'completed', output: {} }])],
      failureKind: 'contract',
      failureCode: 'collaboration.protocol.invalid',
    },
  ],
});

test('restore refuses a state that breaks the phase invariants', () => {
  const broken: Record<string, Record<string, unknown>> = {
    'acting without receipts pending': { phase: 'acting', mode: 'wait' },
    'acting without a mode': { phase: 'acting', tasks: [task('a', undefined)], attempts: 1, pending: [{ task: 0 }] },
    'watching without the watch': { phase: 'watching' },
    'a pending receipt for a task that does not exist': { phase: 'acting', mode: 'wait', pending: [{ task: 3 }] },
    'completing without the output': { phase: 'completing', pending: [{ cancel: child(3) }] },
    'more attempts than tasks': { phase: 'turn_starting', attempts: 1 },
    'an unknown member': { phase: 'turn_starting', extra: true },
  };
  for (const [name, value] of Object.entries(broken)) {
    assert.throws(() => definition.restore(state(value), new AbortController().signal), /invalid collaboration\.state state/, name);
  }
});
