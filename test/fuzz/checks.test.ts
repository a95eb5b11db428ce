/** The fuzzer's verdict on one answer: what counts as a violation, and what does not. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkExchange, checkResponse } from '../../scripts/fuzz/checks.js';
import type { RawResponse } from '../../scripts/fuzz/raw-client.js';

const rules = { problemCodes: new Set(['invalid_request', 'stream_capacity', 'internal_error']) };

function response(status: number, headers: Record<string, string>, body: unknown): RawResponse {
  return { status, headers, body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), streamed: false };
}

const problem = (status: number, code: string) => response(status, { 'content-type': 'application/problem+json; charset=utf-8' }, { status, code });

test('a catalogued problem+json error is no violation; neither is load shedding (503, Retry-After, a catalogue code)', () => {
  assert.deepEqual(checkResponse(problem(400, 'invalid_request'), rules, 'GET'), []);
  const shed = problem(503, 'stream_capacity');
  assert.deepEqual(checkResponse({ ...shed, headers: { ...shed.headers, 'retry-after': '1' } }, rules, 'GET'), []);
  assert.deepEqual(checkResponse(response(200, { 'content-type': 'application/json' }, { ok: true }), rules, 'GET'), []);
});

test('a 5xx is a violation, a 503 without Retry-After too, even as a catalogued problem', () => {
  assert.deepEqual(checkResponse(problem(500, 'internal_error'), rules, 'GET').map((v) => v.rule), ['5xx']);
  assert.deepEqual(checkResponse(problem(503, 'stream_capacity'), rules, 'GET').map((v) => v.rule), ['5xx']);
});

test('an error that is not problem+json, or carries a code outside the catalogue, or a wrong status, is a violation', () => {
  assert.deepEqual(checkResponse(response(400, { 'content-type': 'text/plain' }, 'Bad Request'), rules, 'GET').map((v) => v.rule), ['problem+json', 'problem+json']);
  assert.deepEqual(checkResponse(problem(404, 'no_such_code'), rules, 'GET').map((v) => v.rule), ['catalogue']);
  assert.deepEqual(checkResponse(response(409, { 'content-type': 'application/problem+json' }, { status: 400, code: 'invalid_request' }), rules, 'GET').map((v) => v.rule), ['problem-status']);
  assert.deepEqual(checkResponse(response(200, { 'content-type': 'application/json' }, '{"trunc'), rules, 'GET').map((v) => v.rule), ['json']);
});

test('no answer is a violation unless the case allows the server to close; a refused connection is a crash', () => {
  assert.deepEqual(checkExchange({ kind: 'closed', partial: '' }, rules, 'POST', false).map((v) => v.rule), ['no-answer']);
  assert.deepEqual(checkExchange({ kind: 'closed', partial: '' }, rules, 'POST', true), []);
  assert.deepEqual(checkExchange({ kind: 'timeout', partial: '' }, rules, 'POST', true).map((v) => v.rule), ['no-answer']);
  assert.deepEqual(checkExchange({ kind: 'closed', partial: '', error: 'ECONNREFUSED' }, rules, 'GET', true).map((v) => v.rule), ['crash']);
});
