/**
 * The three coordination Definitions against the Definition conformance suite (determinism,
 * isolation, exact Snapshot → Restore, per-batch validation, rejected Steps), over fixtures of
 * their own; every protocol violation is the contract failure `coordination.protocol.invalid`.
 */
import { Payload } from '../../../src/kernel/index.js';
import { runDefinitionConformance } from '../../../src/testing/definition-conformance.js';
import {
  answer,
  cancelReceipt,
  childAnswer,
  childAt,
  childOpening,
  competition,
  deadlineTestDefinition,
  effectAt,
  gateDefinition,
  opening,
  settlement,
  smallBudget,
  startRefused,
  startResult,
  state,
  unaddressed,
  waitAt,
} from './fixtures.js';

const protocol = { failureKind: 'contract', failureCode: 'coordination.protocol.invalid' } as const;
const gateWait = waitAt(1);
const gateKind = 'test.coordination.gate';
const gateWaiting = state(gateKind, { phase: 'waiting', request: { question: 'q' }, wait_id: gateWait.toString() });

runDefinitionConformance('InputGate', {
  definition: gateDefinition,
  input: Payload.encode({ question: 'ship it?' }),
  initialSignals: [],
  followingSignals: [[opening(gateWait)], [answer('answer-1', gateWait, { approved: true, comment: 'yes' })]],
  restoredCases: [
    { name: 'waiting for the answer', state: gateWaiting, signals: [answer('a', gateWait, { approved: false })] },
    {
      name: 'the opening and the answer in one window',
      state: state(gateKind, { phase: 'awaiting_open', request: { question: 'q' } }),
      signals: [opening(gateWait), answer('a', gateWait, { approved: true })],
    },
    { name: 'an empty window keeps waiting', state: gateWaiting, signals: [], followingSignals: [[answer('b', gateWait, { approved: true })]] },
  ],
  rejectedCases: [
    { name: 'input before the wait', state: state(gateKind, { phase: 'ready', request: { question: 'q' } }), signals: [unaddressed('n', {})], ...protocol },
    { name: 'no opening', state: state(gateKind, { phase: 'awaiting_open', request: { question: 'q' } }), signals: [answer('a', gateWait, { approved: true })], ...protocol },
    { name: 'an unaddressed signal', state: gateWaiting, signals: [unaddressed('n', { approved: true })], ...protocol },
    { name: 'an answer to another wait', state: gateWaiting, signals: [answer('a', waitAt(7), { approved: true })], ...protocol },
    { name: 'two answers', state: gateWaiting, signals: [answer('a', gateWait, { approved: true }), answer('b', gateWait, { approved: false })], ...protocol },
    { name: 'a malformed answer', state: gateWaiting, signals: [answer('a', gateWait, { approved: 'yes' })], ...protocol },
  ],
});

const instant = '2026-12-02T00:00:05Z';
const deadlineKind = 'test.coordination.deadline';
const timing = state(deadlineKind, { phase: 'timing', at: instant });

runDefinitionConformance('Deadline', {
  definition: deadlineTestDefinition,
  input: Payload.encode(instant),
  initialSignals: [],
  followingSignals: [[settlement(effectAt(1), 'succeeded', { at: instant, firedAt: '2026-12-02T00:00:05.001Z' })]],
  restoredCases: [
    { name: 'interrupted', state: timing, signals: [settlement(effectAt(1), 'failed', {})] },
    { name: 'resolved unknown as succeeded', state: state(deadlineKind, { phase: 'timing', at: '2030-01-01T12:00:00.5+02:00' }), signals: [settlement(effectAt(1), 'succeeded', {})] },
  ],
  rejectedCases: [
    { name: 'a signal before the timer', state: state(deadlineKind, { phase: 'ready', at: instant }), signals: [unaddressed('n', 1)], ...protocol },
    { name: 'no settlement', state: timing, signals: [unaddressed('n', 1)], ...protocol },
    { name: 'more than the settlement', state: timing, signals: [settlement(effectAt(1), 'succeeded', {}), unaddressed('n', 1)], ...protocol },
  ],
});

const fsKind = 'test.coordination.first-success';
const candidates = [
  { deployment: 'demo.echo', input: { value: 'reject' }, budget: smallBudget },
  { deployment: 'demo.echo', input: { value: 'b' }, budget: smallBudget },
  { deployment: 'demo.echo', input: { value: 'c' }, budget: smallBudget },
];
const [c0, c1, c2] = [childAt(1, 0), childAt(1, 1), childAt(1, 2)];
const started = [c0.toString(), c1.toString(), c2.toString()];
const fsWaiting = state(fsKind, { phase: 'waiting', candidates, started, outcomes: [], canceled: [], wait_id: waitAt(2).toString() });

runDefinitionConformance('FirstSuccess', {
  definition: competition(),
  input: Payload.encode(candidates),
  initialSignals: [],
  followingSignals: [
    [startResult(1, 0), startResult(1, 1), startResult(1, 2)],
    [childOpening(waitAt(2))],
    // The rejected echo and a success arrive together: the accepted one wins, the third is canceled.
    [childAnswer(waitAt(2), [{ id: c0, output: { value: 'reject' } }, { id: c1, output: { value: 'b' } }])],
    [cancelReceipt(3, 0)],
  ],
  restoredCases: [
    { name: 'no winner yet, wait again', state: fsWaiting, signals: [childAnswer(waitAt(2), [{ id: c0, output: { value: 'reject' } }])], followingSignals: [[childOpening(waitAt(3))]] },
    { name: 'every candidate failed', state: fsWaiting, signals: [childAnswer(waitAt(2), [{ id: c0, failure: 'x.failed' }, { id: c1, failure: 'x.failed' }, { id: c2, failure: 'x.failed' }])] },
    {
      name: 'a refused start',
      state: state(fsKind, { phase: 'starting', candidates, started: [], outcomes: [], canceled: [] }),
      signals: [startRefused(1, 0, 'engine.child.tree_limit'), startResult(1, 1), startResult(1, 2)],
    },
  ],
  rejectedCases: [
    { name: 'missing start results', state: state(fsKind, { phase: 'starting', candidates, started: [], outcomes: [], canceled: [] }), signals: [startResult(1, 0)], ...protocol },
    { name: 'an answer from a stranger', state: fsWaiting, signals: [childAnswer(waitAt(2), [{ id: childAt(9), output: {} }])], ...protocol },
    { name: 'an answer to another wait', state: fsWaiting, signals: [childAnswer(waitAt(5), [{ id: c0, output: {} }])], ...protocol },
    { name: 'host input', state: fsWaiting, signals: [unaddressed('n', {})], ...protocol },
  ],
});
