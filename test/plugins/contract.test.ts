/**
 * The contract: the app's routes, `openapi.yaml`, the generated client types and the problem
 * registry agree. Regenerating the document in memory from the route schemas must give exactly the
 * committed file (`npm run openapi` writes it; `npm run openapi:check` is the CI twin of this test).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import openapiTS, { astToString } from 'openapi-typescript';
import { parse } from 'yaml';
import { consoleDist } from '../../plugins/console/index.js';
import { problemCodes, problemRegistry, isProblemCode } from '../../plugins/problem-details.js';
import { buildApp, openapiTags, routesOf } from '../../src/app/app.js';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';
import type { FastifyInstance } from 'fastify';

const root = new URL('../../', import.meta.url);
const methods = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head'] as const;

interface Operation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  requestBody?: { content: Record<string, { schema: Schema; example?: unknown }> };
  responses: Record<string, Response>;
  parameters?: Array<{ in: string; name: string; schema: Schema }>;
}
interface Response {
  description: string;
  content?: Record<string, { schema?: Schema; examples?: Record<string, { value: { code: string; status: number } }> }>;
}
interface Schema {
  $ref?: string;
  example?: unknown;
  properties?: Record<string, Schema>;
  enum?: string[];
  [key: string]: unknown;
}
interface Document {
  paths: Record<string, Partial<Record<(typeof methods)[number], Operation>>>;
  components: { schemas: Record<string, Schema> };
}

let app: FastifyInstance;
let committedText: string;
let committed: Document;
let generated: Document;

before(async () => {
  const config = loadConfig({});
  app = await buildApp({ host: new EngineHost({ config, defaultMetrics: false }), config });
  await app.ready();
  committedText = readFileSync(new URL('openapi.yaml', root), 'utf8');
  committed = parse(committedText) as Document;
  generated = JSON.parse(JSON.stringify(app.swagger())) as Document;
});
after(async () => {
  await app.close();
});

/** Fastify's `:name` parameters as OpenAPI's `{name}`; `::` is Fastify's escaped literal colon (`/v1/processes::bulk`). */
function openApiPath(url: string): string {
  return url
    .split('::')
    .map((part) => part.replace(/:([A-Za-z0-9_]+)/g, '{$1}'))
    .join(':');
}

function operations(document: Document): Map<string, Operation> {
  const found = new Map<string, Operation>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of methods) {
      const operation = item[method];
      if (operation !== undefined) found.set(`${method.toUpperCase()} ${path}`, operation);
    }
  }
  return found;
}

function resolve(document: Document, schema: Schema): Schema {
  if (schema.$ref === undefined) return schema;
  const name = schema.$ref.replace('#/components/schemas/', '');
  const target = document.components.schemas[name];
  assert.ok(target, `unresolvable ${schema.$ref}`);
  return target;
}

describe('routes ↔ openapi.yaml', () => {
  test('every route the app serves is in openapi.yaml, and every documented operation is served', () => {
    const served = new Set(
      routesOf(app)
        .filter((route) => route.method !== 'HEAD' && !route.hidden)
        .map((route) => `${route.method} ${openApiPath(route.url)}`),
    );
    // The docs UI's own routes and the console's files (HTML, assets) are hidden from the document on purpose.
    const consoleFiles = new Set(['/', ...readdirSync(consoleDist).map((name) => `/${name}`)]);
    const hidden = routesOf(app).filter((route) => route.hidden).map((route) => route.url);
    assert.ok(hidden.length > 0 && hidden.every((url) => url.startsWith('/docs') || consoleFiles.has(url)), `hidden routes: ${hidden.join(', ')}`);
    const documented = new Set(operations(committed).keys());
    assert.deepEqual([...served].filter((route) => !documented.has(route)).sort(), [], 'served but not in openapi.yaml');
    assert.deepEqual([...documented].filter((route) => !served.has(route)).sort(), [], 'in openapi.yaml but not served');
    // rest-api.md's resources are all here.
    for (const route of [
      'GET /v1/deployments', 'GET /v1/deployments/{name}', 'POST /v1/processes', 'GET /v1/processes', 'GET /v1/processes/{id}',
      'GET /v1/processes/{id}/result', 'POST /v1/processes/{id}/signals', 'POST /v1/processes/{id}/pause',
      'POST /v1/processes/{id}/resume', 'POST /v1/processes/{id}/cancel', 'POST /v1/processes/{id}/kill',
      'GET /v1/processes/{id}/effects', 'POST /v1/processes/{id}/effects/{effectId}/replay',
      'POST /v1/processes/{id}/effects/{effectId}/resolution', 'GET /v1/trees/{rootId}', 'GET /v1/trees/{rootId}/snapshot',
      'POST /v1/trees/{rootId}/capture', 'POST /v1/trees/{rootId}/restore', 'DELETE /v1/trees/{rootId}', 'GET /v1/waits',
      'GET /v1/processes/{id}/events', 'GET /v1/trees/{rootId}/stream', 'GET /healthz', 'GET /readyz', 'GET /metrics',
      'GET /openapi.json',
    ]) {
      assert.ok(served.has(route), `${route} is not served`);
    }
  });

  test('each operation in openapi.yaml is exactly what its route schema generates', () => {
    const fresh = operations(generated);
    for (const [route, operation] of operations(committed)) {
      assert.deepEqual(operation, fresh.get(route), `${route} drifted from its route schema: run npm run openapi`);
    }
    assert.deepEqual(committed.components, generated.components, 'components drifted: run npm run openapi');
  });

  test('openapi.yaml is byte-for-byte what `npm run openapi` writes', () => {
    assert.equal(committedText, app.swagger({ yaml: true }), 'openapi.yaml is stale: run npm run openapi');
  });

  test('src/gen/api.d.ts is generated from openapi.yaml', async () => {
    const types = astToString(await openapiTS(new URL('openapi.yaml', root)));
    const file = readFileSync(new URL('src/gen/api.d.ts', root), 'utf8');
    assert.ok(file.endsWith(types), 'src/gen/api.d.ts is stale: run npm run openapi');
    assert.match(file.slice(0, file.length - types.length), /^\/\*\*[\s\S]*openapi-typescript[\s\S]*\*\/\s*$/);
  });
});

