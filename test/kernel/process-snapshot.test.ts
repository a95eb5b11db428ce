import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import { Digest } from '../../src/kernel/digest.js';
import { Effect } from '../../src/kernel/effect.js';
import { KernelError } from '../../src/kernel/errors.js';
import { Failure } from '../../src/kernel/failure.js';
import { ChildKey, EffectId, ProcessId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Mailbox, MailboxRecord } from '../../src/kernel/mailbox.js';
import { Payload } from '../../src/kernel/payload.js';
import { PreparedStep } from '../../src/kernel/prepared-step.js';
import {
  PendingControl,
  ProcessSnapshot,
  type ProcessSnapshotCreateOptions,
} from '../../src/kernel/process-snapshot.js';
import { Quota } from '../../src/kernel/quota.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import { Settlement } from '../../src/kernel/settlement.js';
import { Termination } from '../../src/kernel/termination.js';
import { TreeLimits } from '../../src/kernel/tree-limits.js';
import { Transition } from '../../src/kernel/transition.js';
import {
  fixtureDispatcherEffect,
  fixtureFinishedAt,
  fixtureMailbox,
  fixturePreparedStep,
  fixtureProcessId,
  fixtureSignalRequest,
  fixtureState,
  interruptedRootTree,
  parkedRootTree,
  rootProcessFields,
  rootWithPreparedEffect,
  runningRootTree,
  terminalRootTree,
} from '../../src/testing/snapshot-fixtures.js';

