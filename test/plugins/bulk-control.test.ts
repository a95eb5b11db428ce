import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { raw, resultOf, start, startServer, until, type TestServer } from './server.js';

/**
 * `POST /v1/processes:bulk` over real HTTP (issue 16): a dry run counts what a real run then acts on,
 * and changes nothing; a call is bounded and says where the next one continues; the literal colon in
 * the path is routed as such.
 */

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.close();
});

const bulk = (body: unknown) => raw(server, 'POST', '/v1/processes:bulk', { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const view = (id: string) => server.client.GET('/v1/processes/{id}', { params: { path: { id } } });

test('bulk cancel by filter: the dry run counts 12 sleeping roots and changes nothing; the real run cancels exactly those 12', async () => {
  const sleepers: string[] = [];
  for (let index = 0; index < 12; index += 1) sleepers.push((await start(server, 'demo.sleep', { ms: 600_000 })).processId);
  // Roots the filter must leave alone: another deployment, running too.
  const other = (await start(server, 'demo.approval', { subject: 'not a sleeper' })).processId;
  for (const id of sleepers) await until(() => view(id), (r) => r.data?.work === 'dispatch');

  const filter = { deployment: 'demo.sleep', status: 'running' };
  const dry = await bulk({ filter, action: 'cancel', dryRun: true });
  assert.equal(dry.status, 200, dry.text);
  assert.equal(dry.body.matched, 12);
  assert.equal(dry.body.affected, 0);
  assert.equal(dry.body.truncated, false);
  for (const id of sleepers) assert.equal((await view(id)).data?.status, 'running', 'a dry run changes nothing');

  const real = await bulk({ filter, action: 'cancel', reason: 'bulk stop' });
  assert.equal(real.status, 200, real.text);
  assert.deepEqual(
    { matched: real.body.matched, affected: real.body.affected, processesAffected: real.body.processesAffected, skipped: real.body.skipped, failed: real.body.failed },
    { matched: dry.body.matched, affected: dry.body.matched, processesAffected: 12, skipped: 0, failed: [] },
  );
  for (const id of sleepers) {
    const result = await resultOf(server, id);
    assert.equal(result.status, 'canceled');
    assert.equal(result.reason, 'bulk stop');
  }
  assert.equal((await view(other)).data?.status, 'waiting', 'outside the filter: untouched');
  assert.equal((await bulk({ filter, action: 'cancel', dryRun: true })).body.matched, 0, 'nothing running is left to match');
  await server.client.POST('/v1/processes/{id}/kill', { params: { path: { id: other } }, body: {} });
});

test('a bulk call is bounded: limit, truncated and nextCursor walk the list without repeating a root', async () => {
  const ids = new Set<string>();
  for (let index = 0; index < 5; index += 1) ids.add((await start(server, 'demo.approval', { subject: `page ${index}` })).processId);
  for (const id of ids) await until(() => view(id), (r) => r.data?.status === 'waiting');
  const filter = { deployment: 'demo.approval', status: 'waiting' };
  const first = await bulk({ filter, action: 'pause', limit: 3 });
  assert.equal(first.status, 200, first.text);
  assert.equal(first.body.truncated, true);
  assert.equal(typeof first.body.nextCursor, 'string');
  const second = await bulk({ filter, action: 'pause', limit: 3, cursor: first.body.nextCursor });
  assert.equal(second.status, 200, second.text);
  assert.equal(first.body.affected + second.body.affected, 5);
  for (const id of ids) assert.equal((await view(id)).data?.status, 'paused');
  const resumed = await bulk({ filter: { deployment: 'demo.approval', status: 'paused' }, action: 'resume' });
  assert.equal(resumed.body.affected, 5);
  assert.equal((await bulk({ filter: { deployment: 'demo.approval' }, action: 'kill' })).body.failed.length, 0);
});

test('bad bulk requests are problems, and only the literal `:bulk` path is routed', async () => {
  const unknownAction = await bulk({ filter: {}, action: 'explode' });
  assert.equal(unknownAction.status, 400);
  assert.equal(unknownAction.body.code, 'invalid_request');
  const tooMany = await bulk({ filter: {}, action: 'cancel', limit: 101 });
  assert.equal(tooMany.status, 400);
  const badStatus = await bulk({ filter: { status: 'sleepy' }, action: 'cancel', dryRun: true });
  assert.equal(badStatus.status, 400);
  const noFilter = await bulk({ action: 'cancel' });
  assert.equal(noFilter.status, 400);
  const otherVerb = await raw(server, 'POST', '/v1/processes:purge', { body: '{}', headers: { 'content-type': 'application/json' } });
  assert.equal(otherVerb.status, 404);
});
