/**
 * The fuzzer's read-back: an acknowledged start or signal that the server no longer has, or holds
 * with other content, is reported; what the server does have passes, and its trees restore.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Ledger } from '../../scripts/fuzz/ledger.js';
import { call } from '../../scripts/fuzz/live-state.js';
import { start, startServer, type TestServer } from '../plugins/server.js';

let server: TestServer;
let base: URL;

before(async () => {
  server = await startServer();
  base = new URL(server.url);
});
after(async () => {
  await server.close();
});

test('what the server acknowledged and still holds passes: the process, its tree restored, its signal', async () => {
  const ledger = new Ledger();
  const { processId, rootId } = await start(server, 'demo.approval', { subject: 'kept' });
  ledger.started(processId, rootId, 'demo.approval');
  const delivered = await call(base, 'POST', `/v1/processes/${encodeURIComponent(processId)}/signals`, { signals: [{ id: 'n1', payload: { note: 'hi' } }] });
  assert.equal(delivered.status, 200);
  ledger.signalled(processId, rootId, [{ id: 'n1', payload: { note: 'hi' } }]);
  const verified = await ledger.verify(base, 'in-place');
  assert.deepEqual(verified.violations, []);
  assert.equal(verified.restored, 1);
  assert.equal(verified.signals, 1);
});

test('a start the server does not have, a signal missing or held with other content, are violations', async () => {
  const ledger = new Ledger();
  const { processId, rootId } = await start(server, 'demo.approval', { subject: 'checked' });
  await call(base, 'POST', `/v1/processes/${encodeURIComponent(processId)}/signals`, { signals: [{ id: 'n1', payload: { note: 'stored' } }] });
  ledger.signalled(processId, rootId, [{ id: 'n1', payload: { note: 'acknowledged' } }, { id: 'n2', payload: { note: 'never sent' } }]);
  ledger.started('process:0123456789abcdef0123456789abcdef', 'process:0123456789abcdef0123456789abcdef', 'demo.echo');
  const rules = (await ledger.verify(base, 'in-place')).violations.map((violation) => violation.rule);
  assert.deepEqual(rules.sort(), ['acknowledged-signal', 'acknowledged-signal', 'acknowledged-start', 'tree']);
});

test('a purged tree is not expected back', async () => {
  const ledger = new Ledger();
  ledger.started('process:0123456789abcdef0123456789abcdef', 'process:0123456789abcdef0123456789abcdef', 'demo.echo');
  ledger.purged('process:0123456789abcdef0123456789abcdef');
  assert.deepEqual((await ledger.verify(base, 'in-place')).violations, []);
});
