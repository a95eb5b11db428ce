import { echoDefinition } from '../../../strategies/demo/echo.js';
import { deadlineDefinition } from '../../../strategies/coordination/deadline.js';
import { firstSuccessDefinition, type SuccessPredicate } from '../../../strategies/coordination/first-success.js';
import { inputGateDefinition } from '../../../strategies/coordination/input-gate.js';
import { Deployment, type Definition, Digest, type Dispatcher, EffectId, ExecutionState, Payload, ProcessId, Schema, Signal, SignalId, WaitId } from '../../../src/kernel/index.js';
import { childWaitOpenedPayload, waitOpenedPayload } from '../../../src/kernel/mailbox.js';
import type { SettlementStatus } from '../../../src/kernel/settlement.js';
import { echoDispatcher } from '../../../src/server/demo-dispatchers.js';

/** Shared fixtures of the coordination tests: small Definitions and hand-built Engine Signals. */

export const pid = ProcessId.parse('process:coordination-test');
export const effectAt = (step: number, index = 0): EffectId => EffectId.derive(pid, BigInt(step), index);
export const childAt = (step: number, index = 0): ProcessId => ProcessId.child(effectAt(step, index));
export const waitAt = (step: number): WaitId => WaitId.derive(effectAt(step));

export const settlement = (effect: EffectId, status: SettlementStatus, payload: unknown): Signal =>
  Signal.create({ id: SignalId.settlement(effect), status, payload: Payload.encode(payload) });
export const opening = (wait: WaitId): Signal => Signal.create({ id: SignalId.waitOpened(wait), waitId: wait, payload: waitOpenedPayload });
export const childOpening = (wait: WaitId): Signal => Signal.create({ id: SignalId.waitOpened(wait), waitId: wait, payload: childWaitOpenedPayload });
export const answer = (id: string, wait: WaitId, payload: unknown): Signal =>
  Signal.create({ id: SignalId.parseExternal(id), waitId: wait, payload: Payload.encode(payload) });
export const unaddressed = (id: string, payload: unknown): Signal => Signal.create({ id: SignalId.parseExternal(id), payload: Payload.encode(payload) });
export const state = (kind: string, value: unknown): ExecutionState => ExecutionState.encode(kind, value);

export function deployment(name: string, definition: Definition, dispatcher?: Dispatcher): Deployment {
  return Deployment.create({
    definition,
    dispatcher,
    implementationDigest: Digest.of(`test:${name}:implementation`),
    configurationDigest: Digest.of(`test:${name}:configuration`),
  });
}

export const gateAnswerSchema = Schema.of({
  type: 'object',
  properties: { approved: { type: 'boolean' }, comment: { type: 'string' } },
  required: ['approved'],
  additionalProperties: false,
});

export const gateDefinition = inputGateDefinition({
  name: 'test.coordination.gate',
  description: 'A test gate.',
  requestSchema: Schema.of({ type: 'object', properties: { question: { type: 'string' } }, required: ['question'], additionalProperties: false }),
  answerSchema: gateAnswerSchema,
});

export const deadlineTestDefinition = deadlineDefinition({ name: 'test.coordination.deadline', description: 'A test deadline.' });

export const echo = deployment('demo.echo', echoDefinition, echoDispatcher());

/** Accepts every completed candidate except one whose output is `{value: "reject"}`. */
export const notReject: SuccessPredicate = ({ output }) => (output as { value?: unknown } | undefined)?.value !== 'reject';

export function competition(deployments: readonly Deployment[] = [echo], accept: SuccessPredicate = notReject, name = 'test.coordination.first-success'): Definition {
  return firstSuccessDefinition({ name, description: 'A test competition.', maxCandidates: 4, accept, deployments });
}

export const smallBudget = { steps: 8, effects: 4, signals: 16 };

/** A child-wait answer reporting `results` (process id, status, output or failure code), in order. */
export function childAnswer(wait: WaitId, results: ReadonlyArray<{ id: ProcessId; output?: unknown; failure?: string }>): Signal {
  const outcomes = results.map(({ id, output, failure }) => ({
    result: {
      process_id: id.toString(),
      started_at: '2026-12-01T00:00:00Z',
      finished_at: '2026-12-01T00:00:01Z',
      ...(failure === undefined ? { output } : {}),
      termination:
        failure === undefined
          ? { status: 'completed', cause: 'completion' }
          : { status: 'failed', cause: 'external_failure', reason: 'it failed', failure: { kind: 'external', code: failure, message: 'it failed' } },
      usage: { committed_steps: 2, prepared_effects: 1, accepted_signals: 1 },
    },
  }));
  return Signal.create({ id: SignalId.childWaitSatisfied(wait), waitId: wait, payload: Payload.encode({ operation: 'child_wait_satisfied', outcomes }) });
}

/** A Framework Effect's settlement: engine-owned, no status (that is only on Dispatcher settlements). */
export const receipt = (effect: EffectId, payload: unknown): Signal => Signal.create({ id: SignalId.settlement(effect), payload: Payload.encode(payload) });
export const startResult = (step: number, index: number): Signal =>
  receipt(effectAt(step, index), { operation: 'start_child', process_id: childAt(step, index).toString() });
export const startRefused = (step: number, index: number, code: string): Signal =>
  receipt(effectAt(step, index), { operation: 'start_child', failure: { kind: 'external', code, message: 'refused' } });
export const cancelReceipt = (step: number, index: number): Signal => receipt(effectAt(step, index), { operation: 'cancel_child' });
