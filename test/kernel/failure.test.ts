import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseJson } from '../../src/kernel/canonical-json.js';
import { ClassifiedError, counterExhausted, stepFailure } from '../../src/kernel/classified-error.js';
import { KernelError } from '../../src/kernel/errors.js';
import {
  Failure,
  FailureClassification,
  failureKindValues,
  isFailureKind,
  maxDescriptionBytes,
  maxDiagnosticBytes,
  normalizeDiagnostic,
  parseFailureKind,
  unspecifiedDiagnostic,
  validDescription,
  validDiagnostic,
  type FailureKind,
} from '../../src/kernel/failure.js';
import { isStatus, isTerminalStatus, parseStatus, statusValues } from '../../src/kernel/status.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

describe('FailureKind', () => {
  test('accepts exactly the four kinds', () => {
    assert.deepEqual([...failureKindValues], ['execution', 'contract', 'external', 'panic']);
    for (const kind of failureKindValues) assert.equal(parseFailureKind(kind), kind);
  });

  test('rejects anything else with invalid_failure', () => {
    for (const value of ['', 'Execution', 'retryable', 'timeout', null, undefined, 1, {}]) {
      assert.equal(isFailureKind(value), false);
      assert.throws(() => parseFailureKind(value), code('invalid_failure'));
    }
  });
});

describe('diagnostics', () => {
  test('bounds are 4096 bytes', () => {
    assert.equal(maxDiagnosticBytes, 4096);
    assert.equal(maxDescriptionBytes, 4096);
  });

  test('validDiagnostic accepts non-empty trimmed well-formed text within the bound', () => {
    assert.equal(validDiagnostic('x'), true);
    assert.equal(validDiagnostic('step failed: quota\nexhausted'), true);
    assert.equal(validDiagnostic('a'.repeat(4096)), true);
    assert.equal(validDiagnostic('é'.repeat(2048)), true);
    assert.equal(validDiagnostic('😀'.repeat(1024)), true);
    // U+FEFF is not White_Space (Go's TrimSpace keeps it), so it may edge a message.
    assert.equal(validDiagnostic('\uFEFFx'), true);
  });

  test('validDiagnostic rejects empty, untrimmed, malformed and oversized text', () => {
    assert.equal(validDiagnostic(''), false);
    assert.equal(validDiagnostic(' x'), false);
    assert.equal(validDiagnostic('x\n'), false);
    assert.equal(validDiagnostic('\u00a0x'), false);
    assert.equal(validDiagnostic('x\u0085'), false);
    assert.equal(validDiagnostic('x\u3000'), false);
    assert.equal(validDiagnostic('x\u2007'), false);
    assert.equal(validDiagnostic('a\uD800b'), false);
    assert.equal(validDiagnostic('a\uDC00'), false);
    assert.equal(validDiagnostic('\uDFFF\uD800'), false);
    assert.equal(validDiagnostic('a'.repeat(4097)), false);
    assert.equal(validDiagnostic(`${'a'.repeat(4095)}é`), false);
    assert.equal(validDiagnostic(`${'😀'.repeat(1024)}a`), false);
    assert.equal(validDiagnostic(42), false);
    assert.equal(validDiagnostic(undefined), false);
  });

  test('validDescription applies the same checks without repairing', () => {
    assert.equal(validDescription('Echoes a value through an Engine-managed Effect.'), true);
    assert.equal(validDescription(' padded'), false);
    assert.equal(validDescription(''), false);
    assert.equal(validDescription('b'.repeat(4097)), false);
    assert.equal(validDescription('b'.repeat(4096)), true);
    assert.equal(validDescription('\uD83D'), false);
  });

  test('normalizeDiagnostic leaves a valid diagnostic unchanged', () => {
    for (const text of ['x', 'a b', 'é'.repeat(2048), '😀'.repeat(1024)]) {
      assert.equal(normalizeDiagnostic(text), text);
    }
  });

  test('normalizeDiagnostic trims surrounding white space', () => {
    assert.equal(normalizeDiagnostic('  \t step failed \n'), 'step failed');
    assert.equal(normalizeDiagnostic('\u0085\u00a0x\u2028\u3000'), 'x');
  });

  test('normalizeDiagnostic turns whitespace-only and empty text into the placeholder', () => {
    assert.equal(normalizeDiagnostic(''), unspecifiedDiagnostic);
    assert.equal(normalizeDiagnostic(' \n\t\u00a0\u3000 '), unspecifiedDiagnostic);
    assert.equal(validDiagnostic(unspecifiedDiagnostic), true);
  });

  test('normalizeDiagnostic replaces lone surrogates with U+FFFD and keeps pairs', () => {
    assert.equal(normalizeDiagnostic('a\uD800b'), 'a\uFFFDb');
    assert.equal(normalizeDiagnostic('\uDC00x'), '\uFFFDx');
    assert.equal(normalizeDiagnostic('x\uD83D'), 'x\uFFFD');
    assert.equal(normalizeDiagnostic('\uDE00\uD83D'), '\uFFFD\uFFFD');
    assert.equal(normalizeDiagnostic('ok 😀'), 'ok 😀');
  });

  test('normalizeDiagnostic truncates to 4096 bytes without splitting a multi-byte code point', () => {
    // 4095 ASCII bytes then a 2-byte letter: keeping it would need 4097 bytes, so it is dropped whole.
    const two = normalizeDiagnostic(`${'a'.repeat(4095)}é and more`);
    assert.equal(two, 'a'.repeat(4095));
    // 4094 + 3-byte '€' = 4097: dropped; 4093 + '€' = 4096: kept.
    assert.equal(normalizeDiagnostic(`${'a'.repeat(4094)}€x`), 'a'.repeat(4094));
    assert.equal(normalizeDiagnostic(`${'a'.repeat(4093)}€x`), `${'a'.repeat(4093)}€`);
    // A surrogate pair (4 bytes) is never cut in half.
    const emoji = normalizeDiagnostic(`${'a'.repeat(4094)}😀`);
    assert.equal(emoji, 'a'.repeat(4094));
    assert.equal(validDiagnostic(emoji), true);
    const many = normalizeDiagnostic('😀'.repeat(2000));
    assert.equal(many, '😀'.repeat(1024));
    assert.equal(utf8(many), 4096);
  });

  test('normalizeDiagnostic trims again after truncation', () => {
    const text = `${'a'.repeat(4000)}${' '.repeat(200)}tail`;
    assert.equal(normalizeDiagnostic(text), 'a'.repeat(4000));
  });

  test('normalizeDiagnostic measures replaced surrogates as 3 bytes', () => {
    const result = normalizeDiagnostic('\uD800'.repeat(2000));
    assert.equal(result, '\uFFFD'.repeat(1365));
    assert.ok(utf8(result) <= 4096);
  });

  test('normalizeDiagnostic output is always valid', () => {
    const samples = [
      '',
      ' ',
      '\uD800',
      `  ${'x'.repeat(10_000)}  `,
      `${'é'.repeat(3000)}`,
      `${' '.repeat(5000)}y`,
      `y${'\u00a0'.repeat(5000)}z`,
    ];
    for (const sample of samples) assert.equal(validDiagnostic(normalizeDiagnostic(sample)), true, sample.slice(0, 10));
  });
});

