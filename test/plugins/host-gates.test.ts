import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import request from 'supertest';
import { createKey } from '../../src/app/auth/key-store.js';
import { scopeValues } from '../../src/app/auth/scopes.js';
import { hostGateAnswerKey, hostGateKey } from '../../src/store/redis/keys.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { problemOf, startServer, until, type TestServer } from './server.js';

/**
 * Host-owned gates (issue 16): opened by an external system with `POST /v1/gates`, answered exactly
 * once by a person (or an `open_url` callback with its one-time token), read by the opener with a
 * long poll woken by the answer, closed by the opener (which deletes the answer), capped per tenant
 * and per cluster, expiring. The same behaviour in embedded and Redis mode.
 */

const shipSchema = { type: 'object', properties: { ship: { type: 'boolean', description: 'Ship it?' }, note: { type: 'string' } }, required: ['ship'], additionalProperties: false };
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

let redis: RedisServer;
before(async () => {
  redis = await startRedisServer();
});
after(async () => {
  await redis?.stop();
});

for (const mode of ['embedded', 'redis'] as const) {
  describe(`host-owned gates (${mode})`, () => {
    let server: TestServer;
    let client: Redis | undefined;
    const prefix = `hostgates${process.pid}`;
    const env = (extra: Record<string, string> = {}): Record<string, string> => (mode === 'redis' ? { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: `${prefix}${Object.keys(extra).length}${Math.random().toString(36).slice(2, 6)}`, ...extra } : extra);
    before(async () => {
      const settings = env();
      server = await startServer({ env: settings });
      if (mode === 'redis') client = new Redis(redis.url);
      (server as { prefix?: string }).prefix = settings.SCOPE_KEY_PREFIX;
    });
    after(async () => {
      client?.disconnect();
      await server?.close();
    });

    const open = (body: unknown, on: TestServer = server) => request(on.url).post('/v1/gates').send(body as object);
    const gatePath = (id: string, tail = '') => `/v1/gates/${encodeURIComponent(id)}${tail}`;
    const answer = (id: string, body: unknown, on: TestServer = server) => request(on.url).post(gatePath(id, '/answer')).send(body as object);
    const poll = (id: string, waitMs: number, on: TestServer = server) => request(on.url).get(gatePath(id, `/answer?waitMs=${waitMs}`));
    const close = (id: string, on: TestServer = server) => request(on.url).post(gatePath(id, '/close'));
    /** A barrier: resolves once `count` answer polls wait on the server (its metrics say so), so what follows must wake them. */
    const pollsWaiting = (count: number) => until(async () => (await request(server.url).get('/metrics')).text, (text) => new RegExp(`^scope_gate_answer_polls ${count}$`, 'm').test(text));
    const hostGates = async (query = '') => (await request(server.url).get(`/v1/gates?owner=host${query}`)).body.items as Array<{ gateId: string; state: string }>;

    test('a form gate: opened (201) with its view, listed, read; the same request id is the same gate (200), another body 409', async () => {
      const body = { kind: 'form', prompt: 'Ship v2?', answerSchema: shipSchema, requestId: `open-${mode}`, actor: 'ci' };
      const created = await open(body);
      assert.equal(created.status, 201, created.text);
      const gate = created.body.gate;
      assert.match(gate.gateId, /^hostgate:[0-9a-f]{32}$/);
      assert.equal(gate.owner, 'host');
      assert.equal(gate.kind, 'form');
      assert.equal(gate.state, 'open');
      assert.deepEqual(gate.subject, { tenant: 'default' });
      assert.equal(gate.prompt.text, 'Ship v2?');
      assert.deepEqual(gate.prompt.fields.map((field: { name: string; required: boolean }) => [field.name, field.required]), [['ship', true], ['note', false]]);
      assert.deepEqual(gate.answerSchema, shipSchema);
      assert.equal(gate.openedBy, 'ci');
      assert.equal(gate.answer, null);
      assert.equal(created.body.callbackUrl, null);
      // The default timeout is the maximum (7 days).
      assert.equal(Date.parse(gate.expiresAt) - Date.parse(gate.openedAt), 7 * 24 * 60 * 60 * 1000);

      const again = await open(body);
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.body.gate, gate);
      problemOf(await open({ ...body, prompt: 'Ship v3?' }), 409, 'gate_request_conflict');

      const read = await request(server.url).get(gatePath(gate.gateId));
      assert.equal(read.status, 200);
      assert.deepEqual(read.body, gate);
      assert.ok((await request(server.url).get('/v1/gates')).body.items.some((item: { gateId: string }) => item.gateId === gate.gateId), 'listed among open gates');
      assert.ok((await hostGates('&kind=form')).some((item) => item.gateId === gate.gateId));
      assert.equal((await hostGates('&kind=open_url')).some((item) => item.gateId === gate.gateId), false);
      // A tree or deployment filter names process-owned gates only.
      assert.equal((await request(server.url).get('/v1/gates?deployment=demo.approval')).body.items.some((item: { owner: string }) => item.owner === 'host'), false);
      assert.equal((await request(server.url).get('/v1/gates?owner=process')).body.items.some((item: { owner: string }) => item.owner === 'host'), false);
      problemOf(await request(server.url).get(gatePath('hostgate:00000000000000000000000000000000')), 404, 'gate_not_found');
    });

    test('concurrent creates under one request id open one gate: one 201, the rest 200 with it', async () => {
      const body = { kind: 'form', answerSchema: true, requestId: `race-${mode}` };
      const responses = await Promise.all(Array.from({ length: 10 }, () => open(body)));
      assert.deepEqual(responses.map((response) => response.status).sort(), [200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
      assert.equal(new Set(responses.map((response) => response.body.gate.gateId)).size, 1);
      assert.equal(new Set(responses.map((response) => response.body.gate.openedAt)).size, 1, 'one record');
      if (client !== undefined) {
        // The record lives until a day after its expiry (the retention), the answer only until the expiry.
        const keyPrefix = (server as { prefix?: string }).prefix as string;
        const gate = responses[0]?.body.gate;
        const expiry = await client.pexpiretime(hostGateKey(keyPrefix, gate.gateId));
        assert.equal(expiry, Date.parse(gate.expiresAt) + 24 * 60 * 60 * 1000);
        assert.equal((await answer(gate.gateId, { answer: 1, requestId: 'ttl' })).status, 200);
        assert.equal(await client.pexpiretime(hostGateAnswerKey(keyPrefix, gate.gateId)), Date.parse(gate.expiresAt));
      }
    });

    test('refused before anything is written: approval kind, a missing or broken schema, a bad URL, a timeout past the maximum', async () => {
      const before = (await hostGates()).length;
      problemOf(await open({ kind: 'approval', prompt: 'ok?', answerSchema: shipSchema }), 422, 'gate_kind_mismatch');
      const cases: Array<[unknown, string]> = [
        [{ kind: 'form', prompt: 'no schema' }, '/body/answerSchema'],
        [{ kind: 'form', answerSchema: { type: 'strng' } }, '/body/answerSchema/type'],
        [{ kind: 'form', answerSchema: { type: 'object', propertees: {} } }, '/body/answerSchema'],
        [{ kind: 'form', answerSchema: 42 }, '/body/answerSchema'],
        [{ kind: 'form', answerSchema: shipSchema, url: 'https://example.com/' }, '/body/url'],
        [{ kind: 'open_url' }, '/body/url'],
        [{ kind: 'open_url', url: 'ftp://example.com/file' }, '/body/url'],
        [{ kind: 'open_url', url: '/relative/path' }, '/body/url'],
        [{ kind: 'open_url', url: 'https://user:secret@example.com/' }, '/body/url'],
        [{ kind: 'form', answerSchema: shipSchema, timeoutMs: 8 * 24 * 60 * 60 * 1000 }, '/body/timeoutMs'],
      ];
      for (const [body, pointer] of cases) {
        const problem = problemOf(await open(body), 422, 'gate_payload_invalid');
        assert.ok(problem.errors?.some((error) => error.pointer === pointer), `${JSON.stringify(body)}: ${JSON.stringify(problem.errors)}`);
      }
      problemOf(await open({ kind: 'form', answerSchema: shipSchema, provenance: 'human' }), 400, 'invalid_request');
      assert.equal((await hostGates()).length, before, 'no gate was written');
    });

    test('answered once: a bad answer is 422 with pointers and the gate stays open; the winner is recorded; a retry is 200; another is 409 with the first', async () => {
      const { gateId } = (await open({ kind: 'form', answerSchema: shipSchema })).body.gate;
      const refused = problemOf(await answer(gateId, { answer: { ship: 'yes' }, requestId: 'r-1' }), 422, 'schema_validation_failed');
      assert.deepEqual(refused.errors?.map((error) => error.pointer), ['/body/answer/ship']);
      assert.equal((await request(server.url).get(gatePath(gateId))).body.state, 'open');

      const first = await answer(gateId, { answer: { ship: true, note: 'go' }, requestId: 'r-1', actor: 'ada' });
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.accepted, true);
      assert.equal(first.body.gate.state, 'answered');
      assert.deepEqual({ ...first.body.gate.answer, answeredAt: undefined }, { answeredAt: undefined, provenance: 'human', actor: 'ada', requestId: 'r-1', digest: sha256(JSON.stringify({ ship: true, note: 'go' })) });

      const retry = await answer(gateId, { answer: { ship: true, note: 'go' }, requestId: 'r-1', actor: 'ada' });
      assert.equal(retry.status, 200, retry.text);
      assert.equal(retry.body.accepted, false);
      const second = problemOf(await answer(gateId, { answer: { ship: false }, requestId: 'r-2', actor: 'bob' }), 409, 'gate_already_answered') as unknown as { firstAnswer: unknown };
      assert.deepEqual(second.firstAnswer, { answeredAt: first.body.gate.answer.answeredAt, provenance: 'human', actor: 'ada' });
      problemOf(await answer(gateId, { answer: { ship: false }, requestId: 'r-1' }), 409, 'gate_already_answered');
      problemOf(await answer(gateId, { answer: { ship: true }, requestId: 'r-3', provenance: 'api' }), 400, 'invalid_request');
      assert.deepEqual((await hostGates('&state=answered')).filter((item) => item.gateId === gateId).length, 1);
    });

    test('the opener\'s long poll is woken by the answer; close deletes the answer and keeps who, when and its digest', async () => {
      const { gateId } = (await open({ kind: 'form', prompt: 'Name?', answerSchema: { type: 'object', required: ['name'] } })).body.gate;
      const idle = await poll(gateId, 0);
      assert.equal(idle.status, 200);
      assert.equal(idle.body.gate.state, 'open');
      assert.equal(idle.body.answer, null);

      const started = Date.now();
      const waiting = poll(gateId, 60_000).then((response) => response);
      await pollsWaiting(1);
      const answered = await answer(gateId, { answer: { name: 'Ada' }, requestId: 'n-1', actor: 'ada' });
      assert.equal(answered.status, 200, answered.text);
      const woken = await waiting;
      assert.equal(woken.status, 200, woken.text);
      assert.ok(Date.now() - started < 30_000, 'woken, not timed out');
      assert.equal(woken.body.gate.state, 'answered');
      assert.deepEqual(woken.body.answer, { name: 'Ada' });

      const closed = await close(gateId);
      assert.equal(closed.status, 200, closed.text);
      assert.equal(closed.body.state, 'closed');
      assert.equal(closed.body.closedReason, 'closed');
      assert.equal(closed.body.answer.digest, sha256(JSON.stringify({ name: 'Ada' })));
      assert.equal(closed.body.answer.actor, 'ada');
      const after = await poll(gateId, 5_000);
      assert.equal(after.body.gate.state, 'closed');
      assert.equal(after.body.answer, null, 'the answer is gone after close');
      assert.equal(after.body.gate.answer.provenance, 'human');
      if (client !== undefined) {
        const keyPrefix = (server as { prefix?: string }).prefix as string;
        assert.equal(await client.exists(hostGateAnswerKey(keyPrefix, gateId)), 0, 'the answer key is deleted');
        assert.equal(await client.hget(hostGateKey(keyPrefix, gateId), 'answerDigest'), sha256(JSON.stringify({ name: 'Ada' })));
      }
      problemOf(await answer(gateId, { answer: { name: 'Bob' }, requestId: 'n-2' }), 409, 'gate_closed');
      assert.equal((await close(gateId)).status, 200, 'close is idempotent');
      assert.ok((await hostGates('&state=closed')).some((item) => item.gateId === gateId));
    });

    test('a poll on an open gate is woken by its close', async () => {
      const { gateId } = (await open({ kind: 'form', answerSchema: true })).body.gate;
      const waiting = poll(gateId, 60_000).then((response) => response);
      await pollsWaiting(1);
      const started = Date.now();
      assert.equal((await close(gateId)).status, 200);
      const woken = await waiting;
      assert.ok(Date.now() - started < 30_000, 'woken by the close, not by waitMs');
      assert.equal(woken.body.gate.state, 'closed');
      assert.equal(woken.body.answer, null);
    });

    test('expiry: past its timeout a gate is closed (expired) and refuses answers; the poll returns at the expiry', async () => {
      const { gateId, expiresAt } = (await open({ kind: 'form', answerSchema: true, timeoutMs: 300 })).body.gate;
      const ended = await poll(gateId, 60_000);
      assert.equal(ended.body.gate.state, 'closed');
      assert.equal(ended.body.gate.closedReason, 'expired');
      assert.equal(ended.body.gate.closedAt, expiresAt);
      problemOf(await answer(gateId, { answer: 'late', requestId: 'late' }), 409, 'gate_closed');
      assert.equal((await hostGates()).some((item) => item.gateId === gateId), false, 'not listed as open');
    });

    test('open_url: the callback URL carries a one-time signed token; a tampered or foreign token is 401, a spent one 409', async () => {
      const created = await open({ kind: 'open_url', prompt: 'Sign the contract', url: 'https://sign.example.com/doc/42', answerSchema: { type: 'object', required: ['signed'] } });
      assert.equal(created.status, 201, created.text);
      const { gate, callbackUrl } = created.body;
      assert.equal(gate.kind, 'open_url');
      assert.equal(gate.url, 'https://sign.example.com/doc/42');
      assert.match(callbackUrl, /^\/v1\/gates\/hostgate%3A[0-9a-f]{32}\/callback\?token=[A-Za-z0-9_-]{43}$/);
      const token = new URL(callbackUrl, server.url).searchParams.get('token') as string;
      const other = (await open({ kind: 'open_url', url: 'https://sign.example.com/doc/43' })).body;
      const otherToken = new URL(other.callbackUrl, server.url).searchParams.get('token') as string;

      const tampered = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
      problemOf(await request(server.url).post(gatePath(gate.gateId, `/callback?token=${tampered}`)).send({ answer: { signed: true } }), 401, 'gate_token_invalid');
      problemOf(await request(server.url).post(gatePath(gate.gateId, `/callback?token=${otherToken}`)).send({ answer: { signed: true } }), 401, 'gate_token_invalid');
      problemOf(await request(server.url).post(gatePath(gate.gateId, `/callback?token=${token}`)).send({ answer: { nope: 1 } }), 422, 'schema_validation_failed');
      assert.equal((await request(server.url).get(gatePath(gate.gateId))).body.state, 'open');

      const called = await request(server.url).post(callbackUrl).send({ answer: { signed: true } });
      assert.equal(called.status, 200, called.text);
      assert.equal(called.body.gate.state, 'answered');
      assert.equal(called.body.gate.answer.provenance, 'api');
      assert.equal(called.body.gate.answer.actor, null);
      problemOf(await request(server.url).post(callbackUrl).send({ answer: { signed: true } }), 409, 'gate_token_used');
      const late = problemOf(await answer(gate.gateId, { answer: { signed: false }, requestId: 'p' }), 409, 'gate_already_answered') as unknown as { firstAnswer: { provenance: string } };
      assert.equal(late.firstAnswer.provenance, 'api');
      assert.deepEqual((await poll(gate.gateId, 0)).body.answer, { signed: true });
      // Answered through the route first, the callback finds it answered.
      const answeredFirst = (await open({ kind: 'open_url', url: 'https://sign.example.com/doc/44' })).body;
      assert.equal((await answer(answeredFirst.gate.gateId, { answer: 'done', requestId: 'x' })).status, 200);
      problemOf(await request(server.url).post(answeredFirst.callbackUrl).send({ answer: 'again' }), 409, 'gate_already_answered');
    });

    test('a process-owned gate is not closed, polled or called back through these routes', async () => {
      const started = await request(server.url).post('/v1/processes').send({ deployment: 'demo.approval', input: { subject: 'owner' } });
      const processId = started.body.processId as string;
      const gate = await until(async () => (await request(server.url).get(`/v1/gates?rootId=${encodeURIComponent(processId)}`)).body.items?.[0], (item) => item !== undefined);
      problemOf(await close(gate.gateId), 409, 'gate_owner_mismatch');
      problemOf(await poll(gate.gateId, 0), 409, 'gate_owner_mismatch');
      problemOf(await close('gate:bm90LWEtZ2F0ZQ'), 404, 'gate_not_found');
    });

    test('caps: per tenant and per cluster, 429 gate_capacity with Retry-After; closed and expired gates are not counted', async () => {
      const tenantCapped = await startServer({ env: env({ SCOPE_GATE_MAX_PER_TENANT: '2' }) });
      const clusterCapped = await startServer({ env: env({ SCOPE_GATE_MAX_PER_TENANT: '5', SCOPE_GATE_MAX_OPEN: '2' }) });
      try {
        for (const [capped, scope] of [[tenantCapped, 'SCOPE_GATE_MAX_PER_TENANT'], [clusterCapped, 'SCOPE_GATE_MAX_OPEN']] as const) {
          const first = (await open({ kind: 'form', answerSchema: true }, capped)).body.gate.gateId as string;
          const short = (await open({ kind: 'form', answerSchema: true, timeoutMs: 300 }, capped)).body.gate.gateId as string;
          const refused = await open({ kind: 'form', answerSchema: true }, capped);
          const problem = problemOf(refused, 429, 'gate_capacity');
          assert.match(problem.detail, new RegExp(scope));
          assert.ok(Number(refused.headers['retry-after']) >= 1, `Retry-After ${refused.headers['retry-after']}`);
          // The short one expires (its poll returns then): it no longer counts.
          assert.equal((await poll(short, 60_000, capped)).body.gate.closedReason, 'expired');
          const third = await open({ kind: 'form', answerSchema: true }, capped);
          assert.equal(third.status, 201, third.text);
          problemOf(await open({ kind: 'form', answerSchema: true }, capped), 429, 'gate_capacity');
          // A closed one does not count either.
          assert.equal((await close(first, capped)).status, 200);
          assert.equal((await open({ kind: 'form', answerSchema: true }, capped)).status, 201);
        }
      } finally {
        await Promise.all([tenantCapped.close(), clusterCapped.close()]);
      }
    });

    test('tenants: with authentication on, a host-owned gate is its opener\'s tenant\'s; another tenant gets 404 and does not list it', async () => {
      const directory = mkdtempSync(join(tmpdir(), 'scope-hostgates-'));
      const keysFile = join(directory, 'keys.json');
      const acme = createKey({ id: 'acme-ci', tenant: 'acme', scopes: [...scopeValues] });
      const globex = createKey({ id: 'globex-ci', tenant: 'globex', scopes: [...scopeValues] });
      writeFileSync(keysFile, JSON.stringify({ keys: [acme.entry, globex.entry] }));
      const secured = await startServer({ env: env({ SCOPE_AUTH: 'keys', SCOPE_API_KEYS_FILE: keysFile }) });
      const as = (key: { token: string }) => ({ authorization: `Bearer ${key.token}` });
      try {
        const created = await request(secured.url).post('/v1/gates').set(as(acme)).send({ kind: 'open_url', url: 'https://example.com/x', actor: 'spoofed' });
        assert.equal(created.status, 201, created.text);
        const { gate, callbackUrl } = created.body;
        assert.deepEqual(gate.subject, { tenant: 'acme' });
        assert.equal(gate.openedBy, 'acme-ci', 'the principal, not the label sent');
        problemOf(await request(secured.url).get(gatePath(gate.gateId)).set(as(globex)), 404, 'gate_not_found');
        problemOf(await request(secured.url).post(gatePath(gate.gateId, '/answer')).set(as(globex)).send({ answer: 1, requestId: 'g' }), 404, 'gate_not_found');
        problemOf(await request(secured.url).get(gatePath(gate.gateId, '/answer')).set(as(globex)), 404, 'gate_not_found');
        problemOf(await request(secured.url).post(gatePath(gate.gateId, '/close')).set(as(globex)), 404, 'gate_not_found');
        assert.equal((await request(secured.url).get('/v1/gates?owner=host').set(as(globex))).body.items.length, 0);
        assert.deepEqual((await request(secured.url).get('/v1/gates?owner=host').set(as(acme))).body.items.map((item: { gateId: string }) => item.gateId), [gate.gateId]);
        problemOf(await request(secured.url).post('/v1/gates').send({ kind: 'form', answerSchema: true }), 401, 'unauthorized');
        // The callback needs no API key: its token is the authority.
        const called = await request(secured.url).post(callbackUrl).send({ answer: 'visited' });
        assert.equal(called.status, 200, called.text);
        assert.equal(called.body.gate.answer.provenance, 'api');
      } finally {
        await secured.close();
      }
    });
  });
}
