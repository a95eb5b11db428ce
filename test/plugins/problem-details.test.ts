import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import Fastify from 'fastify';
import { pino } from 'pino';
import request from 'supertest';
import problemDetails, {
  fieldErrors,
  internalCodes,
  isProblemCode,
  problemCodes,
  problemRegistry,
} from '../../plugins/problem-details.js';
import { ErrorCode, KernelError } from '../../src/kernel/index.js';
import { codeValues } from '../../src/errors.js';
import { startServer, type TestServer } from './server.js';

/** rest-api.md, "Errors": the codes clients rely on, with their statuses. */
const specTable: Record<string, number> = {
  invalid_request: 400,
  process_not_found: 404,
  tree_not_found: 404,
  deployment_not_found: 404,
  effect_not_found: 404,
  signal_conflict: 409,
  invalid_process_control: 409,
  process_finished: 409,
  effect_not_pending: 409,
  idempotency_key_conflict: 409,
  commit_conflict: 409,
  tree_incarnation_conflict: 409,
  tree_not_active: 409,
  schema_validation_failed: 422,
  signal_rejected: 422,
  effect_replay_forbidden: 422,
  authority_exceeded: 403,
  resource_limit_exceeded: 409,
  payload_too_large: 413,
  effect_outcome_unknown: 502,
  runtime_stopped: 503,
};

test('the registry maps every code of the spec table to its status', () => {
  for (const [code, status] of Object.entries(specTable)) {
    assert.ok(isProblemCode(code), `${code} is missing from the registry`);
    assert.equal(problemRegistry[code].status, status, code);
  }
});

test('every kernel and server error code is either a problem or an internal code, never both', () => {
  const thrown: readonly string[] = [...Object.values(ErrorCode), ...codeValues];
  const unmapped = thrown.filter((code) => !isProblemCode(code) && !internalCodes.includes(code));
  assert.deepEqual(unmapped, []);
  assert.deepEqual(internalCodes.filter((code) => isProblemCode(code)), []);
  assert.deepEqual(internalCodes.filter((code) => !thrown.includes(code)), [], 'internal codes nobody throws');
});

test('registry entries are well-formed: 4xx/5xx statuses, distinct non-empty titles', () => {
  const titles = new Set<string>();
  for (const code of problemCodes) {
    const { status, title } = problemRegistry[code];
    assert.ok(status >= 400 && status <= 599, code);
    assert.ok(title.length > 0 && !titles.has(title), `title of ${code}`);
    titles.add(title);
    assert.match(code, /^[a-z]+(_[a-z]+)*$/);
  }
});

test('fieldErrors points at the offending member, also when it is missing or unknown', () => {
  assert.deepEqual(
    fieldErrors('body', [
      { instancePath: '/signals/0', keyword: 'required', message: "must have required property 'payload'", params: { missingProperty: 'payload' } },
      { instancePath: '', keyword: 'additionalProperties', message: 'must NOT have additional properties', params: { additionalProperty: 'a/b~c' } },
      { instancePath: '/deployment', keyword: 'pattern', message: 'must match pattern', params: {} },
    ]),
    [
      { pointer: '/body/signals/0/payload', message: "must have required property 'payload'", keyword: 'required' },
      { pointer: '/body/a~1b~0c', message: 'is not a known member (unknown fields are rejected)', keyword: 'additionalProperties' },
      { pointer: '/body/deployment', message: 'must match pattern', keyword: 'pattern' },
    ],
  );
  assert.equal(fieldErrors('querystring', [{ instancePath: '/waitMs', keyword: 'maximum', message: 'must be <= 60000' }])[0]!.pointer, '/query/waitMs');
});

