import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { sharedResponseSerializers } from '../../src/app/response-serializers.js';

/**
 * Response serializers are compiled once per distinct schema (and set of shared schemas), not once per
 * route and status: Fastify asks for ~320 of them at every server start.
 */

const shared = { Item: { $id: 'Item', type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } };
const listOf = () => ({ type: 'object', properties: { items: { type: 'array', items: { $ref: 'Item#' } } } });

test('equal schemas on different routes and statuses share one serializer; a different schema gets its own', () => {
  const factory = sharedResponseSerializers();
  const compile = factory(shared, undefined);
  const a = compile({ method: 'GET', url: '/a', httpStatus: '200', schema: listOf() });
  const b = compile({ method: 'POST', url: '/b', httpStatus: '201', schema: listOf() });
  assert.equal(a, b, 'one compile for equal schemas');
  const other = compile({ method: 'GET', url: '/a', httpStatus: '404', schema: { type: 'object', properties: { code: { type: 'string' } } } });
  assert.notEqual(other, a);
  // Another plugin context with the same shared schemas reuses it; different shared schemas do not.
  assert.equal(factory({ ...shared }, undefined)({ method: 'GET', url: '/c', httpStatus: '200', schema: listOf() }), a);
  const changed = { Item: { ...shared.Item, properties: { id: { type: 'integer' } } } };
  assert.notEqual(factory(changed, undefined)({ method: 'GET', url: '/c', httpStatus: '200', schema: listOf() }), a);
});

test('a shared serializer serializes as fast-json-stringify does: by its schema, refs resolved, extra members dropped', () => {
  const compile = sharedResponseSerializers()(shared, undefined);
  const serialize = compile({ method: 'GET', url: '/a', httpStatus: '200', schema: listOf() });
  assert.equal(serialize({ items: [{ id: 'x', secret: 1 }], extra: true }), '{"items":[{"id":"x"}]}');
});

test('in Fastify: routes with equal response schemas answer through one compiled serializer', async () => {
  const handed = new Set<unknown>();
  let asks = 0;
  const factory = sharedResponseSerializers();
  const app = Fastify({
    schemaController: {
      compilersFactory: {
        buildSerializer: (externalSchemas: unknown, options: unknown) => {
          const compile = factory(externalSchemas, options as never);
          return (route: Parameters<typeof compile>[0]) => {
            asks += 1;
            const serializer = compile(route);
            handed.add(serializer);
            return serializer;
          };
        },
      },
    },
  });
  app.addSchema(shared.Item);
  for (const path of ['/one', '/two', '/three']) {
    app.get(path, { schema: { response: { 200: listOf(), 404: listOf() } } }, async () => ({ items: [{ id: path, hidden: true }] }));
  }
  try {
    const answer = await app.inject({ method: 'GET', url: '/two' });
    assert.equal(answer.body, '{"items":[{"id":"/two"}]}');
    // Fastify asks for one per route (GET and its HEAD) and status: all twelve are the same function.
    assert.equal(asks, 12);
    assert.equal(handed.size, 1);
  } finally {
    await app.close();
  }
});
