import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ChildWaitCondition, ChildWaitSpec } from '../../src/kernel/effect.js';
import { KernelError } from '../../src/kernel/errors.js';
import { EffectId, ProcessId, SignalId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import {
  childWaitOpenedPayload,
  childWaitSatisfiedPayload,
  Mailbox,
  MailboxRecord,
  waitOpenedPayload,
  type ChildWaitAnswerRenderer,
} from '../../src/kernel/mailbox.js';
import { Payload } from '../../src/kernel/payload.js';
import { Result } from '../../src/kernel/result.js';
import { Schema } from '../../src/kernel/schema.js';
import { SignalRequest } from '../../src/kernel/signal.js';
import { Termination } from '../../src/kernel/termination.js';
import { Usage } from '../../src/kernel/usage.js';

const rejects = (run: () => unknown, code: string, fragment: string): void => {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof KernelError, `expected a KernelError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.ok(error.message.includes(fragment), `"${error.message}" should mention "${fragment}"`);
    return true;
  });
};

const owner = ProcessId.parse('process:00000000000000000000000000000001');
const effect = (step: bigint, index = 0): EffectId => EffectId.derive(owner, step, index);
const childA = ProcessId.parse('process:child-a');
const childB = ProcessId.parse('process:child-b');

const request = (id: string, payload: unknown = { id }, waitId?: WaitId): SignalRequest =>
  SignalRequest.create({ id, waitId, payload: Payload.encode(payload) });

const externalWait = WaitId.derive(effect(1n));
const childWait = WaitId.derive(effect(2n));
const spec = ChildWaitSpec.create({
  key: WaitKey.parse('children'),
  children: [childA, childB],
  boundary: 'terminal_result',
  condition: ChildWaitCondition.any(),
});

/** A renderer returning a fixed payload (the tree renders from captured children). */
const fixedRender: ChildWaitAnswerRenderer = () => Payload.encode({ rendered: true });

function history(): Mailbox {
  return Mailbox.empty().append(
    MailboxRecord.external(request('signal:a')),
    MailboxRecord.waitOpening(externalWait, { kind: 'external', key: WaitKey.parse('approval') }),
    MailboxRecord.settlement(effect(1n, 1), Payload.encode({ ok: true }), 'succeeded'),
    MailboxRecord.external(request('signal:answer', { approved: true }, externalWait)),
    MailboxRecord.waitOpening(childWait, { kind: 'children', spec }),
    MailboxRecord.childWaitAnswer(childWait, [childB], Payload.encode({ rendered: true })),
  );
}

describe('Mailbox values', () => {
  test('an empty mailbox has no records and a zero cursor', () => {
    const mailbox = Mailbox.empty();
    assert.equal(mailbox.json(), '{"records":[],"signal_cursor":0}');
    assert.equal(mailbox.length, 0);
    assert.equal(mailbox.pendingCount, 0);
    assert.deepEqual(mailbox.pendingSignals(), []);
  });

  test('append keeps arrival order; arrival sequence is the 1-based position', () => {
    const mailbox = history();
    assert.equal(mailbox.length, 6);
    assert.equal(mailbox.cursor, 0);
    const receipts = mailbox.receipts();
    assert.deepEqual(
      receipts.map((receipt) => receipt.arrivalSequence),
      [1n, 2n, 3n, 4n, 5n, 6n],
    );
    assert.equal(receipts[1]?.id.toString(), SignalId.waitOpened(externalWait).toString());
    assert.equal(receipts[2]?.id.toString(), SignalId.settlement(effect(1n, 1)).toString());
    assert.equal(receipts[5]?.id.toString(), SignalId.childWaitSatisfied(childWait).toString());
    assert.equal(receipts[2]?.status, 'succeeded');
    assert.ok(receipts.every((receipt) => !receipt.consumed));
  });

  test('pending records render their Signals; openings carry the fixed acknowledgements', () => {
    const signals = history().pendingSignals();
    assert.equal(signals.length, 6);
    assert.equal(signals[1]?.payload.json(), '{"operation":"wait"}');
    assert.equal(signals[1]?.waitId?.toString(), externalWait.toString());
    assert.equal(signals[4]?.payload.json(), childWaitOpenedPayload.json());
    assert.equal(signals[2]?.status, 'succeeded');
    assert.equal(waitOpenedPayload.json(), '{"operation":"wait"}');
    assert.equal(childWaitOpenedPayload.json(), '{"operation":"child_wait_opened"}');
  });

  test('consume releases payloads (keeping digests), advances the cursor and closes answered waits', () => {
    const before = history();
    assert.deepEqual(
      before.openWaits().map((wait) => wait.waitId.toString()),
      [externalWait.toString(), childWait.toString()],
    );
    const after = before.consume(4);
    assert.equal(after.cursor, 4);
    assert.equal(after.pendingCount, 2);
    const receipt = after.receipt(SignalId.parse('signal:a'));
    assert.ok(receipt?.consumed);
    assert.equal(receipt?.pendingSignal(), undefined);
    assert.equal(receipt?.payloadDigest.toString(), Payload.encode({ id: 'signal:a' }).digest().toString());
    assert.equal(after.record(0)?.retained, false);
    assert.equal(after.record(1)?.retained, true, 'an opening always renders its fixed payload');
    assert.deepEqual(
      after.openWaits().map((wait) => wait.waitId.toString()),
      [childWait.toString()],
    );
    const closed = after.wait(externalWait);
    assert.ok(closed?.closed);
    assert.equal(closed?.answerIndex, 3);
    assert.equal(after.consume(2).openWaits().length, 0);
    assert.equal(before.consume(0), before);
  });

  test('consume rejects more than the pending window', () => {
    rejects(() => history().consume(7), 'invalid_snapshot', 'cannot consume 7 of 6');
    rejects(() => history().consume(-1), 'invalid_snapshot', 'cannot consume');
  });

  test('waits expose kind, key, spec and answers', () => {
    const mailbox = history();
    const external = mailbox.wait(externalWait);
    assert.equal(external?.kind, 'external');
    assert.equal(external?.key.toString(), 'approval');
    assert.equal(external?.answered, true);
    const children = mailbox.wait(childWait);
    assert.equal(children?.kind, 'children');
    assert.ok(children?.spec?.equals(spec));
    assert.equal(mailbox.openWaitFor(WaitKey.parse('children'))?.waitId.toString(), childWait.toString());
    assert.equal(mailbox.openWaitFor(WaitKey.parse('missing')), undefined);
  });

  test('receipts match only the identical external request', () => {
    const mailbox = history().consume(4);
    const answer = mailbox.receipt(SignalId.parse('signal:answer'));
    assert.ok(answer?.matches(request('signal:answer', { approved: true }, externalWait)));
    assert.equal(answer?.matches(request('signal:answer', { approved: false }, externalWait)), false);
    assert.equal(answer?.matches(request('signal:answer', { approved: true })), false);
    assert.equal(answer?.matches(request('signal:other', { approved: true }, externalWait)), false);
    const opening = mailbox.receipt(SignalId.waitOpened(externalWait));
    assert.ok(opening);
    assert.equal(mailbox.receipt(SignalId.parse('signal:never')), undefined);
    assert.equal(mailbox.indexOf(SignalId.parse('signal:answer')), 3);
  });

  test('pending receipts return their Signal', () => {
    const pending = history().receipt(SignalId.parse('signal:a'))?.pendingSignal();
    assert.equal(pending?.id.toString(), 'signal:a');
    assert.equal(pending?.payload.json(), '{"id":"signal:a"}');
  });

  test('settlement records accept only definite statuses', () => {
    assert.throws(
      () => MailboxRecord.settlement(effect(1n), Payload.encode({}), 'unknown' as 'failed'),
      (error: unknown) => error instanceof KernelError && error.code === 'invalid_snapshot',
    );
    assert.equal(MailboxRecord.settlement(effect(1n), Payload.encode({})).status, undefined);
  });

  test('sameDelivery compares identity, addressing, status and digest', () => {
    const a = MailboxRecord.external(request('signal:x'));
    assert.ok(a.sameDelivery(MailboxRecord.external(request('signal:x'))));
    assert.ok(a.sameDelivery(a.released()));
    assert.equal(a.sameDelivery(MailboxRecord.external(request('signal:x', { other: 1 }))), false);
  });
});

describe('Mailbox wire', () => {
  const expectedPending =
    '{"records":[' +
    '{"id":"signal:a","payload":{"id":"signal:a"}},' +
    `{"opens":{"key":"approval"},"wait_id":"${externalWait}"},` +
    `{"id":"${SignalId.settlement(effect(1n, 1))}","payload":{"ok":true},"status":"succeeded"},` +
    `{"id":"signal:answer","payload":{"approved":true},"wait_id":"${externalWait}"},` +
    `{"opens":{"spec":${spec.json()}},"wait_id":"${childWait}"},` +
    `{"answered":["${childB}"],"wait_id":"${childWait}"}` +
    '],"signal_cursor":0}';

  test('pending records keep payloads; openings and answers omit ids', () => {
    assert.equal(history().json(), expectedPending);
  });

  test('consumed records keep only the payload digest (and id, wait, status)', () => {
    const consumed = history().consume(6).json();
    assert.ok(consumed.includes(`{"id":"signal:a","payload_digest":"${Payload.encode({ id: 'signal:a' }).digest()}"}`));
    assert.ok(consumed.includes(`"status":"succeeded"`));
    assert.ok(consumed.includes(`{"payload_digest":"${Payload.encode({ rendered: true }).digest()}","wait_id":"${childWait}"}`));
    assert.ok(!consumed.includes('"payload":'));
    assert.ok(!consumed.includes('answered'));
    assert.ok(consumed.endsWith('"signal_cursor":6}'));
  });

  test('round trips (with a renderer for pending child-wait answers)', () => {
    for (const mailbox of [history(), history().consume(3), history().consume(6)]) {
      const back = Mailbox.parse(mailbox.json(), { renderChildWaitAnswer: fixedRender });
      assert.equal(back.json(), mailbox.json());
      assert.ok(back.equals(mailbox));
    }
  });

  test('member order and whitespace in the input do not matter', () => {
    const text = ' { "signal_cursor" : 1 , "records" : [ { "payload_digest" : "' +
      Payload.encode({ id: 'signal:a' }).digest() + '" , "id" : "signal:a" } ] } ';
    const back = Mailbox.parse(text);
    assert.equal(back.json(), Mailbox.empty().append(MailboxRecord.external(request('signal:a'))).consume(1).json());
  });

  test('a pending child-wait answer decodes only with a renderer', () => {
    rejects(() => Mailbox.parse(history().json()), 'invalid_snapshot', 'decodes only within its tree snapshot');
  });

  test('the renderer error is reported at the answer', () => {
    const failing: ChildWaitAnswerRenderer = () => {
      throw new Error('child gone');
    };
    rejects(
      () => Mailbox.parse(history().json(), { renderChildWaitAnswer: failing }),
      'invalid_snapshot',
      '/records/5/answered cannot be rendered from the tree: child gone',
    );
  });

  test('a caller-supplied code is used for every rejection', () => {
    rejects(() => Mailbox.parse('{"records":[]}', { code: 'invalid_tree_snapshot' }), 'invalid_tree_snapshot', 'signal_cursor is required');
  });

  const digest = Payload.encode({ x: 1 }).digest().toString();
  const opening = `{"opens":{"key":"k"},"wait_id":"${externalWait}"}`;
  const cases: Array<[string, string, string]> = [
    ['missing records', '{"signal_cursor":0}', '/records is required'],
    ['missing cursor', '{"records":[]}', '/signal_cursor is required'],
    ['unknown mailbox member', '{"records":[],"signal_cursor":0,"extra":1}', 'unknown member "extra"'],
    ['cursor beyond records', '{"records":[],"signal_cursor":1}', 'exceeds the 0 records'],
    ['unknown record member', '{"records":[{"id":"signal:a","payload":{},"x":1}],"signal_cursor":0}', 'unknown member "x"'],
    ['unknown opens member', `{"records":[{"opens":{"key":"k","x":1},"wait_id":"${externalWait}"}],"signal_cursor":0}`, 'unknown member "x"'],
    ['opens with key and spec', `{"records":[{"opens":{"key":"k","spec":${spec.json()}},"wait_id":"${externalWait}"}],"signal_cursor":0}`, 'exactly one of key or spec'],
    ['opens with neither', `{"records":[{"opens":{},"wait_id":"${externalWait}"}],"signal_cursor":0}`, 'exactly one of key or spec'],
    ['record without id or wait', '{"records":[{"payload":{}}],"signal_cursor":0}', 'needs an id'],
    ['pending without payload', '{"records":[{"id":"signal:a"}],"signal_cursor":0}', '/records/0/payload is required'],
    ['pending with digest', `{"records":[{"id":"signal:a","payload":{},"payload_digest":"${digest}"}],"signal_cursor":0}`, 'not allowed on a pending record'],
    ['consumed with payload', '{"records":[{"id":"signal:a","payload":{}}],"signal_cursor":1}', 'not allowed on a consumed record'],
    ['consumed without digest', '{"records":[{"id":"signal:a"}],"signal_cursor":1}', '/records/0/payload_digest is required'],
    ['malformed digest', '{"records":[{"id":"signal:a","payload_digest":"sha256:AB"}],"signal_cursor":1}', 'payload_digest is not valid'],
    ['external with status', '{"records":[{"id":"signal:a","payload":{},"status":"succeeded"}],"signal_cursor":0}', 'status is not allowed on a host input record'],
    ['settlement with wait', `{"records":[${opening},{"id":"${SignalId.settlement(effect(1n))}","payload":{},"wait_id":"${externalWait}"}],"signal_cursor":0}`, 'wait_id is not allowed on an engine settlement record'],
    ['unknown settlement status', `{"records":[{"id":"${SignalId.settlement(effect(1n))}","payload":{},"status":"unknown"}],"signal_cursor":0}`, 'must be succeeded or failed'],
    ['opening with payload', `{"records":[{"opens":{"key":"k"},"payload":{},"wait_id":"${externalWait}"}],"signal_cursor":0}`, 'payload is not allowed on a wait opening'],
    ['opening with digest', `{"records":[{"opens":{"key":"k"},"payload_digest":"${digest}","wait_id":"${externalWait}"}],"signal_cursor":1}`, 'payload_digest is not allowed on a wait opening'],
    ['opening with status', `{"records":[{"opens":{"key":"k"},"status":"failed","wait_id":"${externalWait}"}],"signal_cursor":0}`, 'status is not allowed on a wait opening'],
    ['pending answer with digest', `{"records":[{"opens":{"spec":${spec.json()}},"wait_id":"${childWait}"},{"answered":["${childA}"],"payload_digest":"${digest}","wait_id":"${childWait}"}],"signal_cursor":0}`, 'not allowed on a pending child-wait answer'],
    ['pending answer without children', `{"records":[{"opens":{"spec":${spec.json()}},"wait_id":"${childWait}"},{"wait_id":"${childWait}"}],"signal_cursor":0}`, 'answered is required'],
    ['consumed answer with children', `{"records":[{"opens":{"spec":${spec.json()}},"wait_id":"${childWait}"},{"answered":["${childA}"],"payload_digest":"${digest}","wait_id":"${childWait}"}],"signal_cursor":2}`, 'answered is not allowed on a consumed child-wait answer'],
    ['bad signal id', '{"records":[{"id":"bad id","payload":{}}],"signal_cursor":0}', '/records/0/id is not valid'],
    ['bad wait id', '{"records":[{"opens":{"key":"k"},"wait_id":"bad id"}],"signal_cursor":0}', '/records/0/wait_id is not valid'],
    ['invalid payload', '{"records":[{"id":"signal:a","payload":{"a":1,"a":2}}],"signal_cursor":0}', 'duplicate'],
  ];
  for (const [name, text, fragment] of cases) {
    test(`strict decode rejects: ${name}`, () => {
      rejects(() => Mailbox.parse(text, { renderChildWaitAnswer: fixedRender }), 'invalid_snapshot', fragment);
    });
  }
});

describe('Mailbox history rules', () => {
  const opening = (wait: WaitId, key = 'k'): MailboxRecord =>
    MailboxRecord.waitOpening(wait, { kind: 'external', key: WaitKey.parse(key) });
  const childOpening = (wait: WaitId): MailboxRecord => MailboxRecord.waitOpening(wait, { kind: 'children', spec });
  const answer = (wait: WaitId, children = [childA]): MailboxRecord =>
    MailboxRecord.childWaitAnswer(wait, children, Payload.encode({ rendered: true }));
  const waitB = WaitId.derive(effect(3n));

  test('a repeated signal id is rejected', () => {
    rejects(
      () => Mailbox.empty().append(MailboxRecord.external(request('signal:a')), MailboxRecord.external(request('signal:a'))),
      'invalid_snapshot',
      'repeats signal id signal:a',
    );
  });

  test('a wait opened twice is rejected', () => {
    rejects(() => Mailbox.empty().append(opening(externalWait), opening(externalWait, 'other')), 'invalid_snapshot', 'a second time');
  });

  test('an answer to a wait never opened (or opened later) is rejected', () => {
    rejects(
      () => Mailbox.empty().append(MailboxRecord.external(request('signal:x', {}, externalWait))),
      'invalid_snapshot',
      'which no earlier record opened',
    );
    rejects(
      () => Mailbox.empty().append(MailboxRecord.external(request('signal:x', {}, externalWait)), opening(externalWait)),
      'invalid_snapshot',
      'which no earlier record opened',
    );
  });

  test('host input cannot answer a child wait', () => {
    rejects(
      () => Mailbox.empty().append(childOpening(childWait), MailboxRecord.external(request('signal:x', {}, childWait))),
      'invalid_snapshot',
      'which only the Engine answers',
    );
  });

  test('the Engine cannot answer an external wait', () => {
    rejects(
      () => Mailbox.empty().append(opening(externalWait), answer(externalWait)),
      'invalid_snapshot',
      'is an Engine answer to external wait',
    );
  });

  test('a wait is answered at most once', () => {
    rejects(
      () =>
        Mailbox.empty().append(
          opening(externalWait),
          MailboxRecord.external(request('signal:x', {}, externalWait)),
          MailboxRecord.external(request('signal:y', {}, externalWait)),
        ),
      'invalid_snapshot',
      'answers',
    );
  });

  test('only one open wait per key: a second opening needs the first answer consumed', () => {
    const first = Mailbox.empty().append(opening(externalWait, 'same'));
    rejects(() => first.append(opening(waitB, 'same')), 'invalid_snapshot', 'opens a second wait for key same');
    const answered = first.append(MailboxRecord.external(request('signal:x', {}, externalWait)));
    rejects(() => answered.append(opening(waitB, 'same')), 'invalid_snapshot', 'still open');
    const closed = answered.consume(2).append(opening(waitB, 'same'));
    assert.equal(closed.openWaits().length, 1);
    // Child waits share the key namespace with external waits.
    rejects(
      () => Mailbox.empty().append(opening(externalWait, 'children'), childOpening(childWait)),
      'invalid_snapshot',
      'opens a second wait for key children',
    );
  });

  test('answered children must be awaited, distinct, in request order and enough', () => {
    rejects(() => Mailbox.empty().append(childOpening(childWait), answer(childWait, [ProcessId.parse('process:other')])), 'invalid_snapshot', 'does not await');
    rejects(() => Mailbox.empty().append(childOpening(childWait), answer(childWait, [childB, childA])), 'invalid_snapshot', 'request order');
    rejects(() => Mailbox.empty().append(childOpening(childWait), answer(childWait, [childA, childA])), 'invalid_snapshot', 'request order');
    const allSpec = ChildWaitSpec.create({
      key: WaitKey.parse('all'),
      children: [childA, childB],
      boundary: 'terminal_result',
      condition: ChildWaitCondition.all(),
    });
    rejects(
      () =>
        Mailbox.empty().append(
          MailboxRecord.waitOpening(childWait, { kind: 'children', spec: allSpec }),
          answer(childWait, [childA]),
        ),
      'invalid_snapshot',
      'fewer than the 2',
    );
  });

  test('retention must match the cursor', () => {
    const record = MailboxRecord.external(request('signal:a'));
    rejects(() => Mailbox.create([record], 1), 'invalid_snapshot', 'is consumed but still holds its payload');
    rejects(() => Mailbox.create([record.released()], 0), 'invalid_snapshot', 'is pending but released its payload');
    rejects(() => Mailbox.create([record], 2), 'invalid_snapshot', 'exceeds the 1 records');
  });
});

describe('The answer contract of an external wait opening', () => {
  const answerSchema = Schema.of({ type: 'object', properties: { add: { type: 'integer' } }, required: ['add'], additionalProperties: false });
  const opening = MailboxRecord.waitOpening(externalWait, { kind: 'external', key: WaitKey.parse('round-1'), answerSchema, prompt: 'How much?' });

  test('the opening keeps the schema and prompt on its wire and in its wait record', () => {
    const mailbox = Mailbox.empty().append(opening);
    assert.equal(
      opening.json(),
      `{"opens":{"answer_schema":${answerSchema.json()},"key":"round-1","prompt":"How much?"},"wait_id":"${externalWait.toString()}"}`,
    );
    const wait = mailbox.wait(externalWait);
    assert.ok(wait?.answerSchema?.equals(answerSchema));
    assert.equal(wait?.prompt, 'How much?');
    assert.ok(Mailbox.parse(mailbox.json()).equals(mailbox));
    // The delivered acknowledgement stays the fixed one.
    assert.ok(opening.signal()?.payload.equals(waitOpenedPayload));
  });

  test('a pending answer must satisfy the schema; a consumed one is only a digest', () => {
    const bad = MailboxRecord.external(request('signal:bad', { add: '2' }, externalWait));
    rejects(() => Mailbox.empty().append(opening, bad), 'invalid_snapshot', '/add');
    const good = Mailbox.empty().append(opening, MailboxRecord.external(request('signal:good', { add: 2 }, externalWait)));
    assert.equal(good.pendingCount, 2);
    const wire = JSON.parse(good.json()) as { records: Array<Record<string, unknown>> };
    wire.records[1]!.payload = { add: '2' };
    rejects(() => Mailbox.parse(JSON.stringify(wire)), 'invalid_snapshot', '/records/1');
  });

  test('consuming the answer closes the wait and drops the contract; a closed wait cannot keep it', () => {
    const answered = Mailbox.empty().append(opening, MailboxRecord.external(request('signal:good', { add: 2 }, externalWait)));
    const openingConsumed = answered.consume(1);
    assert.ok(openingConsumed.wait(externalWait)?.answerSchema?.equals(answerSchema), 'still open: the answer is pending');
    const closed = openingConsumed.consume(1);
    assert.equal(closed.wait(externalWait)?.closed, true);
    assert.equal(closed.wait(externalWait)?.answerSchema, undefined);
    assert.equal(closed.wait(externalWait)?.prompt, undefined);
    assert.doesNotMatch(closed.json(), /answer_schema|prompt/);
    // Both in one window: the same result.
    assert.equal(answered.consume(2).json(), closed.json());
    const stale = closed.records().map((record, index) => (index === 0 ? opening : record));
    rejects(() => Mailbox.create(stale, 2), 'invalid_snapshot', 'still keeps its answer schema or prompt');
  });

  test('openings are validated: child waits carry no contract, prompts are descriptive text', () => {
    const wire = JSON.parse(Mailbox.empty().append(opening).json()) as { records: Array<{ opens: Record<string, unknown> }> };
    const decode = (opens: unknown) => Mailbox.parse(JSON.stringify({ ...wire, records: [{ ...wire.records[0], opens }] }));
    rejects(() => decode({ key: 'round-1', prompt: '' }), 'invalid_snapshot', '/prompt');
    rejects(() => decode({ key: 'round-1', answer_schema: { type: 'strng' } }), 'invalid_snapshot', '/answer_schema');
    rejects(() => decode({ spec: JSON.parse(spec.json()), prompt: 'p' }), 'invalid_snapshot', 'carries no answer schema or prompt');
    assert.throws(() => MailboxRecord.waitOpening(externalWait, { kind: 'external', key: WaitKey.parse('k'), answerSchema: {} as Schema }), KernelError);
  });
});

describe('childWaitSatisfiedPayload', () => {
  const result = Result.create({
    processId: childA,
    startedAt: '2025-01-01T00:00:00Z',
    finishedAt: '2025-01-01T00:00:01Z',
    output: Payload.encode({ ok: 1 }),
    termination: Termination.completed(),
    usage: Usage.of(),
  });

  test('renders results in request order without key or boundary', () => {
    const payload = childWaitSatisfiedPayload(spec, [{ result }]);
    assert.equal(payload.json(), `{"operation":"child_wait_satisfied","outcomes":[{"result":${result.json()}}]}`);
  });

  test('drained waits report (sorted) subtree unresolved effects, even when empty', () => {
    const drained = ChildWaitSpec.create({
      key: WaitKey.parse('drained'),
      children: [childA],
      boundary: 'subtree_drained',
      condition: ChildWaitCondition.all(),
    });
    const e1 = EffectId.derive(childB, 1n, 0);
    const e2 = EffectId.derive(childA, 1n, 0);
    const payload = childWaitSatisfiedPayload(drained, [
      { result, subtreeUnresolved: [{ processId: childB, effectId: e1 }, { processId: childA, effectId: e2 }] },
    ]);
    const node = payload.decode<{ outcomes: Array<{ subtree_unresolved_effects: Array<{ process_id: string }> }> }>();
    assert.deepEqual(
      node.outcomes[0]?.subtree_unresolved_effects.map((entry) => entry.process_id),
      [childA.toString(), childB.toString()],
    );
    assert.ok(childWaitSatisfiedPayload(drained, [{ result, subtreeUnresolved: [] }]).json().includes('"subtree_unresolved_effects":[]'));
    assert.throws(() => childWaitSatisfiedPayload(drained, [{ result }]), /exactly for a subtree_drained wait/);
    assert.throws(() => childWaitSatisfiedPayload(spec, [{ result, subtreeUnresolved: [] }]), /exactly for a subtree_drained wait/);
  });
});
