import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { eventually, startTestServer, type TestServer } from './sse-harness.js';

/**
 * The structure issue's defect 6, over HTTP: `result?waitMs=` on a tree no runtime of this server
 * owns answered 202 `running` at once, with no hint that nothing would move it. It says so now.
 */

let redis: RedisServer;
let owner: TestServer;
let other: TestServer;
before(async () => {
  redis = await startRedisServer();
  const env = { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: `inactive${process.pid}` };
  [owner, other] = await Promise.all([startTestServer({ env }), startTestServer({ env })]);
});
after(async () => {
  await Promise.all([owner?.close(), other?.close()]);
  await redis?.stop();
});

test('a long poll on a tree another server owns: 202 with work inactive and what to do instead', async () => {
  const processId = await owner.start('demo.approval', { subject: 'elsewhere' });
  const path = `/v1/processes/${encodeURIComponent(processId)}`;
  await eventually(async () => (await owner.json(path)).body.status === 'waiting', 'the process waits');
  const poll = await request(other.base).get(`${path}/result?waitMs=20`);
  assert.equal(poll.status, 202);
  assert.equal(poll.body.status, 'waiting');
  assert.equal(poll.body.work, 'inactive');
  assert.equal(poll.body.rootId, processId);
  assert.equal(poll.body.next.code, 'tree_not_active');
  assert.match(poll.body.next.detail, /restore/);
  // Where the tree lives, the same poll has nothing to add.
  const local = await request(owner.base).get(`${path}/result?waitMs=0`);
  assert.equal(local.status, 202);
  assert.notEqual(local.body.work, 'inactive');
  assert.equal(local.body.next, null);
});
