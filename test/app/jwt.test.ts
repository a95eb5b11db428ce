import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import request from 'supertest';
import { buildApp } from '../../src/app/app.js';
import { JwtVerifier } from '../../src/app/auth/jwt-verifier.js';
import { createKey } from '../../src/app/auth/key-store.js';
import { loadConfig } from '../../src/server/config.js';
import { EngineHost } from '../../src/server/engine-host.js';

/**
 * Bearer JWTs beside API keys: verified against a local JSON Web Key Set (signature, expiry, issuer,
 * audience), mapped to the same scopes (`scope` claim) and tenants (`tenant` claim). A token another
 * key signed, an expired one, one for another audience or without a tenant is 401; a missing scope 403.
 */

const directory = mkdtempSync(join(tmpdir(), 'scope-jwt-'));
const jwksFile = join(directory, 'jwks.json');
const keysFile = join(directory, 'keys.json');
const apiKey = createKey({ id: 'ops', tenant: 'acme', scopes: ['processes:read', 'processes:write'] });
const issuer = 'https://id.example.test';
const audience = 'scope-api';
let signing: CryptoKey;
let stranger: CryptoKey;
let url: string;
let close: () => Promise<void>;

async function token(claims: Record<string, unknown>, options: { key?: CryptoKey; expiresIn?: string; audience?: string } = {}): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(issuer)
    .setAudience(options.audience ?? audience)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '5m')
    .sign(options.key ?? signing);
}

before(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  signing = pair.privateKey;
  stranger = (await generateKeyPair('ES256')).privateKey;
  writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' }] }));
  writeFileSync(keysFile, JSON.stringify({ keys: [apiKey.entry] }));
  const config = loadConfig({
    SCOPE_SHUTDOWN_MS: '300',
    SCOPE_AUTH: 'keys',
    SCOPE_API_KEYS_FILE: keysFile,
    SCOPE_JWKS_FILE: jwksFile,
    SCOPE_JWT_ISSUER: issuer,
    SCOPE_JWT_AUDIENCE: audience,
  });
  const host = new EngineHost({ config, defaultMetrics: false });
  const app = await buildApp({ host, config });
  url = await app.listen({ port: 0, host: '127.0.0.1' });
  close = () => app.close();
});
after(async () => {
  await close?.();
  rmSync(directory, { recursive: true, force: true });
});

const bearer = (value: string) => ({ authorization: `Bearer ${value}` });

describe('JWTs', () => {
  test('a signed token with the scope is served, as its tenant; API keys still work beside it', async () => {
    const jwt = await token({ sub: 'user-1', tenant: 'acme', scope: 'processes:read processes:write' });
    const started = await request(url).post('/v1/processes').set(bearer(jwt)).send({ deployment: 'demo.echo', input: { value: 'jwt' } });
    assert.equal(started.status, 201, started.text);
    const byKey = await request(url).get(`/v1/processes/${encodeURIComponent(started.body.processId)}`).set(bearer(apiKey.token));
    assert.equal(byKey.status, 200, 'the same tenant by API key sees it');
    const other = await token({ sub: 'user-2', tenant: 'globex', scope: 'processes:read' });
    const foreign = await request(url).get(`/v1/processes/${encodeURIComponent(started.body.processId)}`).set(bearer(other));
    assert.equal(foreign.status, 404, 'another tenant by JWT does not');
  });

  test('refused with 401: another signer, expired, another audience, no tenant, no subject, garbage', async () => {
    const cases: Record<string, string> = {
      'another signer': await token({ sub: 'u', tenant: 'acme', scope: 'processes:read' }, { key: stranger }),
      expired: await token({ sub: 'u', tenant: 'acme', scope: 'processes:read' }, { expiresIn: '-2m' }),
      'another audience': await token({ sub: 'u', tenant: 'acme', scope: 'processes:read' }, { audience: 'other' }),
      'no tenant': await token({ sub: 'u', scope: 'processes:read' }),
      'a malformed tenant': await token({ sub: 'u', tenant: 'a/b', scope: 'processes:read' }),
      'no subject': await token({ tenant: 'acme', scope: 'processes:read' }),
      garbage: 'eyJhbGciOiJub25lIn0.e30.',
    };
    for (const [what, jwt] of Object.entries(cases)) {
      const response = await request(url).get('/v1/processes').set(bearer(jwt));
      assert.equal(response.status, 401, `${what}: ${response.status} ${response.text.slice(0, 120)}`);
      assert.equal(response.body.code, 'unauthorized', what);
    }
  });

  test('a token without the scope is 403 insufficient_scope; unknown scope words grant nothing', async () => {
    const reader = await token({ sub: 'reader', tenant: 'acme', scope: 'processes:read everything:all' });
    assert.equal((await request(url).get('/v1/processes').set(bearer(reader))).status, 200);
    const refused = await request(url).post('/v1/processes').set(bearer(reader)).send({ deployment: 'demo.echo', input: { value: 'x' } });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'insufficient_scope');
  });

  test('configuration: SCOPE_AUTH=jwt needs SCOPE_JWKS_FILE; a key set holding a private key is refused at start', async () => {
    assert.throws(() => loadConfig({ SCOPE_AUTH: 'jwt' }), /SCOPE_JWKS_FILE/);
    assert.deepEqual(loadConfig({ SCOPE_JWKS_FILE: jwksFile }).auth, { mode: 'on', jwt: { jwksFile } });
    const privateSet = join(directory, 'private.json');
    writeFileSync(privateSet, JSON.stringify({ keys: [await exportJWK(signing)] }));
    const config = loadConfig({ SCOPE_JWKS_FILE: privateSet });
    await assert.rejects(buildApp({ host: new EngineHost({ config, defaultMetrics: false }), config }), /public keys only/);
  });

  test('the key set is reread when its file changes: a rotated signing key is accepted without a restart; a broken file keeps the last keys', async () => {
    const file = join(directory, 'rotating-jwks.json');
    const next = await generateKeyPair('ES256', { extractable: true });
    writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK((await generateKeyPair('ES256', { extractable: true })).publicKey)), kid: 'old', alg: 'ES256' }] }));
    let now = 1_000_000;
    const reloadErrors: string[] = [];
    const verifier = new JwtVerifier({ jwksFile: file, issuer, audience }, { now: () => now, onReloadError: (error) => reloadErrors.push(error.message) });
    const rotated = await token({ sub: 'svc', tenant: 'acme', scope: 'processes:read' }, { key: next.privateKey });
    assert.equal(await verifier.authenticate(rotated), undefined, 'not yet in the set');

    writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(next.publicKey)), kid: 'k1', alg: 'ES256' }] }));
    assert.equal(await verifier.authenticate(rotated), undefined, 'looked at again at most once a second');
    now += 1_000;
    assert.equal((await verifier.authenticate(rotated))?.tenant, 'acme');

    writeFileSync(file, '{"keys": [{"kty": "EC", "d": "secret"}]}');
    now += 1_000;
    assert.equal((await verifier.authenticate(rotated))?.tenant, 'acme', 'the last good key set stays in force');
    assert.equal(reloadErrors.length, 1);
    assert.match(reloadErrors[0] as string, /public keys only/);
  });
});
