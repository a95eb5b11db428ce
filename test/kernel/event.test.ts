import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KernelError } from '../../src/kernel/errors.js';
import {
  DeltaDropped,
  EffectFinished,
  EffectResolved,
  EffectStarted,
  Event,
  eventCarriesFact,
  eventNameValues,
  eventNames,
  eventPhaseOf,
  eventRules,
  eventScopeOf,
  isEventName,
  isEventPhase,
  maxEventPayloadBytes,
  parseEventName,
  parseEventPhase,
  parseStepStatus,
  ProcessFinished,
  RuntimeStopped,
  SignalAccepted,
  StepCommitted,
  StepFinished,
  stepStatusValues,
  type EventConfig,
  type EventFact,
  type EventName,
} from '../../src/kernel/event.js';
import { Failure, FailureClassification } from '../../src/kernel/failure.js';
import { ChildKey, EffectAttemptId, EffectId, ProcessId, SignalId, TreeIncarnationId, WaitId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import { Result } from '../../src/kernel/result.js';
import { Termination } from '../../src/kernel/termination.js';
import { Usage } from '../../src/kernel/usage.js';
import { testDeploymentRef } from '../../src/testing/snapshot-fixtures.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const invalidEvent = code('invalid_event');

const processId = ProcessId.parse('process:root');
const relation = ProcessRelation.root(processId);
const incarnation = TreeIncarnationId.parse(`incarnation:${'0123456789abcdef'.repeat(2)}`);
const effectId = EffectId.derive(processId, 3n, 1);
const attemptId = EffectAttemptId.parse(`attempt:${'a'.repeat(32)}`);
const occurredAt = '2025-03-04T05:06:07.123456789Z';
const classification = FailureClassification.of('external', 'engine.dispatch.failed');

/** A valid fact for every fact-carrying event name. */
const facts: Partial<Record<EventName, EventFact>> = {
  [eventNames.processFinished]: ProcessFinished.create({ cause: 'completion', usage: Usage.of({ committedSteps: 2n }) }),
  [eventNames.runtimeStopped]: RuntimeStopped.create(FailureClassification.of('external', 'engine.tree.committer_failed')),
  [eventNames.signalAccepted]: SignalAccepted.create({ signalId: SignalId.parse('signal:host:1') }),
  [eventNames.stepFinished]: StepFinished.create({ status: 'succeeded', workDurationNs: 1500n, adoptionDelayNs: 20n }),
  [eventNames.stepCommitted]: StepCommitted.create({ status: 'waiting' }),
  [eventNames.effectStarted]: EffectStarted.create({ attemptId, target: 'dispatcher' }),
  [eventNames.effectFinished]: EffectFinished.create({
    attemptId,
    target: 'dispatcher',
    settlementStatus: 'unknown',
    durationNs: 42n,
    failure: classification,
  }),
  [eventNames.effectResolved]: EffectResolved.create({ target: 'dispatcher', settlementStatus: 'succeeded' }),
  [eventNames.deltaDropped]: DeltaDropped.create({ attemptId, count: 3n }),
};

/** A valid config for `name`, with the identities its scope requires. */
function configFor(name: EventName, overrides: Partial<EventConfig> = {}): EventConfig {
  const scope = eventRules[name].scope;
  return {
    processSequence: 7n,
    processId,
    deploymentRef: testDeploymentRef,
    relation,
    treeIncarnationId: incarnation,
    stepSequence: scope === 'process' ? undefined : 3n,
    effectId: scope === 'effect' ? effectId : undefined,
    name,
    occurredAt,
    payload: facts[name],
    ...overrides,
  };
}

describe('event names, phases and scopes', () => {
  test('there are exactly the fifteen contract names', () => {
    assert.deepEqual([...eventNameValues].sort(), [
      'agent.delta.dropped',
      'agent.effect.finished',
      'agent.effect.resolved',
      'agent.effect.started',
      'agent.process.finished',
      'agent.process.paused',
      'agent.process.restored',
      'agent.process.resumed',
      'agent.process.started',
      'agent.runtime.stopped',
      'agent.signal.accepted',
      'agent.step.committed',
      'agent.step.finished',
      'agent.step.prepared',
      'agent.step.started',
    ]);
    assert.ok(Object.isFrozen(eventNames));
  });

  test('the phase and scope table is the contract table', () => {
    const expected: Record<string, string> = {
      'agent.process.started': 'committed/process',
      'agent.process.restored': 'committed/process',
      'agent.process.paused': 'committed/process',
      'agent.process.resumed': 'committed/process',
      'agent.process.finished': 'committed/process',
      'agent.runtime.stopped': 'attempt/process',
      'agent.signal.accepted': 'committed/process',
      'agent.step.started': 'attempt/step',
      'agent.step.prepared': 'attempt/step',
      'agent.step.finished': 'attempt/step',
      'agent.step.committed': 'committed/step',
      'agent.effect.started': 'attempt/effect',
      'agent.effect.finished': 'attempt/effect',
      'agent.delta.dropped': 'attempt/effect',
      'agent.effect.resolved': 'committed/effect',
    };
    for (const name of eventNameValues) {
      assert.equal(`${eventPhaseOf(name)}/${eventScopeOf(name)}`, expected[name], name);
    }
  });

  test('nine names carry a typed fact, the others the empty object', () => {
    const withFact = eventNameValues.filter((name) => eventCarriesFact(name)).sort();
    assert.deepEqual(withFact, Object.keys(facts).sort());
  });

  test('parsers reject unknown names and phases', () => {
    assert.equal(parseEventName('agent.step.started'), 'agent.step.started');
    assert.equal(parseEventPhase('attempt'), 'attempt');
    for (const value of ['', 'agent.step.start', 'Agent.step.started', null, 3]) {
      assert.equal(isEventName(value), false);
      assert.throws(() => parseEventName(value), invalidEvent);
    }
    for (const value of ['', 'Committed', 'pending', null]) {
      assert.equal(isEventPhase(value), false);
      assert.throws(() => parseEventPhase(value), invalidEvent);
    }
  });

  test('step statuses are succeeded, failed and discarded', () => {
    assert.deepEqual([...stepStatusValues], ['succeeded', 'failed', 'discarded']);
    assert.throws(() => parseStepStatus('completed'), invalidEvent);
  });
});

describe('Event.create', () => {
  test('every name builds in its own scope and round-trips through the wire', () => {
    for (const name of eventNameValues) {
      const event = Event.create(configFor(name));
      assert.equal(event.name, name);
      assert.equal(event.phase, eventRules[name].phase);
      assert.equal(event.scope, eventRules[name].scope);
      assert.equal(event.committed, eventRules[name].phase === 'committed');
      const decoded = Event.parse(event.json());
      assert.ok(decoded.equals(event), name);
      assert.equal(decoded.json(), event.json());
      assert.ok(Object.isFrozen(event));
    }
  });

  test('the wire form has exactly the contract members, sorted', () => {
    const event = Event.create(configFor(eventNames.effectStarted));
    const wire = JSON.parse(event.json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(wire), [
      'deployment_ref',
      'effect_id',
      'name',
      'occurred_at',
      'payload',
      'phase',
      'process_id',
      'process_sequence',
      'relation',
      'step_sequence',
      'tree_incarnation_id',
    ]);
    assert.equal(wire.phase, 'attempt');
    assert.deepEqual(wire.relation, { depth: 0, root_id: 'process:root' });
    assert.deepEqual(wire.payload, { attempt_id: attemptId.toString(), target: 'dispatcher' });
    assert.ok(event.json().includes('"process_sequence":7,'));
  });

  test('optional identities are omitted, not null', () => {
    const event = Event.create(configFor(eventNames.processStarted, { treeIncarnationId: undefined }));
    assert.equal(
      event.json().includes('tree_incarnation_id') || event.json().includes('step_sequence') || event.json().includes('effect_id'),
      false,
    );
    assert.equal(event.treeIncarnationId, undefined);
    assert.ok(Event.parse(event.json()).equals(event));
  });

  test('the phase is derived from the name, and a mismatching phase is rejected', () => {
    assert.equal(Event.create(configFor(eventNames.stepStarted)).phase, 'attempt');
    assert.equal(Event.create(configFor(eventNames.stepStarted, { phase: 'attempt' })).phase, 'attempt');
    for (const name of eventNameValues) {
      const wrong = eventRules[name].phase === 'attempt' ? 'committed' : 'attempt';
      assert.throws(() => Event.create(configFor(name, { phase: wrong })), invalidEvent, name);
    }
    assert.throws(() => Event.create(configFor(eventNames.stepStarted, { phase: 'done' as never })), invalidEvent);
  });

  test('process events carry neither step sequence nor effect id', () => {
    for (const name of eventNameValues.filter((n) => eventRules[n].scope === 'process')) {
      assert.throws(() => Event.create(configFor(name, { stepSequence: 1n })), invalidEvent, name);
      assert.throws(() => Event.create(configFor(name, { effectId })), invalidEvent, name);
    }
  });

  test('step events carry the step sequence and no effect id', () => {
    for (const name of eventNameValues.filter((n) => eventRules[n].scope === 'step')) {
      assert.throws(() => Event.create(configFor(name, { stepSequence: undefined })), invalidEvent, name);
      assert.throws(() => Event.create(configFor(name, { effectId })), invalidEvent, name);
    }
  });

  test('effect events carry both the step sequence and the effect id', () => {
    for (const name of eventNameValues.filter((n) => eventRules[n].scope === 'effect')) {
      assert.throws(() => Event.create(configFor(name, { stepSequence: undefined })), invalidEvent, name);
      assert.throws(() => Event.create(configFor(name, { effectId: undefined })), invalidEvent, name);
    }
  });

  test('sequences are uint64 values of at least one', () => {
    assert.throws(() => Event.create(configFor(eventNames.processStarted, { processSequence: 0n })), invalidEvent);
    assert.throws(() => Event.create(configFor(eventNames.processStarted, { processSequence: 1 as never })), invalidEvent);
    assert.throws(() => Event.create(configFor(eventNames.processStarted, { processSequence: 1n << 64n })), invalidEvent);
    assert.throws(() => Event.create(configFor(eventNames.stepStarted, { stepSequence: 0n })), invalidEvent);
    const max = (1n << 64n) - 1n;
    const event = Event.create(configFor(eventNames.stepStarted, { processSequence: max, stepSequence: max }));
    assert.equal(Event.parse(event.json()).processSequence, max);
    assert.equal(Event.parse(event.json()).stepSequence, max);
  });

  test('the relation must describe the event process', () => {
    const other = ProcessRelation.root(ProcessId.parse('process:other'));
    assert.throws(() => Event.create(configFor(eventNames.processStarted, { relation: other })), invalidEvent);
  });

  test('members must have their kernel types', () => {
    assert.throws(() => Event.create(configFor(eventNames.processStarted, { processId: 'process:root' as never })), invalidEvent);
    assert.throws(() => Event.create(configFor(eventNames.processStarted, { deploymentRef: {} as never })), invalidEvent);
    assert.throws(() => Event.create(configFor(eventNames.processStarted, { relation: {} as never })), invalidEvent);
    assert.throws(
      () => Event.create(configFor(eventNames.processStarted, { treeIncarnationId: 'incarnation:x' as never })),
      invalidEvent,
    );
    assert.throws(() => Event.create(configFor(eventNames.effectStarted, { effectId: 'effect:x' as never })), invalidEvent);
    assert.throws(
      () => Event.create(configFor(eventNames.processStarted, { name: 'agent.process.exploded' as EventName })),
      invalidEvent,
    );
    assert.throws(() => Event.create(null as never), invalidEvent);
  });

  test('occurredAt accepts a canonical UTC timestamp or a Date', () => {
    const fromDate = Event.create(configFor(eventNames.processStarted, { occurredAt: new Date('2025-01-02T03:04:05.600Z') }));
    assert.equal(fromDate.occurredAt, '2025-01-02T03:04:05.6Z');
    assert.equal(fromDate.occurredAtDate.toISOString(), '2025-01-02T03:04:05.600Z');
    for (const bad of ['2025-01-02T03:04:05.600Z', '2025-01-02T03:04:05+00:00', '2025-02-30T00:00:00Z', 'now', '']) {
      assert.throws(() => Event.create(configFor(eventNames.processStarted, { occurredAt: bad })), invalidEvent, bad);
    }
    assert.throws(() => Event.create(configFor(eventNames.processStarted, { occurredAt: new Date(Number.NaN) })), invalidEvent);
  });

  test('events without a fact carry exactly the empty object', () => {
    const started = Event.create(configFor(eventNames.processStarted));
    assert.equal(started.payload.json(), '{}');
    assert.equal(started.fact(), undefined);
    assert.equal(Event.create(configFor(eventNames.processStarted, { payload: Payload.emptyObject })).payload.json(), '{}');
    assert.throws(() => Event.create(configFor(eventNames.processStarted, { payload: Payload.encode({ a: 1 }) })), invalidEvent);
    assert.throws(() => Event.create(configFor(eventNames.stepPrepared, { payload: Payload.parse('null') })), invalidEvent);
    const fact = facts[eventNames.stepCommitted];
    assert.throws(() => Event.create(configFor(eventNames.stepStarted, { payload: fact })), invalidEvent);
  });

  test('fact events need their own fact, given as the fact or as its payload', () => {
    assert.throws(() => Event.create(configFor(eventNames.stepCommitted, { payload: undefined })), invalidEvent);
    assert.throws(
      () => Event.create(configFor(eventNames.stepCommitted, { payload: facts[eventNames.stepFinished] })),
      invalidEvent,
    );
    assert.throws(() => Event.create(configFor(eventNames.stepCommitted, { payload: Payload.emptyObject })), invalidEvent);
    assert.throws(
      () => Event.create(configFor(eventNames.stepCommitted, { payload: Payload.encode({ status: 'sleeping' }) })),
      invalidEvent,
    );
    const forged = { eventName: eventNames.stepCommitted, toWire: () => ({}), json: () => '{}', payload: () => Payload.emptyObject };
    assert.throws(() => Event.create(configFor(eventNames.stepCommitted, { payload: forged })), invalidEvent);
    const viaPayload = Event.create(configFor(eventNames.stepCommitted, { payload: Payload.parse('{"status":"paused"}') }));
    assert.equal(viaPayload.stepCommitted()?.status, 'paused');
  });

  test('the payload bound is 1 MiB of canonical JSON', () => {
    assert.equal(maxEventPayloadBytes, 1048576);
    const big = Payload.encode({ status: 'x'.repeat(maxEventPayloadBytes) });
    assert.throws(
      () => Event.create(configFor(eventNames.stepCommitted, { payload: big })),
      (error: unknown) => invalidEvent(error) && /1048576-byte event payload bound/.test((error as Error).message),
    );
  });

  test('typed accessors return the fact of their own name only', () => {
    const accessors = {
      [eventNames.processFinished]: (e: Event) => e.processFinished(),
      [eventNames.runtimeStopped]: (e: Event) => e.runtimeStopped(),
      [eventNames.signalAccepted]: (e: Event) => e.signalAccepted(),
      [eventNames.stepFinished]: (e: Event) => e.stepFinished(),
      [eventNames.stepCommitted]: (e: Event) => e.stepCommitted(),
      [eventNames.effectStarted]: (e: Event) => e.effectStarted(),
      [eventNames.effectFinished]: (e: Event) => e.effectFinished(),
      [eventNames.effectResolved]: (e: Event) => e.effectResolved(),
      [eventNames.deltaDropped]: (e: Event) => e.deltaDropped(),
    } as const;
    for (const name of eventNameValues) {
      const event = Event.parse(Event.create(configFor(name)).json());
      for (const [accessorName, accessor] of Object.entries(accessors)) {
        const fact = accessor(event);
        if (accessorName === name) {
          assert.ok(fact !== undefined, name);
          assert.equal(fact.json(), facts[name]?.json());
          assert.equal(fact.eventName, name);
        } else {
          assert.equal(fact, undefined, `${accessorName} on ${name}`);
        }
      }
    }
  });

  test('effectFinished exposes its members after a round trip', () => {
    const event = Event.parse(Event.create(configFor(eventNames.effectFinished)).json());
    const fact = event.effectFinished();
    assert.ok(fact);
    assert.ok(fact.attemptId.equals(attemptId));
    assert.equal(fact.target, 'dispatcher');
    assert.equal(fact.settlementStatus, 'unknown');
    assert.equal(fact.durationNs, 42n);
    assert.ok(fact.failure?.equals(classification));
    assert.ok(event.effectId?.equals(effectId));
    assert.equal(event.stepSequence, 3n);
    assert.ok(event.treeIncarnationId?.equals(incarnation));
  });

  test('events of a child process keep the child relation', () => {
    const childId = ProcessId.parse('process:child');
    const childRelation = ProcessRelation.child(childId, relation, ChildKey.parse('worker'));
    const event = Event.create(configFor(eventNames.processStarted, { processId: childId, relation: childRelation }));
    const decoded = Event.parse(event.json());
    assert.ok(decoded.relation.equals(childRelation));
    assert.equal(decoded.relation.depth, 1);
  });
});

describe('Event.parse is strict', () => {
  const valid = JSON.parse(Event.create(configFor(eventNames.effectFinished)).json()) as Record<string, unknown>;
  const variant = (change: (wire: Record<string, unknown>) => void): string => {
    const copy = structuredClone(valid);
    change(copy);
    return JSON.stringify(copy);
  };

  test('accepts the canonical form and its reordering', () => {
    assert.ok(Event.parse(JSON.stringify(valid)));
    const reordered = Object.fromEntries(Object.entries(valid).reverse());
    assert.equal(Event.parse(JSON.stringify(reordered)).json(), Event.parse(JSON.stringify(valid)).json());
  });

  const rejections: Record<string, (wire: Record<string, unknown>) => void> = {
    'unknown member': (w) => (w.extra = 1),
    'missing name': (w) => delete w.name,
    'missing payload': (w) => delete w.payload,
    'missing phase': (w) => delete w.phase,
    'missing relation': (w) => delete w.relation,
    'missing deployment ref': (w) => delete w.deployment_ref,
    'null optional identity': (w) => (w.tree_incarnation_id = null),
    'zero process sequence': (w) => (w.process_sequence = 0),
    'negative process sequence': (w) => (w.process_sequence = -1),
    'fractional process sequence': (w) => (w.process_sequence = 1.5),
    'string process sequence': (w) => (w.process_sequence = '7'),
    'zero step sequence': (w) => (w.step_sequence = 0),
    'unknown name': (w) => (w.name = 'agent.effect.exploded'),
    'wrong phase': (w) => (w.phase = 'committed'),
    'invalid phase': (w) => (w.phase = 'sometime'),
    'bad timestamp': (w) => (w.occurred_at = '2025-03-04 05:06:07Z'),
    'non-canonical timestamp': (w) => (w.occurred_at = '2025-03-04T05:06:07.100Z'),
    'bad process id': (w) => (w.process_id = 'not an id'),
    'bad effect id': (w) => (w.effect_id = ''),
    'bad incarnation id': (w) => (w.tree_incarnation_id = 'incarnation:XYZ'),
    'relation of another process': (w) => (w.relation = { depth: 0, root_id: 'process:other' }),
    'relation with an unknown member': (w) => (w.relation = { depth: 0, root_id: 'process:root', x: 1 }),
    'forged deployment digest': (w) => ((w.deployment_ref as Record<string, unknown>).digest = `sha256:${'0'.repeat(64)}`),
    'missing effect id for an effect event': (w) => delete w.effect_id,
    'missing step sequence for an effect event': (w) => delete w.step_sequence,
    'fact with an unknown member': (w) => ((w.payload as Record<string, unknown>).extra = true),
    'fact with a bad status': (w) => ((w.payload as Record<string, unknown>).settlement_status = 'maybe'),
    'fact failure on a definite settlement': (w) => ((w.payload as Record<string, unknown>).settlement_status = 'failed'),
    'empty payload for a fact event': (w) => (w.payload = {}),
    'array payload': (w) => (w.payload = []),
  };
  for (const [label, change] of Object.entries(rejections)) {
    test(`rejects ${label}`, () => {
      assert.throws(() => Event.parse(variant(change)), invalidEvent);
    });
  }

  test('rejects a non-empty payload on an event without a fact', () => {
    const started = JSON.parse(Event.create(configFor(eventNames.processStarted)).json()) as Record<string, unknown>;
    started.payload = { note: 'hi' };
    assert.throws(() => Event.parse(JSON.stringify(started)), invalidEvent);
    started.payload = {};
    started.step_sequence = 1;
    assert.throws(() => Event.parse(JSON.stringify(started)), invalidEvent);
  });

  test('rejects malformed JSON and non-objects', () => {
    for (const input of ['', '[]', 'null', '{', '{"name":"a","name":"b"}']) {
      assert.throws(() => Event.parse(input), invalidEvent, input);
    }
  });

  test('error messages name the JSON path', () => {
    assert.throws(
      () => Event.parse(variant((w) => ((w.payload as Record<string, unknown>).duration_ns = -1))),
      (error: unknown) => invalidEvent(error) && (error as Error).message.startsWith('/payload/duration_ns'),
    );
    assert.throws(
      () => Event.parse(variant((w) => ((w.relation as Record<string, unknown>).depth = 'x'))),
      (error: unknown) => invalidEvent(error) && (error as Error).message.startsWith('/relation/depth'),
    );
  });
});

describe('typed facts', () => {
  const usage = Usage.of({ committedSteps: 4n, preparedEffects: 2n, acceptedSignals: 1n, droppedDeltas: 5n });

  test('every fact round-trips through its own wire form', () => {
    const readers: Record<string, (text: string) => EventFact> = {
      [eventNames.processFinished]: (t) => ProcessFinished.parse(t),
      [eventNames.runtimeStopped]: (t) => RuntimeStopped.parse(t),
      [eventNames.signalAccepted]: (t) => SignalAccepted.parse(t),
      [eventNames.stepFinished]: (t) => StepFinished.parse(t),
      [eventNames.stepCommitted]: (t) => StepCommitted.parse(t),
      [eventNames.effectStarted]: (t) => EffectStarted.parse(t),
      [eventNames.effectFinished]: (t) => EffectFinished.parse(t),
      [eventNames.effectResolved]: (t) => EffectResolved.parse(t),
      [eventNames.deltaDropped]: (t) => DeltaDropped.parse(t),
    };
    for (const [name, fact] of Object.entries(facts)) {
      const read = readers[name] as (text: string) => EventFact;
      assert.equal(read(fact.json()).json(), fact.json(), name);
      assert.equal(fact.payload().json(), fact.json());
      assert.throws(() => read(fact.json().replace(/^\{/, '{"zz":1,')), invalidEvent, `${name} unknown member`);
      assert.ok(Object.isFrozen(fact));
    }
  });

  test('process finished derives its status from the cause', () => {
    const completed = ProcessFinished.create({ cause: 'completion', usage });
    assert.equal(completed.status, 'completed');
    assert.equal(completed.json(), `{"cause":"completion","status":"completed","usage":${usage.json()}}`);
    assert.equal(ProcessFinished.create({ cause: 'host_deadline', usage }).status, 'timed_out');
    assert.throws(() => ProcessFinished.create({ cause: 'completion', status: 'failed', usage }), invalidEvent);
    assert.throws(() => ProcessFinished.parse(completed.json().replace('"completed"', '"canceled"')), invalidEvent);
    assert.throws(() => ProcessFinished.create({ cause: 'finished' as never, usage }), invalidEvent);
    assert.throws(() => ProcessFinished.create({ cause: 'completion', usage: undefined as never }), invalidEvent);
  });

  test('process finished carries a failure exactly when failed, matching the cause', () => {
    const failure = FailureClassification.of('execution', 'execution.step.failed');
    const failed = ProcessFinished.create({ cause: 'execution_failure', failure, usage });
    assert.equal(failed.status, 'failed');
    assert.ok(ProcessFinished.parse(failed.json()).failure?.equals(failure));
    assert.throws(() => ProcessFinished.create({ cause: 'execution_failure', usage }), invalidEvent);
    assert.throws(() => ProcessFinished.create({ cause: 'completion', failure, usage }), invalidEvent);
    assert.throws(() => ProcessFinished.create({ cause: 'panic', failure, usage }), invalidEvent);
    const withoutFailure = JSON.parse(failed.json()) as Record<string, unknown>;
    delete withoutFailure.failure;
    assert.throws(() => ProcessFinished.parse(JSON.stringify(withoutFailure)), invalidEvent);
  });

  test('process finished is built from a Result', () => {
    const result = Result.create({
      processId,
      startedAt: '2025-01-01T00:00:00Z',
      finishedAt: '2025-01-01T00:00:01Z',
      termination: Termination.failed(Failure.create('contract', 'engine.limit.steps', 'step budget exhausted')),
      usage,
    });
    const fact = ProcessFinished.fromResult(result);
    assert.equal(fact.cause, 'contract_failure');
    assert.equal(fact.status, 'failed');
    assert.ok(fact.failure?.equals(FailureClassification.of('contract', 'engine.limit.steps')));
    assert.ok(fact.usage.equals(usage));
    assert.equal(fact.json().includes('step budget exhausted'), false, 'no diagnostic text');
    assert.equal(ProcessFinished.fromTermination(Termination.interrupted('engine_kill', 'stop'), usage).status, 'killed');
  });

  test('runtime stopped carries only a failure classification', () => {
    const fact = RuntimeStopped.create(classification);
    assert.equal(fact.json(), '{"failure":{"code":"engine.dispatch.failed","kind":"external"}}');
    assert.throws(() => RuntimeStopped.create(Failure.create('external', 'a.b', 'text') as never), invalidEvent);
    assert.throws(() => RuntimeStopped.parse('{}'), invalidEvent);
    assert.throws(() => RuntimeStopped.parse('{"failure":{"code":"Bad Code","kind":"external"}}'), invalidEvent);
  });

  test('signal accepted has an optional wait id', () => {
    const waitId = WaitId.parse('wait:1');
    const fact = SignalAccepted.create({ signalId: SignalId.parse('signal:host:2'), waitId });
    assert.equal(fact.json(), '{"signal_id":"signal:host:2","wait_id":"wait:1"}');
    assert.ok(SignalAccepted.parse(fact.json()).waitId?.equals(waitId));
    assert.equal(SignalAccepted.parse('{"signal_id":"signal:host:2"}').waitId, undefined);
    assert.throws(() => SignalAccepted.create({ signalId: 'signal:x' as never }), invalidEvent);
    assert.throws(() => SignalAccepted.parse('{"signal_id":"bad id"}'), invalidEvent);
    assert.throws(() => SignalAccepted.parse('{"signal_id":"signal:x","wait_id":null}'), invalidEvent);
  });

  test('step finished carries a step status and uint64 nanosecond durations', () => {
    const fact = StepFinished.create({ status: 'discarded', workDurationNs: 0n, adoptionDelayNs: (1n << 64n) - 1n });
    assert.equal(fact.json(), '{"adoption_delay_ns":18446744073709551615,"status":"discarded","work_duration_ns":0}');
    assert.equal(StepFinished.parse(fact.json()).adoptionDelayNs, (1n << 64n) - 1n);
    assert.throws(() => StepFinished.create({ status: 'completed' as never, workDurationNs: 0n, adoptionDelayNs: 0n }), invalidEvent);
    assert.throws(() => StepFinished.create({ status: 'failed', workDurationNs: -1n, adoptionDelayNs: 0n }), invalidEvent);
    assert.throws(() => StepFinished.create({ status: 'failed', workDurationNs: 1 as never, adoptionDelayNs: 0n }), invalidEvent);
    assert.throws(() => StepFinished.parse('{"adoption_delay_ns":0,"status":"failed","work_duration_ns":1e3}'), invalidEvent);
  });

  test('step committed carries the resulting process status', () => {
    for (const status of ['running', 'waiting', 'paused', 'completed', 'killed'] as const) {
      assert.equal(StepCommitted.parse(StepCommitted.create({ status }).json()).status, status);
    }
    assert.throws(() => StepCommitted.create({ status: 'discarded' as never }), invalidEvent);
    assert.throws(() => StepCommitted.parse('{"status":"done"}'), invalidEvent);
  });

  test('effect started names the attempt and target', () => {
    assert.equal(
      EffectStarted.create({ attemptId, target: 'framework' }).json(),
      `{"attempt_id":"${attemptId.toString()}","target":"framework"}`,
    );
    assert.throws(() => EffectStarted.create({ attemptId, target: 'host' as never }), invalidEvent);
    assert.throws(() => EffectStarted.create({ attemptId: 'attempt:1' as never, target: 'framework' }), invalidEvent);
    assert.throws(() => EffectStarted.parse('{"attempt_id":"attempt:1","target":"framework"}'), invalidEvent);
  });

  test('effect finished allows a failure classification only on an unknown outcome', () => {
    const base = { attemptId, target: 'dispatcher' as const, durationNs: 5n };
    for (const settlementStatus of ['succeeded', 'failed', 'unknown'] as const) {
      const fact = EffectFinished.create({ ...base, settlementStatus });
      assert.equal(fact.failure, undefined);
      assert.ok(EffectFinished.parse(fact.json()).equals(fact));
    }
    assert.throws(() => EffectFinished.create({ ...base, settlementStatus: 'succeeded', failure: classification }), invalidEvent);
    assert.throws(() => EffectFinished.create({ ...base, settlementStatus: 'failed', failure: classification }), invalidEvent);
    assert.throws(() => EffectFinished.create({ ...base, settlementStatus: 'pending' as never }), invalidEvent);
    assert.throws(() => EffectFinished.create({ ...base, durationNs: -5n, settlementStatus: 'failed' }), invalidEvent);
  });

  test('effect resolved is always definite', () => {
    assert.equal(
      EffectResolved.create({ target: 'dispatcher', settlementStatus: 'failed' }).json(),
      '{"settlement_status":"failed","target":"dispatcher"}',
    );
    assert.throws(() => EffectResolved.create({ target: 'dispatcher', settlementStatus: 'unknown' }), invalidEvent);
    assert.throws(() => EffectResolved.parse('{"settlement_status":"unknown","target":"dispatcher"}'), invalidEvent);
  });

  test('delta dropped counts at least one increment', () => {
    const fact = DeltaDropped.create({ attemptId, count: (1n << 64n) - 1n });
    assert.equal(DeltaDropped.parse(fact.json()).count, (1n << 64n) - 1n);
    assert.throws(() => DeltaDropped.create({ attemptId, count: 0n }), invalidEvent);
    assert.throws(() => DeltaDropped.create({ attemptId, count: 1n << 64n }), invalidEvent);
    assert.throws(() => DeltaDropped.parse(`{"attempt_id":"${attemptId.toString()}","count":0}`), invalidEvent);
    assert.throws(() => DeltaDropped.parse(`{"attempt_id":"${attemptId.toString()}","count":18446744073709551616}`), invalidEvent);
  });
});
