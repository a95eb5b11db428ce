/**
 * The docs' "Try it out": the document's server is relative, so the UI sends requests to whichever
 * server served it (any host, any port); and no fixed Idempotency-Key is pre-filled, so each Execute
 * of the start operation is a fresh start, not a replay of the first one.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import request from 'supertest';
import { parse } from 'yaml';
import { buildApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';

interface Parameter {
  in: string;
  name: string;
  example?: unknown;
  examples?: unknown;
  schema?: { example?: unknown; examples?: unknown; default?: unknown };
}
interface Document {
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, { parameters?: Parameter[] }>>;
}

let app: FastifyInstance;
before(async () => {
  const config = loadConfig({});
  app = await buildApp({ host: new EngineHost({ config, defaultMetrics: false }), config });
  await app.ready();
});
after(async () => {
  await app.close();
});

function documents(): Array<[string, Document]> {
  return [
    ['generated', JSON.parse(JSON.stringify(app.swagger())) as Document],
    ['openapi.yaml', parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as Document],
  ];
}

test('the server URL is relative: "Try it out" calls the server that served the docs', async () => {
  for (const [name, document] of documents()) assert.deepEqual(document.servers, [{ url: '/' }], name);
  const served = await request(app.server).get('/docs/json').expect(200);
  assert.deepEqual(served.body.servers, [{ url: '/' }]);
});

test('the Idempotency-Key header has no fixed example, so each Execute is a fresh start', () => {
  for (const [name, document] of documents()) {
    const header = document.paths['/v1/processes']?.post?.parameters?.find((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key');
    assert.ok(header, `${name}: POST /v1/processes documents the Idempotency-Key header`);
    for (const value of [header.example, header.examples, header.schema?.example, header.schema?.examples, header.schema?.default]) {
      assert.equal(value, undefined, `${name}: ${JSON.stringify(header)}`);
    }
  }
});