describe('FailureClassification', () => {
  test('holds kind and code only', () => {
    const classification = FailureClassification.of('external', 'engine.dispatch.failed');
    assert.equal(classification.kind, 'external');
    assert.equal(classification.code, 'engine.dispatch.failed');
    assert.equal(classification.json(), '{"code":"engine.dispatch.failed","kind":"external"}');
    assert.ok(FailureClassification.parse(classification.json()).equals(classification));
    assert.equal(classification.equals(FailureClassification.of('contract', 'engine.dispatch.failed')), false);
  });

  test('rejects an invalid kind or code', () => {
    assert.throws(() => FailureClassification.of('bad' as FailureKind, 'x.y'), code('invalid_failure'));
    assert.throws(() => FailureClassification.of('execution', 'X.Y'), code('invalid_failure'));
    assert.throws(() => FailureClassification.parse('{"kind":"panic","code":"a","message":"m"}'), code('invalid_failure'));
  });
});

describe('Failure', () => {
  const failure = Failure.create('execution', 'workflow.task.not_completed', 'task 3 did not complete');

  test('exposes kind, code, message and its classification', () => {
    assert.equal(failure.kind, 'execution');
    assert.equal(failure.code, 'workflow.task.not_completed');
    assert.equal(failure.message, 'task 3 did not complete');
    assert.ok(failure.classification().equals(FailureClassification.of('execution', 'workflow.task.not_completed')));
    assert.ok(Object.isFrozen(failure));
  });

  test('encodes canonically and round-trips', () => {
    const json = failure.json();
    assert.equal(json, '{"code":"workflow.task.not_completed","kind":"execution","message":"task 3 did not complete"}');
    assert.equal(Failure.parse(json).json(), json);
    assert.ok(Failure.parse(json).equals(failure));
  });

  test('decodes members in any order to the canonical form', () => {
    const parsed = Failure.parse(
      '{ "message": "task 3 did not complete", "kind": "execution", "code": "workflow.task.not_completed" }',
    );
    assert.equal(parsed.json(), failure.json());
  });

  test('every kind is accepted', () => {
    for (const kind of failureKindValues) assert.equal(Failure.create(kind, 'a.b', 'm').kind, kind);
  });

  test('create rejects an invalid kind, code or message', () => {
    assert.throws(() => Failure.create('retry' as FailureKind, 'a.b', 'm'), code('invalid_failure'));
    assert.throws(() => Failure.create('execution', '', 'm'), code('invalid_failure'));
    assert.throws(() => Failure.create('execution', 'Upper.case', 'm'), code('invalid_failure'));
    assert.throws(() => Failure.create('execution', '9lives', 'm'), code('invalid_failure'));
    assert.throws(() => Failure.create('execution', `a${'b'.repeat(128)}`, 'm'), code('invalid_failure'));
    assert.throws(() => Failure.create('execution', 'a.b', ''), code('invalid_failure'));
    assert.throws(() => Failure.create('execution', 'a.b', ' padded'), code('invalid_failure'));
    assert.throws(() => Failure.create('execution', 'a.b', 'x'.repeat(4097)), code('invalid_failure'));
    assert.throws(() => Failure.create('execution', 'a.b', 'bad \uD800'), code('invalid_failure'));
  });

  test('decode rejects missing, mistyped, invalid and unknown members', () => {
    const rejects = [
      '{"code":"a.b","message":"m"}',
      '{"kind":"execution","message":"m"}',
      '{"kind":"execution","code":"a.b"}',
      '{"kind":"fatal","code":"a.b","message":"m"}',
      '{"kind":"execution","code":"A","message":"m"}',
      '{"kind":"execution","code":"a.b","message":""}',
      '{"kind":"execution","code":"a.b","message":"m "}',
      `{"kind":"execution","code":"a.b","message":"${'m'.repeat(4097)}"}`,
      '{"kind":"execution","code":"a.b","message":"\\ud800"}',
      '{"kind":"execution","code":"a.b","message":1}',
      '{"kind":"execution","code":"a.b","message":null}',
      '{"kind":"execution","code":"a.b","message":"m","retryable":true}',
      '["execution","a.b","m"]',
      '{"kind":"execution","kind":"execution","code":"a.b","message":"m"}',
      '',
    ];
    for (const input of rejects) assert.throws(() => Failure.parse(input), code('invalid_failure'), input);
  });

  test('fromWire names the JSON path and uses the parent code', () => {
    const node = parseJson('{"kind":"execution","code":"a.b","message":" m"}');
    assert.throws(
      () => Failure.fromWire(node, '/termination/failure', 'invalid_termination'),
      (error: unknown) =>
        error instanceof KernelError &&
        error.code === 'invalid_termination' &&
        error.message.includes('/termination/failure/message'),
    );
  });
});

