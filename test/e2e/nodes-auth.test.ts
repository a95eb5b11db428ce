import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createKey } from '../../src/app/auth/key-store.js';
import { Cluster, eventually, json, processUrl, type Node } from './nodes-cluster.js';

/**
 * Forwarding carries the caller's identity: the owner authenticates the forwarded command with the
 * caller's own bearer token (as received), so a forward never widens what a caller may do.
 */

const cluster = new Cluster();
const directory = mkdtempSync(join(tmpdir(), 'scope-nodes-auth-'));
const writer = createKey({ id: 'writer', tenant: 'acme', scopes: ['processes:read', 'processes:write'] });
const reader = createKey({ id: 'reader', tenant: 'acme', scopes: ['processes:read'] });
let a: Node;
let b: Node;

before(async () => {
  const keysFile = join(directory, 'keys.json');
  writeFileSync(keysFile, JSON.stringify({ keys: [writer.entry, reader.entry] }));
  await cluster.start();
  const env = { SCOPE_AUTH: 'keys', SCOPE_API_KEYS_FILE: keysFile, SCOPE_RATE_LIMIT: 'off', SCOPE_GRANTS: JSON.stringify({ capabilities: ['scope.messaging.send'] }) };
  [a, b] = await Promise.all([cluster.node('a', env), cluster.node('b', env)]);
});

after(async () => {
  await cluster.stop();
  rmSync(directory, { recursive: true, force: true });
});

function call(url: string, token: string | undefined, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return fetch(url, { method: body === undefined ? 'GET' : 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

test('a forwarded signal is authenticated by the owner with the caller\'s token', async () => {
  const started = await call(`${a.url}/v1/processes`, writer.token, { deployment: 'demo.approval', input: { subject: 'auth' } });
  assert.equal(started.status, 201);
  const id = (await json(started)).processId as string;
  const waitId = await eventually(async () => {
    const view = await json(await call(processUrl(a, id), reader.token));
    return view.status === 'waiting' ? (view.waitId as string) : undefined;
  }, 'waiting');
  const signal = { signals: [{ id: 'answer', waitId, payload: { approved: true } }] };
  // The forwarder's own guards come first: no token, or a token without the scope, never reach the owner.
  assert.equal((await call(processUrl(b, id, '/signals'), undefined, signal)).status, 401);
  assert.equal((await call(processUrl(b, id, '/signals'), reader.token, signal)).status, 403);
  // A forwarded request gets no pass at the owner: the hop header alone authenticates nothing.
  const bare = await fetch(processUrl(a, id, '/signals'), { method: 'POST', headers: { 'content-type': 'application/json', 'scope-forwarded-by': 'b' }, body: JSON.stringify(signal) });
  assert.equal(bare.status, 401);
  const answered = await call(processUrl(b, id, '/signals'), writer.token, signal);
  assert.equal(answered.status, 200, await answered.clone().text());
  assert.equal(answered.headers.get('scope-served-by'), 'a');
  const result = await json(await call(processUrl(a, id, '/result?waitMs=10000'), reader.token));
  assert.equal(result.status, 'completed');
});

test('a cross-tree message to a tree the other node owns is forwarded with a node token, and admitted there', async () => {
  const recipient = await call(`${a.url}/v1/processes`, writer.token, { deployment: 'demo.approval', input: { subject: 'message' } });
  assert.equal(recipient.status, 201);
  const recipientId = (await json(recipient)).processId as string;
  const waitId = await eventually(async () => {
    const view = await json(await call(processUrl(a, recipientId), reader.token));
    return view.status === 'waiting' ? (view.waitId as string) : undefined;
  }, 'waiting');
  const sender = await call(`${b.url}/v1/processes`, writer.token, { deployment: 'example.messaging.notify', input: { recipient: recipientId, waitId, payload: { approved: true } } });
  assert.equal(sender.status, 201, await sender.clone().text());
  const senderId = (await json(sender)).processId as string;
  const sent = await json(await call(processUrl(b, senderId, '/result?waitMs=15000'), reader.token));
  assert.equal(sent.status, 'completed', JSON.stringify(sent));
  const answered = await json(await call(processUrl(a, recipientId, '/result?waitMs=15000'), reader.token));
  assert.equal(answered.status, 'completed', JSON.stringify(answered));
  // A token that only looks like a node's authenticates nothing.
  const forged = `scope-node.${Buffer.from(JSON.stringify({ n: 'b', t: 'acme', e: Date.now() + 60_000 })).toString('base64url')}.AAAA`;
  assert.equal((await call(processUrl(a, recipientId, '/signals'), forged, { signals: [{ id: 'forged', payload: {} }] })).status, 401);
});