const rejects = (run: () => unknown, code: string, fragment: string): void => {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof KernelError, `expected a KernelError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.ok(error.message.includes(fragment), `"${error.message}" should mention "${fragment}"`);
    return true;
  });
};

const rootId = fixtureProcessId('root');
const base = (): ProcessSnapshotCreateOptions => rootProcessFields({ committedSteps: 2n, consumedSignals: 1, pendingSignals: 2 });
const make = (overrides: Partial<ProcessSnapshotCreateOptions>): ProcessSnapshot => ProcessSnapshot.create({ ...base(), ...overrides });
const invalid = (overrides: Partial<ProcessSnapshotCreateOptions>, fragment: string): void =>
  rejects(() => make(overrides), 'invalid_snapshot', fragment);

const completed = {
  status: 'completed' as const,
  finishedAt: fixtureFinishedAt,
  output: Payload.encode({ done: true }),
  termination: Termination.completed(),
};
const failure = Failure.create('execution', 'test.failed', 'the test failed');
const failedFields = { status: 'failed' as const, finishedAt: fixtureFinishedAt, termination: Termination.failed(failure) };
const effectId = (index = 0): EffectId => EffectId.derive(rootId, 3n, index);
const waitId = WaitId.derive(EffectId.derive(rootId, 2n, 0));
const opening = MailboxRecord.waitOpening(waitId, { kind: 'external', key: WaitKey.parse('approval') });
const waitingMailbox = fixtureMailbox(rootId.toString(), 1, 0).append(opening).consume(1);
const childId = ProcessId.parse('process:child-1');
const childRelation = ProcessRelation.child(childId, ProcessRelation.root(rootId), ChildKey.parse('worker'));

describe('ProcessSnapshot round trips and accessors', () => {
  const fixtures = {
    running: runningRootTree({ pendingSignals: 2, consumedSignals: 3, committedSteps: 4n }),
    waiting: parkedRootTree(),
    paused: parkedRootTree({ parked: 'paused', pendingSignals: 1 }),
    completed: terminalRootTree(),
    planned: rootWithPreparedEffect('planned'),
    pending: rootWithPreparedEffect('pending'),
    settled: rootWithPreparedEffect('settled'),
    unknown: rootWithPreparedEffect('settled', 'unknown'),
    interrupted: interruptedRootTree(),
  };
  for (const [name, tree] of Object.entries(fixtures)) {
    test(`${name}: parse(json()) reproduces the canonical record`, () => {
      const process = tree.root;
      const back = ProcessSnapshot.parse(process.json());
      assert.equal(back.json(), process.json());
      assert.ok(back.equals(process));
      assert.equal(back.digest().toString(), process.digest().toString());
      assert.equal(back.encodedSize, Buffer.byteLength(process.json()));
    });
  }

  test('member order and whitespace in the input do not change the canonical record', () => {
    const process = rootWithPreparedEffect('settled', 'unknown').root;
    const reversed = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(reversed);
      if (value !== null && typeof value === 'object') {
        return Object.fromEntries(Object.entries(value).reverse().map(([key, item]) => [key, reversed(item)]));
      }
      return value;
    };
    const text = JSON.stringify(reversed(JSON.parse(process.json())), null, 2);
    assert.notEqual(text, process.json());
    assert.equal(ProcessSnapshot.parse(text).json(), process.json());
  });

  test('usage derives from committed steps, counters and the mailbox length', () => {
    const process = runningRootTree({ pendingSignals: 2, consumedSignals: 3, committedSteps: 4n, preparedEffects: 5n }).root;
    assert.equal(
      process.usage().json(),
      '{"accepted_signals":5,"committed_steps":4,"dropped_deltas":0,"prepared_effects":5}',
    );
    assert.equal(process.signalReceipts().length, 5);
    assert.equal(process.signalReceipts().filter((receipt) => receipt.consumed).length, 3);
    assert.equal(process.isTerminal, false);
    assert.equal(process.result(), undefined);
    assert.equal(process.relation.depth, 0);
    assert.equal(process.processId.toString(), rootId.toString());
  });

  test('waitId and waitKind report the current wait, also while paused', () => {
    const waiting = parkedRootTree().root;
    assert.equal(waiting.status, 'waiting');
    assert.equal(waiting.waitKind, 'external');
    assert.ok(waiting.waitId);
    const paused = parkedRootTree({ parked: 'paused' }).root;
    assert.equal(paused.waitKind, 'external');
    assert.equal(paused.pauseReason, 'paused by the fixture');
    assert.equal(runningRootTree().root.waitKind, undefined);
  });

  test('the prepared step accessors expose phases, settlements, diagnostics and unknown ids', () => {
    const unknown = rootWithPreparedEffect('settled', 'unknown').root;
    const id = EffectId.derive(rootId, 1n, 0);
    assert.equal(unknown.effectPhase(id), 'settled');
    assert.equal(unknown.effectSettlement(id)?.status, 'unknown');
    assert.equal(unknown.effectDiagnostic(id)?.code, 'engine.dispatch.failed');
    assert.deepEqual(unknown.unknownEffectIds().map(String), [id.toString()]);
    assert.equal(unknown.settlements().length, 1);
    assert.equal(unknown.effectPhase(EffectId.derive(rootId, 9n, 0)), undefined);
    assert.equal(rootWithPreparedEffect('pending').root.effectPhase(id), 'pending');
    assert.equal(rootWithPreparedEffect('planned').root.effectSettlement(id), undefined);
    assert.deepEqual(runningRootTree().root.unknownEffectIds(), []);
  });

  test('result() of a terminal process', () => {
    const done = terminalRootTree({ output: Payload.encode({ answer: 42 }) }).root;
    const result = done.result();
    assert.equal(result?.status, 'completed');
    assert.equal(result?.output?.json(), '{"answer":42}');
    assert.equal(result?.finishedAt, fixtureFinishedAt);
    assert.equal(result?.usage.json(), done.usage().json());
    const killed = interruptedRootTree().root;
    assert.equal(killed.result()?.termination.unresolvedEffectIds.length, 1);
    assert.deepEqual(killed.openWaits(), []);
  });

  test('with() and toFields() make validated copies', () => {
    const running = make({});
    const paused = running.with({ status: 'paused', pauseReason: 'hold on' });
    assert.equal(paused.status, 'paused');
    assert.equal(running.status, 'running');
    assert.equal(ProcessSnapshot.create(paused.toFields()).json(), paused.json());
    rejects(() => running.with({ status: 'paused' }), 'invalid_snapshot', 'needs its pause_reason');
  });
});

describe('ProcessSnapshot rules (create)', () => {
  test('child_request_digest is present exactly for a child', () => {
    invalid({ childRequestDigest: Digest.of('x') }, 'child_request_digest is present only on a child');
    invalid({ relation: childRelation }, 'a child needs its child_request_digest');
    assert.equal(make({ relation: childRelation, childRequestDigest: Digest.of('x') }).relation.depth, 1);
  });

  test('times are canonical UTC RFC 3339', () => {
    invalid({ startedAt: '2025-01-01T00:00:00+01:00' }, 'started_at');
    invalid({ startedAt: '2025-02-30T00:00:00Z' }, 'started_at');
    invalid({ startedAt: '2025-01-01T00:00:00.100Z' }, 'started_at');
    invalid({ ...completed, finishedAt: '2025-01-01 00:00:00Z' }, 'finished_at');
  });

  test('terminal ⇔ termination ⇔ finished_at, with matching statuses', () => {
    invalid({ ...completed, termination: undefined }, 'a completed process needs its termination');
    invalid({ termination: Termination.completed() }, 'a running process has no termination');
    invalid({ ...completed, finishedAt: undefined }, 'a completed process needs finished_at');
    invalid({ finishedAt: fixtureFinishedAt }, 'a running process has no finished_at');
    invalid({ ...failedFields, status: 'killed' }, 'termination status failed differs from status killed');
  });

  test('output ⇔ completed', () => {
    invalid({ ...completed, output: undefined }, 'a completed process needs its output');
    invalid({ ...failedFields, output: Payload.encode(1) }, 'a failed process has no output');
    invalid({ output: Payload.encode(1) }, 'a running process has no output');
  });

  test('pause_reason ⇔ paused, and it is a valid diagnostic', () => {
    invalid({ status: 'paused' }, 'a paused process needs its pause_reason');
    invalid({ pauseReason: 'stop' }, 'a running process has no pause_reason');
    invalid({ status: 'paused', pauseReason: ' padded ' }, 'pause_reason must be non-empty, trimmed');
  });

  test('terminal processes keep no pending control', () => {
    invalid({ ...completed, pendingControl: PendingControl.create({ killReason: 'stop' }) }, 'keeps no pending_control');
  });

  test('a pending pause is recorded only for running or waiting processes', () => {
    invalid(
      { status: 'paused', pauseReason: 'paused', pendingControl: PendingControl.create({ pauseReason: 'again' }) },
      'pending_control.pause_reason is recorded only for a running or waiting process',
    );
    assert.ok(make({ pendingControl: PendingControl.create({ pauseReason: 'later' }) }).pendingControl.pauseReason);
  });

  test('waiting needs current_wait_id; current_wait_id needs waiting or paused', () => {
    invalid({ status: 'waiting' }, 'a waiting process needs its current_wait_id');
    invalid({ mailbox: waitingMailbox, currentWaitId: waitId }, 'current_wait_id is kept only while waiting or paused, not running');
  });

  test('current_wait_id must be opened and unanswered in the mailbox', () => {
    invalid({ status: 'waiting', currentWaitId: waitId }, 'was never opened in the mailbox');
    const answered = waitingMailbox.append(MailboxRecord.external(fixtureSignalRequest('answer', 0, waitId)));
    invalid({ status: 'waiting', mailbox: answered, currentWaitId: waitId }, 'is already answered');
    assert.equal(make({ status: 'waiting', mailbox: waitingMailbox, currentWaitId: waitId }).waitKind, 'external');
    // An answer accepted while paused clears the current wait: a paused process without one is valid.
    assert.equal(make({ status: 'paused', pauseReason: 'p', mailbox: answered }).waitId, undefined);
  });

  const prepared = (phase: 'planned' | 'pending' | 'settled' = 'planned', status: 'succeeded' | 'unknown' = 'succeeded') =>
    fixturePreparedStep(rootId, 2n, phase, status);
  const charged = { counters: { preparedEffects: 1n, droppedDeltas: 0n } };

  test('a prepared step only for running or interrupted terminal processes', () => {
    invalid({ ...charged, prepared: prepared(), status: 'waiting', mailbox: waitingMailbox, currentWaitId: waitId }, 'not waiting');
    invalid({ ...charged, prepared: prepared(), status: 'paused', pauseReason: 'p' }, 'not paused');
    invalid({ ...charged, prepared: prepared(), ...completed }, 'not completed');
    assert.equal(make({ ...charged, prepared: prepared('settled'), ...failedFields }).status, 'failed');
  });

  test('the prepared step sequence is committed_steps + 1', () => {
    invalid({ ...charged, prepared: fixturePreparedStep(rootId, 5n, 'planned') }, 'must be committed_steps + 1 (3)');
  });

  test('the prepared step belongs to this process', () => {
    invalid({ ...charged, prepared: fixturePreparedStep(fixtureProcessId('other'), 2n, 'planned') }, 'belongs to another process');
  });

  test('the prepared step consumes at most the pending signals', () => {
    const step = PreparedStep.create({
      processId: rootId,
      stepSequence: 3n,
      candidateState: fixtureState(3),
      intent: Transition.checkpoint(3),
    });
    invalid({ prepared: step }, 'consumes 3 of 2 pending signals');
    assert.ok(make({ prepared: PreparedStep.create({ ...step, intent: Transition.checkpoint(2) }) }).prepared);
  });

  test('prepared effects are already charged to counters.prepared_effects', () => {
    invalid({ prepared: prepared() }, '1 prepared effects exceed counters.prepared_effects 0');
  });

  test('prepared dispatcher effects stay within the capabilities', () => {
    const effect = Effect.dispatcher(Payload.encode({ call: 'x' }), CapabilitySet.of(['net.http']));
    const step = PreparedStep.prepare(rootId, 3n, fixtureState(3), Transition.continue(0, [effect]));
    invalid({ ...charged, prepared: step }, 'requires capabilities [net.http]');
    assert.ok(make({ ...charged, prepared: step, capabilities: CapabilitySet.of(['net.http', 'x.y']) }).prepared);
  });

  test('terminal snapshots keep no pending effect', () => {
    invalid(
      {
        ...charged,
        prepared: prepared('pending'),
        status: 'killed',
        finishedAt: fixtureFinishedAt,
        termination: Termination.interrupted('engine_kill', 'killed'),
      },
      'a killed snapshot cannot keep a pending effect',
    );
  });

  test('termination.unresolved_effect_ids equals the prepared Unknown effects', () => {
    const unknownStep = prepared('settled', 'unknown');
    invalid(
      { ...charged, prepared: unknownStep, status: 'killed', finishedAt: fixtureFinishedAt, termination: Termination.interrupted('engine_kill', 'k') },
      'must equal the prepared Unknown effects',
    );
    invalid(
      {
        status: 'killed',
        finishedAt: fixtureFinishedAt,
        termination: Termination.interrupted('engine_kill', 'k', [effectId()]),
      },
      'must equal the prepared Unknown effects',
    );
    const ok = make({
      ...charged,
      prepared: unknownStep,
      status: 'canceled',
      finishedAt: fixtureFinishedAt,
      termination: Termination.interrupted('host_cancellation', 'c', unknownStep.unknownEffectIds()),
    });
    assert.deepEqual(ok.unknownEffectIds().map(String), ok.termination?.unresolvedEffectIds.map(String));
  });

  test('an unlimited budget dimension carries no allocation', () => {
    invalid({ allocatedResources: { steps: 0n, effects: 1n, signals: 0n } }, 'budget.effects is unlimited, so allocated_resources.effects must be 0');
  });

  const finite = (steps: number, effects: number, signals: number): Budget =>
    Budget.of({ steps: Quota.of(steps), effects: Quota.of(effects), signals: Quota.of(signals) });

  test('budget.steps contains committed steps + allocations (+1 for a live prepared step)', () => {
    invalid({ budget: finite(1, 10, 10) }, 'budget.steps 1 cannot contain usage 2 + allocated 0');
    invalid({ budget: finite(3, 10, 10), allocatedResources: { steps: 2n, effects: 0n, signals: 0n } }, 'budget.steps 3 cannot contain usage 2 + allocated 2');
    invalid({ ...charged, budget: finite(2, 10, 10), prepared: prepared() }, 'prepared reservation 1');
    assert.ok(make({ ...charged, budget: finite(3, 10, 10), prepared: prepared() }));
    // An interrupted terminal process releases the reservation.
    assert.ok(
      make({ ...charged, budget: finite(2, 10, 10), prepared: prepared('settled'), ...failedFields }),
    );
  });

  test('budget.effects contains prepared effects + allocations', () => {
    invalid({ counters: { preparedEffects: 4n, droppedDeltas: 0n }, budget: finite(10, 3, 10) }, 'budget.effects 3 cannot contain usage 4');
    invalid({ budget: finite(10, 3, 10), allocatedResources: { steps: 0n, effects: 4n, signals: 0n } }, 'budget.effects 3 cannot contain usage 0 + allocated 4');
  });

  test('budget.signals contains accepted signals + allocations + one settlement per live prepared effect', () => {
    invalid({ budget: finite(10, 10, 2) }, 'budget.signals 2 cannot contain usage 3');
    invalid({ budget: finite(10, 10, 4), allocatedResources: { steps: 0n, effects: 0n, signals: 2n } }, 'budget.signals 4 cannot contain usage 3 + allocated 2');
    invalid({ ...charged, budget: finite(10, 10, 3), prepared: prepared() }, 'budget.signals 3 cannot contain usage 3 + allocated 0 + prepared reservation 1');
    assert.ok(make({ ...charged, budget: finite(10, 10, 4), prepared: prepared() }));
  });

  test('capacity rules apply when tree limits are given', () => {
    const limits = (config: Parameters<typeof TreeLimits.of>[0]) => TreeLimits.of(config);
    rejects(() => make({ treeLimits: limits({ maxPendingSignals: 1n }) }), 'invalid_snapshot', '2 pending signals exceed max_pending_signals 1');
    rejects(
      () => make({ ...charged, prepared: prepared(), treeLimits: limits({ maxPendingSignals: 2n }) }),
      'invalid_snapshot',
      '3 pending signals after the prepared step exceed max_pending_signals 2',
    );
    const rootOnly = TreeLimits.parse(TreeLimits.defaults.json().replace('"max_depth":16', '"max_depth":0'));
    rejects(
      () => make({ relation: childRelation, childRequestDigest: Digest.of('x'), treeLimits: rootOnly }),
      'invalid_snapshot',
      'depth 1 exceeds max_depth 0',
    );
    const size = make({}).encodedSize;
    rejects(
      () => make({ treeLimits: limits({ maxProcessSnapshotBytes: Quota.of(size - 1) }) }),
      'invalid_snapshot',
      `encoded size ${size} exceeds max_process_snapshot_bytes ${size - 1}`,
    );
    assert.ok(make({ treeLimits: limits({ maxProcessSnapshotBytes: Quota.of(size) }) }));
    // Without limits, capacity is left to the tree.
    assert.ok(make({}));
  });

  test('member types are checked', () => {
    invalid({ status: 'sleeping' as 'running' }, 'status must be one of');
    invalid({ committedSteps: 1 as unknown as bigint }, 'committedSteps must be a uint64');
    invalid({ relation: undefined as unknown as ProcessRelation }, 'relation must be a ProcessRelation');
    invalid({ mailbox: 'x' as unknown as Mailbox }, 'mailbox must be a Mailbox');
  });
});

describe('PendingControl', () => {
  test('round trip and emptiness', () => {
    const control = PendingControl.create({
      failure,
      killReason: 'kill',
      deadline: { owner: 'parent', reason: 'late' },
      cancellation: { owner: 'host', reason: 'cancel' },
      pauseReason: 'pause',
    });
    assert.equal(
      control.json(),
      `{"cancellation_owner":"host","cancellation_reason":"cancel","deadline_owner":"parent","deadline_reason":"late","failure":${failure.json()},"kill_reason":"kill","pause_reason":"pause"}`,
    );
    assert.equal(PendingControl.parse(control.json()).json(), control.json());
    assert.ok(PendingControl.create({}).isEmpty);
    assert.equal(PendingControl.empty().json(), '{}');
    assert.equal(PendingControl.empty().with({ killReason: 'k' }).killReason, 'k');
    const cleared = control.without('pauseReason', 'failure');
    assert.equal(cleared.pauseReason, undefined);
    assert.equal(cleared.failure, undefined);
    assert.equal(cleared.killReason, 'kill');
    assert.ok(PendingControl.create({ killReason: 'k' }).without('killReason').isEmpty);
  });

  test('owners and reasons appear together and are valid', () => {
    rejects(() => PendingControl.parse('{"deadline_owner":"host"}'), 'invalid_snapshot', 'must appear together');
    rejects(() => PendingControl.parse('{"cancellation_reason":"x"}'), 'invalid_snapshot', 'must appear together');
    rejects(() => PendingControl.parse('{"deadline_owner":"nobody","deadline_reason":"x"}'), 'invalid_snapshot', 'must be parent or host');
    rejects(() => PendingControl.parse('{"kill_reason":""}'), 'invalid_snapshot', 'kill reason must be non-empty');
    rejects(() => PendingControl.parse('{"extra":1}'), 'invalid_snapshot', 'unknown member "extra"');
    rejects(() => PendingControl.parse('{"failure":{"kind":"x"}}'), 'invalid_snapshot', 'failure');
  });
});

describe('ProcessSnapshot strict decode', () => {
  const record = (): Record<string, any> =>
    JSON.parse(
      make({
        ...{ counters: { preparedEffects: 1n, droppedDeltas: 0n } },
        prepared: fixturePreparedStep(rootId, 2n, 'settled', 'unknown'),
        pendingControl: PendingControl.create({ killReason: 'soon' }),
      }).json(),
    ) as Record<string, any>;
  const parse = (edit: (value: Record<string, any>) => void): ProcessSnapshot => {
    const value = record();
    edit(value);
    return ProcessSnapshot.parse(JSON.stringify(value));
  };

  test('the base record decodes', () => {
    assert.equal(parse(() => undefined).status, 'running');
  });

  const required = [
    'process_id',
    'relation',
    'deployment_ref',
    'started_at',
    'status',
    'committed_steps',
    'budget',
    'allocated_resources',
    'capabilities',
    'counters',
    'committed_execution_state',
    'mailbox',
    'pending_control',
  ];
  for (const member of required) {
    test(`a missing ${member} is rejected`, () => {
      rejects(() => parse((v) => delete v[member]), 'invalid_snapshot', `/${member} is required`);
    });
  }

  const unknownAt: Array<[string, (value: Record<string, any>) => void, string]> = [
    ['the record', (v) => (v.extra = 1), '/ has an unknown member "extra"'],
    ['relation', (v) => (v.relation.depth = 0), '/relation has an unknown member "depth"'],
    ['allocated_resources', (v) => (v.allocated_resources.extra = 0), '/allocated_resources has an unknown member'],
    ['counters', (v) => (v.counters.accepted_signals = 0), '/counters has an unknown member "accepted_signals"'],
    ['pending_control', (v) => (v.pending_control.extra = 'x'), '/pending_control has an unknown member'],
    ['budget', (v) => (v.budget.extra = 1), '/budget has an unknown member'],
    ['budget quota', (v) => (v.budget.steps.extra = 1), '/budget/steps has an unknown member'],
    ['deployment_ref', (v) => (v.deployment_ref.extra = 1), '/deployment_ref has an unknown member'],
    ['committed_execution_state', (v) => (v.committed_execution_state.extra = 1), '/committed_execution_state has an unknown member'],
    ['mailbox', (v) => (v.mailbox.extra = 1), '/mailbox has an unknown member'],
    ['mailbox record', (v) => (v.mailbox.records[0].extra = 1), '/mailbox/records/0 has an unknown member'],
    ['prepared', (v) => (v.prepared.extra = 1), '/prepared has an unknown member'],
    ['prepared effect', (v) => (v.prepared.effects[0].extra = 1), '/prepared/effects/0 has an unknown member'],
    ['prepared candidate state', (v) => (v.prepared.candidate_state.extra = 1), '/prepared/candidate_state has an unknown member'],
    ['prepared intent', (v) => (v.prepared.intent.extra = 1), '/prepared/intent has an unknown member'],
  ];
  for (const [where, edit, fragment] of unknownAt) {
    test(`an unknown member in ${where} is rejected`, () => {
      rejects(() => parse(edit), 'invalid_snapshot', fragment);
    });
  }

  const malformed: Array<[string, (value: Record<string, any>) => void, string]> = [
    ['process id', (v) => (v.process_id = 'no spaces'), '/process_id is not valid'],
    ['status', (v) => (v.status = 'sleeping'), '/status must be one of'],
    ['committed steps', (v) => (v.committed_steps = -1), '/committed_steps must be an unsigned integer'],
    ['child request digest', (v) => (v.child_request_digest = 'sha256:x'), '/child_request_digest is not valid'],
    ['current wait id', (v) => (v.current_wait_id = 'bad id'), '/current_wait_id is not valid'],
    ['output', (v) => (v.output = { a: 1, b: [1, 2] } as unknown), 'a running process has no output'],
    ['capabilities', (v) => (v.capabilities = ['b', 'a']), 'strictly ascending'],
    ['termination', (v) => (v.termination = { status: 'completed' }), '/termination/cause is required'],
    ['relation half link', (v) => (v.relation = { parent_id: 'process:x' }), 'needs both parent_id and child_key'],
  ];
  for (const [what, edit, fragment] of malformed) {
    test(`a malformed ${what} is rejected`, () => {
      rejects(() => parse(edit), 'invalid_snapshot', fragment);
    });
  }

  test('domain rules apply on decode too (with the record path)', () => {
    rejects(() => parse((v) => (v.status = 'completed')), 'invalid_snapshot', 'a completed process needs its termination');
    rejects(() => parse((v) => (v.counters.prepared_effects = 0)), 'invalid_snapshot', 'exceed counters.prepared_effects');
  });

  test('a child record decodes only with its relation', () => {
    const child = make({ relation: childRelation, childRequestDigest: Digest.of('x') });
    rejects(() => ProcessSnapshot.parse(child.json()), 'invalid_snapshot', 'decodes only within its tree snapshot');
    const back = ProcessSnapshot.parse(child.json(), { relation: childRelation });
    assert.equal(back.relation.depth, 1);
    assert.equal(back.json(), child.json());
    const otherKey = ProcessRelation.child(childId, ProcessRelation.root(rootId), ChildKey.parse('other'));
    rejects(() => ProcessSnapshot.parse(child.json(), { relation: otherKey }), 'invalid_snapshot', 'differs from the relation the tree supplies');
    rejects(() => ProcessSnapshot.parse(make({}).json(), { relation: childRelation }), 'invalid_snapshot', 'is not the process');
  });

  test('the caller code applies to nested rejections', () => {
    rejects(
      () => ProcessSnapshot.parse('{"process_id":"process:x"}', { code: 'invalid_tree_snapshot' }),
      'invalid_tree_snapshot',
      '/relation is required',
    );
    const value = record();
    value.budget.steps = { maximum: 'x' };
    rejects(() => ProcessSnapshot.parse(JSON.stringify(value), { code: 'invalid_tree_snapshot' }), 'invalid_tree_snapshot', '/budget/steps/maximum');
  });

  test('capacity against decode-time limits', () => {
    const text = make({}).json();
    rejects(
      () => ProcessSnapshot.parse(text, { treeLimits: TreeLimits.of({ maxPendingSignals: 1n }) }),
      'invalid_snapshot',
      'exceed max_pending_signals 1',
    );
  });

  test('settlements survive decode with their status and payload', () => {
    const back = parse(() => undefined);
    const id = EffectId.derive(rootId, 3n, 0);
    assert.ok(back.effectSettlement(id)?.equals(Settlement.of('unknown', Payload.encode({ status: 'unknown' }))));
    assert.ok(fixtureDispatcherEffect('prepared').equals(back.preparedEffect(id)?.effect));
  });
});
