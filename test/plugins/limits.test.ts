import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { grantDefaults } from '../../src/server/config.js';
import { problemOf, startServer, until, type TestServer } from './server.js';

/**
 * Defect 4 of the structure issue: with no SCOPE_GRANTS, nothing bounded one tree (49 batches of
 * 200 × 4 KB notes grew one head to 41 MB, each signal took over a second, and the process view
 * inlined every receipt). The default grant is finite; reaching a bound is 409
 * `resource_limit_exceeded` naming it; receipts are paged instead of inlined.
 */

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const note = 'n'.repeat(4 * 1024);

function notes(batch: number, count: number): Array<{ id: string; payload: { note: string } }> {
  return Array.from({ length: count }, (_, index) => ({ id: `note-${batch}-${index}`, payload: { note } }));
}

describe('safe default grants', () => {
  test('a start gets finite snapshot bytes and a signal budget, and asking for unbounded is 403', async () => {
    const started = await request(server.url).post('/v1/processes').send({ deployment: 'demo.approval', input: { subject: 'bounded' } });
    assert.equal(started.status, 201);
    assert.deepEqual(started.body.budget.signals, { maximum: grantDefaults.signalsPerProcess });
    const unbounded = await request(server.url)
      .post('/v1/processes')
      .send({ deployment: 'demo.approval', input: { subject: 'greedy' }, treeLimits: { maxSnapshotBytes: { maximum: null } } });
    problemOf(unbounded, 403, 'authority_exceeded');
  });

  test('notes flooding one process stop at 409 resource_limit_exceeded naming the bound; the view stays small', async () => {
    const started = await request(server.url).post('/v1/processes').send({ deployment: 'demo.approval', input: { subject: 'flood' } });
    const processId = started.body.processId as string;
    const path = `/v1/processes/${encodeURIComponent(processId)}`;
    await until(async () => (await request(server.url).get(path)).body, (body) => body.status === 'waiting');
    let refused: request.Response | undefined;
    let accepted = 0;
    for (let batch = 0; batch < 49 && refused === undefined; batch += 1) {
      const response = await request(server.url).post(`${path}/signals`).send({ signals: notes(batch, 200) });
      if (response.status === 200) accepted += 200;
      else refused = response;
    }
    assert.ok(refused !== undefined, `the flood was never refused (${accepted} notes accepted)`);
    const problem = problemOf(refused, 409, 'resource_limit_exceeded');
    assert.match(problem.detail, /max_process_snapshot_bytes|max_snapshot_bytes|signals budget/, problem.detail);
    // Far below the 41 MB a head reached before: the bound is 4 MiB per process.
    assert.ok(accepted * note.length <= grantDefaults.processSnapshotBytes, `${accepted} notes of 4 KB were admitted`);

    // The process still answers, and its view does not carry its mailbox.
    const view = await request(server.url).get(path);
    assert.equal(view.status, 200);
    assert.equal(view.body.status, 'waiting');
    assert.equal(view.body.receiptCount, accepted + 1, 'the notes and the wait opening');
    assert.ok(view.text.length < 16 * 1024, `the view is ${view.text.length} bytes`);
    assert.equal(view.body.receipts, undefined);

    // Receipts are paged.
    const first = await request(server.url).get(`${path}/signals?limit=100`);
    assert.equal(first.status, 200);
    assert.equal(first.body.items.length, 100);
    assert.equal(first.body.items[0].arrivalSequence, 1);
    assert.equal(typeof first.body.nextCursor, 'string');
    const second = await request(server.url).get(`${path}/signals?limit=100&after=${first.body.nextCursor}`);
    assert.equal(second.body.items[0].arrivalSequence, 101);
    const last = await request(server.url).get(`${path}/signals?limit=1000&after=${accepted - 10}`);
    assert.equal(last.body.items.length, 11);
    assert.equal(last.body.nextCursor, null);

    // The answer still gets through (a bound on notes, not on the process).
    const waitId = view.body.waitId as string;
    const answer = await request(server.url).post(`${path}/signals`).send({ signals: [{ id: 'answer', waitId, payload: { approved: true } }] });
    assert.equal(answer.status, 200, answer.text);
  });

  test('a batch is at most 1,000 signals (in the schema, so openapi.yaml documents it)', async () => {
    const started = await request(server.url).post('/v1/processes').send({ deployment: 'demo.approval', input: { subject: 'batch' } });
    const path = `/v1/processes/${encodeURIComponent(started.body.processId as string)}/signals`;
    const tiny = Array.from({ length: 1_001 }, (_, index) => ({ id: `n-${index}`, payload: { note: 'x' } }));
    const problem = problemOf(await request(server.url).post(path).send({ signals: tiny }), 400, 'invalid_request');
    assert.deepEqual(problem.errors?.map((error) => error.pointer), ['/body/signals']);
    const spec = await request(server.url).get('/openapi.json');
    assert.equal(spec.body.components.schemas.SignalBatch.properties.signals.maxItems, 1_000);
  });
});