describe('the error handler', () => {
  const lines: string[] = [];
  let server: TestServer;
  before(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    server = await startServer({
      logger: pino({ level: 'info' }, sink),
      prepare(app) {
        app.get('/test/boom', async () => {
          throw new Error('secret: the database password is hunter2');
        });
        app.get('/test/internal', async () => {
          throw new KernelError(ErrorCode.invalidCommit, 'secret: broken invariant in the committer');
        });
        app.get('/test/unavailable', async () => {
          throw new KernelError(ErrorCode.committerUnavailable, 'secret: redis at 10.0.0.7 timed out');
        });
        app.get('/test/stopped', async () => {
          throw new KernelError(ErrorCode.runtimeStopped, 'runtime stopped for process:x');
        });
        app.get('/test/conflict', async () => {
          throw new KernelError(ErrorCode.commitConflict, 'the commit identity is taken');
        });
      },
    });
  });
  after(async () => {
    await server.close();
  });

  test('an unknown error is a bare 500 internal_error: the cause is logged, never sent', async () => {
    const response = await request(server.url).get('/test/boom').set('x-request-id', 'boom-1');
    assert.equal(response.status, 500);
    assert.match(response.headers['content-type'] ?? '', /^application\/problem\+json/);
    assert.deepEqual(response.body, {
      type: 'urn:scope:problem:internal_error',
      title: 'Internal server error',
      status: 500,
      detail: 'the server could not answer this request',
      code: 'internal_error',
      requestId: 'boom-1',
      instance: '/test/boom',
    });
    assert.ok(!response.text.includes('hunter2'));
    const logged = lines.map((line) => JSON.parse(line) as Record<string, any>).find((line) => line.requestId === 'boom-1' && line.level === 50);
    assert.ok(logged, 'the failure is logged at error level with the request id');
    assert.match(JSON.stringify(logged.err), /hunter2/);
  });

  test('a kernel code that only a server defect produces is internal_error too', async () => {
    const response = await request(server.url).get('/test/internal');
    assert.equal(response.status, 500);
    assert.equal(response.body.code, 'internal_error');
    assert.ok(!response.text.includes('secret'));
  });

  test('a registry 5xx keeps its code but not the message; a 4xx carries the message as detail', async () => {
    const unavailable = await request(server.url).get('/test/unavailable');
    assert.equal(unavailable.status, 503);
    assert.equal(unavailable.body.code, 'committer_unavailable');
    assert.ok(!unavailable.text.includes('10.0.0.7'));
    assert.equal(unavailable.headers['retry-after'], '1', 'a transient 503 says when to try again');
    const stopped = await request(server.url).get('/test/stopped');
    assert.equal(stopped.status, 503);
    assert.equal(stopped.body.code, 'runtime_stopped');
    assert.equal(stopped.headers['retry-after'], '1', 'also when the stop reaches the client before the tree latched its fault');
    const conflict = await request(server.url).get('/test/conflict');
    assert.equal(conflict.status, 409);
    assert.equal(conflict.headers['retry-after'], undefined);
    assert.equal(conflict.body.code, 'commit_conflict');
    assert.equal(conflict.body.detail, 'the commit identity is taken');
  });
});

test('problem-details is a fastify-plugin: its handlers reach the parent and every plugin registered beside it', async () => {
  const app = Fastify();
  await app.register(problemDetails, { bodyLimit: 1024 });
  await app.register(async (child) => {
    child.get('/sibling/boom', async () => {
      throw new KernelError(ErrorCode.commitConflict, 'taken');
    });
  });
  app.get('/root/boom', async () => {
    throw new KernelError(ErrorCode.commitConflict, 'taken');
  });
  await app.ready();
  try {
    for (const path of ['/sibling/boom', '/root/boom']) {
      const response = await request(app.server).get(path).expect(409).expect('content-type', /^application\/problem\+json/);
      assert.equal(response.body.code, 'commit_conflict', path);
    }
    const missing = await request(app.server).get('/nowhere').expect(404).expect('content-type', /^application\/problem\+json/);
    assert.equal(missing.body.code, 'route_not_found');
  } finally {
    await app.close();
  }
});
