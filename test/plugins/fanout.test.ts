/**
 * demo.fanout over HTTP, embedded and Redis: the tree view lists every process with its parent and
 * depth, `/children` lists the direct children, each child answers by its own id, and the root's
 * `/events` carry the subtree (asked through any member's id).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { resultOf, start, startServer, type TestServer } from './server.js';

let redis: RedisServer;
const servers: Record<string, TestServer> = {};
before(async () => {
  redis = await startRedisServer();
  servers.embedded = await startServer();
  servers.redis = await startServer({ env: { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: `fanout${process.pid}` } });
});
after(async () => {
  for (const server of Object.values(servers)) await server.close();
  await redis?.stop();
});

for (const mode of ['embedded', 'redis'] as const) {
  test(`${mode}: demo.fanout over HTTP — tree, children, child by id, subtree events`, async () => {
    const server = servers[mode] as TestServer;
    const root = await start(server, 'demo.fanout', { values: ['x', 'y', 'z'], quorum: 1 });
    const result = await resultOf(server, root.processId);
    assert.equal(result.status, 'completed');
    const output = result.output as { outputs: Array<{ processId: string; value: string }>; canceled: string[] };
    assert.ok(output.outputs.length >= 1);

    const tree = await request(server.url).get(`/v1/trees/${root.processId}`);
    assert.equal(tree.status, 200);
    const processes = tree.body.processes as Array<{ processId: string; parentId: string | null; depth: number; status: string; deployment: string; unknownEffectIds: string[] }>;
    assert.equal(processes.length, 4);
    const children = processes.filter((entry) => entry.parentId === root.processId);
    assert.deepEqual(children.map((entry) => [entry.depth, entry.deployment]), [[1, 'demo.echo'], [1, 'demo.echo'], [1, 'demo.echo']]);
    assert.ok(children.every((entry) => entry.unknownEffectIds.length === 0));

    const listed = await request(server.url).get(`/v1/processes/${root.processId}/children`);
    assert.equal(listed.status, 200);
    assert.deepEqual((listed.body.items as Array<{ processId: string }>).map((entry) => entry.processId).sort(), children.map((entry) => entry.processId).sort());

    const child = children[0]?.processId as string;
    const inspected = await request(server.url).get(`/v1/processes/${child}`);
    assert.equal(inspected.status, 200);
    assert.equal(inspected.body.rootId, root.processId);
    // A finished child refuses control like any finished process.
    const cancel = await request(server.url).post(`/v1/processes/${child}/cancel`).send({});
    assert.equal(cancel.status, 409);

    const events = await request(server.url).get(`/v1/processes/${root.processId}/events`).query({ limit: 1000 });
    assert.equal(events.status, 200);
    const starts = (events.body.items as Array<{ type: string; processId: string }>).filter((entry) => entry.type === 'agent.process.started');
    assert.equal(starts.length, 4, 'the root log carries every process of the tree');
    // A child's events are its root's log: the same entries, whichever member's id asks.
    const viaChild = await request(server.url).get(`/v1/processes/${child}/events`).query({ limit: 1000 });
    assert.equal(viaChild.status, 200);
    assert.deepEqual(viaChild.body.items, events.body.items);
    // `?processId=` keeps one member's entries.
    const mine = await request(server.url).get(`/v1/processes/${root.processId}/events`).query({ limit: 1000, processId: child });
    assert.equal(mine.status, 200);
    const items = mine.body.items as Array<{ type: string; processId: string }>;
    assert.ok(items.length > 0 && items.every((entry) => entry.processId === child));
    assert.deepEqual(items, (events.body.items as Array<{ processId: string }>).filter((entry) => entry.processId === child));
  });
}