describe('ClassifiedError and stepFailure', () => {
  const quota = new ClassifiedError('execution', 'workflow.quota.exhausted', 'quota exhausted');

  test('declares kind, code and message', () => {
    assert.equal(quota.kind, 'execution');
    assert.equal(quota.code, 'workflow.quota.exhausted');
    assert.equal(quota.message, 'quota exhausted');
    assert.ok(quota instanceof Error);
    assert.ok(quota.classification().equals(FailureClassification.of('execution', 'workflow.quota.exhausted')));
  });

  test('an invalid declaration is a programming error', () => {
    assert.throws(() => new ClassifiedError('oops' as FailureKind, 'a.b', 'm'), code('invalid_failure'));
    assert.throws(() => new ClassifiedError('execution', 'Not.Qualified', 'm'), code('invalid_failure'));
    assert.throws(() => new ClassifiedError('execution', 'a.b', ''), code('invalid_failure'));
    assert.throws(() => new ClassifiedError('execution', 'a.b', 'trailing '), code('invalid_failure'));
  });

  test('the engine counter sentinel', () => {
    assert.equal(counterExhausted.kind, 'execution');
    assert.equal(counterExhausted.code, 'engine.counter.exhausted');
    assert.equal(counterExhausted.message, 'counter exhausted');
  });

  test('a thrown sentinel becomes its own Failure', () => {
    const failure = stepFailure(quota);
    assert.ok(failure);
    assert.equal(failure.json(), Failure.create('execution', 'workflow.quota.exhausted', 'quota exhausted').json());
  });

  test('the cause chain is walked and the complete wrapped diagnostic kept', () => {
    const wrapped = new Error('loading plan 3', { cause: new Error('reading budget', { cause: quota }) });
    const failure = stepFailure(wrapped);
    assert.ok(failure);
    assert.equal(failure.kind, 'execution');
    assert.equal(failure.code, 'workflow.quota.exhausted');
    assert.equal(failure.message, 'loading plan 3: reading budget: quota exhausted');
  });

  test('a message that already embeds the inner text is not repeated', () => {
    const inner = quota.wrap('reading budget');
    assert.equal(inner.message, 'reading budget: quota exhausted');
    const outer = new Error(`step 4: ${inner.message}`, { cause: inner });
    assert.equal(stepFailure(outer)?.message, 'step 4: reading budget: quota exhausted');
  });

  test('the persisted message is normalised', () => {
    const outer = new Error(`  ${'x'.repeat(5000)}`, { cause: quota });
    const failure = stepFailure(outer);
    assert.ok(failure);
    assert.equal(utf8(failure.message) <= 4096, true);
    assert.equal(failure.message, 'x'.repeat(4096));
    const lone = stepFailure(new Error('bad \uD800', { cause: quota }));
    assert.equal(lone?.message, 'bad \uFFFD: quota exhausted');
  });

  test('no sentinel means the engine classifies the error', () => {
    assert.equal(stepFailure(new Error('plain')), undefined);
    assert.equal(stepFailure(new Error('wrapped', { cause: new Error('plain') })), undefined);
    assert.equal(stepFailure('a string'), undefined);
    assert.equal(stepFailure(undefined), undefined);
    assert.equal(stepFailure(null), undefined);
    assert.equal(stepFailure({ message: 'not an error', kind: 'execution', code: 'a.b' }), undefined);
  });

  test('a cancellation in the chain is classified by the engine', () => {
    const abort = new DOMException('The operation was aborted', 'AbortError');
    assert.equal(stepFailure(new Error('step', { cause: abort })), undefined);
    const timeout = new DOMException('timed out', 'TimeoutError');
    assert.equal(stepFailure(new Error('outer', { cause: new Error(quota.message, { cause: timeout }) })), undefined);
    const abortWithSentinel = new Error('aborted', { cause: quota });
    abortWithSentinel.name = 'AbortError';
    assert.equal(stepFailure(abortWithSentinel), undefined);
  });

  test('a cyclic cause chain terminates', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    Object.defineProperty(a, 'cause', { value: b });
    assert.equal(stepFailure(b), undefined);
  });

  test('a sentinel is frozen and carries no cause of its own', () => {
    assert.ok(Object.isFrozen(quota));
    assert.equal(quota.cause, undefined);
  });

  test('isIn finds the sentinel anywhere in the chain', () => {
    assert.equal(quota.isIn(quota.wrap('ctx')), true);
    assert.equal(quota.isIn(new Error('x')), false);
    assert.equal(counterExhausted.isIn(quota), false);
  });
});

describe('Status', () => {
  test('accepts exactly the eight statuses', () => {
    assert.deepEqual(
      [...statusValues],
      ['running', 'waiting', 'paused', 'completed', 'failed', 'canceled', 'timed_out', 'killed'],
    );
    for (const status of statusValues) assert.equal(parseStatus(status), status);
  });

  test('rejects anything else with invalid_status', () => {
    for (const value of ['', 'cancelled', 'timedout', 'Running', 'succeeded', null, 3]) {
      assert.equal(isStatus(value), false);
      assert.throws(() => parseStatus(value), code('invalid_status'));
    }
  });

  test('terminal statuses', () => {
    const terminal = statusValues.filter((status) => isTerminalStatus(status));
    assert.deepEqual(terminal, ['completed', 'failed', 'canceled', 'timed_out', 'killed']);
  });
});
