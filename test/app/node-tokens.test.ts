import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { NodeTokens, nodeTokenPrefix } from '../../src/app/auth/node-tokens.js';

const secret = randomBytes(32);

test('a minted token authenticates as that node, in that tenant, with processes:write only', () => {
  const tokens = new NodeTokens(secret);
  const principal = tokens.authenticate(tokens.mint('node-a', 'acme'));
  assert.equal(principal?.keyId, 'node:node-a');
  assert.equal(principal?.tenant, 'acme');
  assert.deepEqual([...(principal?.scopes ?? [])], ['processes:write']);
});

test('a token expires a minute after it was minted', () => {
  let now = 1_000_000;
  const tokens = new NodeTokens(secret, () => now);
  const token = tokens.mint('node-a', 'acme');
  now += 59_999;
  assert.ok(tokens.authenticate(token));
  now += 1;
  assert.equal(tokens.authenticate(token), undefined);
});

test('another secret, an edited claim, a truncated signature or garbage authenticate nothing', () => {
  const tokens = new NodeTokens(secret);
  const token = tokens.mint('node-a', 'acme');
  assert.equal(new NodeTokens(randomBytes(32)).authenticate(token), undefined, 'another cluster');
  const [claims, signature] = token.slice(nodeTokenPrefix.length).split('.') as [string, string];
  const widened = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(claims, 'base64url').toString()), t: 'other' })).toString('base64url');
  assert.equal(tokens.authenticate(`${nodeTokenPrefix}${widened}.${signature}`), undefined, 'another tenant');
  assert.equal(tokens.authenticate(`${nodeTokenPrefix}${claims}.${signature.slice(1)}`), undefined);
  assert.equal(tokens.authenticate(`${token}.extra`), undefined);
  for (const junk of ['', nodeTokenPrefix, `${nodeTokenPrefix}..`, 'scope_abc', 'a.b.c']) assert.equal(tokens.authenticate(junk), undefined, JSON.stringify(junk));
});

test('a short secret and invalid names are refused', () => {
  assert.throws(() => new NodeTokens(randomBytes(16)), RangeError);
  const tokens = new NodeTokens(secret);
  assert.throws(() => tokens.mint('node a', 'acme'), RangeError);
  assert.throws(() => tokens.mint('node-a', ''), RangeError);
});