describe('operations are complete', () => {
  test('unique operationIds, known tags, described responses', () => {
    const ids = new Set<string>();
    const tags = new Set(openapiTags.map((tag) => tag.name));
    for (const [route, operation] of operations(committed)) {
      assert.ok(operation.operationId, `${route} has no operationId`);
      assert.ok(!ids.has(operation.operationId), `duplicate operationId ${operation.operationId}`);
      ids.add(operation.operationId);
      assert.equal(operation.tags?.length, 1, `${route} has one tag`);
      assert.ok(tags.has(operation.tags[0]!), `${route}: unknown tag ${operation.tags[0]}`);
      assert.ok(operation.summary, `${route} has a summary`);
      for (const [status, response] of Object.entries(operation.responses)) {
        assert.notEqual(response.description, 'Default Response', `${route} ${status} has no description`);
      }
      assert.ok(operation.responses.default, `${route} documents the default problem response`);
    }
  });

  test('every request body carries an example (Postman and the docs use it)', () => {
    for (const [route, operation] of operations(committed)) {
      if (operation.requestBody === undefined) continue;
      for (const [type, media] of Object.entries(operation.requestBody.content)) {
        const example = media.example ?? resolve(committed, media.schema).example;
        assert.ok(example !== undefined, `${route} ${type} body has no example`);
      }
    }
  });
});

describe('problem codes ↔ registry', () => {
  test('the Problem schema enumerates exactly the registry codes', () => {
    const codes = committed.components.schemas.Problem?.properties?.code?.enum;
    assert.deepEqual([...(codes ?? [])].sort(), [...problemCodes].sort());
  });

  test('every problem code used in openapi.yaml is in the registry, under its status', () => {
    let seen = 0;
    for (const [route, operation] of operations(committed)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const media = response.content?.['application/problem+json'];
        if (media === undefined) continue;
        assert.equal(resolve(committed, media.schema ?? {}), committed.components.schemas.Problem, `${route} ${status} is a Problem`);
        assert.ok(media.examples && Object.keys(media.examples).length > 0, `${route} ${status} names its codes`);
        for (const [name, example] of Object.entries(media.examples)) {
          seen += 1;
          assert.ok(isProblemCode(name), `${route} ${status} documents ${name}, which the registry does not know`);
          assert.equal(example.value.code, name);
          assert.equal(example.value.status, problemRegistry[name].status, `${route}: ${name}`);
          if (status !== 'default') assert.equal(String(problemRegistry[name].status), status, `${route}: ${name} under ${status}`);
        }
      }
      assert.ok(operation.responses.default?.content?.['application/problem+json'], `${route} default is a Problem`);
    }
    assert.ok(seen > 50);
  });

  test('error statuses are documented only as problems', () => {
    for (const [route, operation] of operations(committed)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (status === 'default' || Number(status) < 400) continue;
        if (route === 'GET /readyz' && status === '503') continue; // readiness answers its own body when not ready
        assert.deepEqual(Object.keys(response.content ?? {}), ['application/problem+json'], `${route} ${status}`);
      }
    }
  });
});
