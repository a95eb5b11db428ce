import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { problemOf, startServer, until, type TestServer } from './server.js';

/**
 * Defect 1 of the structure issue: an answer to a wait is checked against the wait's own answer
 * schema at admission. A malformed answer is 422 `schema_validation_failed` with a pointer, nothing is
 * admitted, and the process keeps waiting for a good one (before the fix: `{"accepted": true}`, then
 * the process failed for good with a contract failure).
 */

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

async function startWaiting(deployment: string, input: unknown): Promise<{ processId: string; waitId: string }> {
  const started = await request(server.url).post('/v1/processes').send({ deployment, input });
  assert.equal(started.status, 201, started.text);
  const processId = started.body.processId as string;
  const view = await until(
    async () => (await request(server.url).get(`/v1/processes/${encodeURIComponent(processId)}`)).body,
    (body) => body.status === 'waiting' && typeof body.waitId === 'string',
  );
  return { processId, waitId: view.waitId as string };
}

function answer(processId: string, signals: unknown[]) {
  return request(server.url).post(`/v1/processes/${encodeURIComponent(processId)}/signals`).send({ signals });
}

async function receiptIds(processId: string): Promise<string[]> {
  const page = await request(server.url).get(`/v1/processes/${encodeURIComponent(processId)}/signals?limit=1000`);
  assert.equal(page.status, 200);
  return (page.body.items as Array<{ id: string }>).map((receipt) => receipt.id);
}

describe('a wait owns its answer schema', () => {
  test('demo.approval: a malformed answer is 422 with a pointer, nothing admitted; a good one completes it', async () => {
    const { processId, waitId } = await startWaiting('demo.approval', { subject: 'typo' });
    const before = await receiptIds(processId);

    const refused = problemOf(await answer(processId, [{ id: 'answer-1', waitId, payload: { approved: 'yes' } }]), 422, 'schema_validation_failed');
    assert.deepEqual(refused.errors?.map((error) => error.pointer), ['/body/signals/0/payload/approved']);
    // The batch is all-or-nothing: a good note beside the bad answer is not admitted either.
    const second = problemOf(
      await answer(processId, [
        { id: 'note-1', payload: { note: 'fine' } },
        { id: 'answer-2', waitId, payload: { approved: true, extra: 1 } },
      ]),
      422,
      'schema_validation_failed',
    );
    assert.ok(second.errors?.every((error) => error.pointer.startsWith('/body/signals/1/payload')), JSON.stringify(second.errors));
    assert.deepEqual(await receiptIds(processId), before, 'nothing was admitted');
    const still = await request(server.url).get(`/v1/processes/${encodeURIComponent(processId)}`);
    assert.equal(still.body.status, 'waiting');
    assert.equal(still.body.waitId, waitId);

    // The same signal id is free for the corrected answer.
    const accepted = await answer(processId, [{ id: 'answer-1', waitId, payload: { approved: true, comment: 'fixed' } }]);
    assert.equal(accepted.status, 200, accepted.text);
    const result = await request(server.url).get(`/v1/processes/${encodeURIComponent(processId)}/result?waitMs=10000`);
    assert.equal(result.status, 200);
    assert.equal(result.body.status, 'completed');
    assert.deepEqual(result.body.output, { subject: 'typo', approved: true, comment: 'fixed', notes: [] });
  });

  test('demo.counter: the schema its wait effect carried is enforced ({"add":"2"} is refused)', async () => {
    const { processId, waitId } = await startWaiting('demo.counter', { target: 2 });
    const refused = problemOf(await answer(processId, [{ id: 'add-1', waitId, payload: { add: '2' } }]), 422, 'schema_validation_failed');
    assert.deepEqual(refused.errors?.map((error) => error.pointer), ['/body/signals/0/payload/add']);
    assert.equal((await answer(processId, [{ id: 'add-1', waitId, payload: { add: 2 } }])).status, 200);
    const result = await request(server.url).get(`/v1/processes/${encodeURIComponent(processId)}/result?waitMs=10000`);
    assert.equal(result.body.status, 'completed');
  });

  test('/v1/waits items carry the answer schema, the prompt and the description, and filter by deployment and tree', async () => {
    const approval = await startWaiting('demo.approval', { subject: 'inbox' });
    const counter = await startWaiting('demo.counter', { target: 5 });

    const byDeployment = await request(server.url).get('/v1/waits?deployment=demo.approval');
    assert.equal(byDeployment.status, 200);
    const items = byDeployment.body.items as Array<Record<string, unknown>>;
    assert.ok(items.length >= 1 && items.every((item) => item.deployment === 'demo.approval'));
    const wait = items.find((item) => item.processId === approval.processId);
    assert.equal(wait?.waitId, approval.waitId);
    assert.equal(wait?.key, 'approval');
    assert.equal((wait?.answerSchema as { type?: string }).type, 'object');
    assert.deepEqual((wait?.answerSchema as { required?: string[] }).required, ['approved']);
    assert.equal(typeof wait?.description, 'string');

    const byTree = await request(server.url).get(`/v1/waits?rootId=${encodeURIComponent(counter.processId)}`);
    assert.deepEqual(
      (byTree.body.items as Array<{ processId: string }>).map((item) => item.processId),
      [counter.processId],
    );
    const counterWait = byTree.body.items[0] as Record<string, unknown>;
    assert.equal(typeof counterWait.prompt, 'string', 'a run-time wait says what it asks');
    assert.deepEqual((counterWait.answerSchema as { required?: string[] }).required, ['add']);

    problemOf(await request(server.url).get('/v1/waits?deployment=Not%20A%20Name'), 400, 'invalid_request');
    problemOf(await request(server.url).get('/v1/waits?rootId=not%20an%20id'), 400, 'invalid_request');
  });

  test('/v1/waits pages oldest first; a cursor resumes after the last wait even when the list changed meanwhile', async () => {
    for (let index = 0; index < 5; index += 1) await startWaiting('demo.approval', { subject: `page ${index}` });
    const all = (await request(server.url).get('/v1/waits?deployment=demo.approval')).body as { items: Array<{ processId: string; since: string }>; nextCursor: string | null };
    assert.equal(all.nextCursor, null, 'one page holds them all by default');
    const order = all.items.map((item) => item.processId);
    assert.deepEqual([...all.items].sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : 0)).map((item) => item.processId), order, 'oldest first');

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await request(server.url).get(`/v1/waits?deployment=demo.approval&limit=2${cursor === null ? '' : `&cursor=${cursor}`}`);
      assert.equal(page.status, 200, page.text);
      assert.ok(page.body.items.length <= 2);
      const items = page.body.items as Array<{ processId: string; waitId: string }>;
      seen.push(...items.map((item) => item.processId));
      cursor = page.body.nextCursor;
      pages += 1;
      // Answering a wait already listed does not shift the next page.
      if (pages === 1) {
        const first = items[0] as { processId: string; waitId: string };
        assert.equal((await answer(first.processId, [{ id: 'answered-mid-paging', waitId: first.waitId, payload: { approved: true } }])).status, 200);
      }
    } while (cursor !== null);
    assert.deepEqual(seen, order, 'every wait once, in order, across pages');
    assert.equal(pages, Math.ceil(order.length / 2));

    problemOf(await request(server.url).get('/v1/waits?cursor=bm90LWEtY3Vyc29y'), 400, 'invalid_request');
    problemOf(await request(server.url).get('/v1/waits?limit=0'), 400, 'invalid_request');
    problemOf(await request(server.url).get('/v1/waits?limit=1001'), 400, 'invalid_request');
  });

  test('the deployment lists the waits it declares', async () => {
    const response = await request(server.url).get('/v1/deployments/demo.approval');
    assert.equal(response.status, 200);
    const waits = response.body.waits as Array<{ key: string; description: string; answerSchema: { required?: string[] } }>;
    assert.deepEqual(waits.map((wait) => wait.key), ['approval']);
    assert.deepEqual(waits[0]?.answerSchema.required, ['approved']);
  });
});
