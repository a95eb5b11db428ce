import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { KernelError } from '../../../src/kernel/errors.js';
import { ProcessId } from '../../../src/kernel/identity.js';
import { effectInboxKey } from '../../../src/store/redis/keys.js';
import { committerUnavailable, mapFlagReply, mapScriptReply, scriptStatus, StorageDeadlines } from '../../../src/store/redis/errors.js';
import { encodeHostWrites } from '../../../src/store/redis/host-writes.js';
import { checkKeyPrefix, checkRecordSuffix, eventsKey, factsKey, headKey, purgedKey, recordKey, treeKeyBase } from '../../../src/store/redis/keys.js';
import { gateLuaScripts, limitsLuaScripts, luaScript, luaScripts, runScript } from '../../../src/store/redis/scripts.js';

/** Redis-free checks: the return-code mapper, the deadline wrapper, the script files, the keys. */

const isCode = (code: string, message?: RegExp) => (error: unknown) =>
  error instanceof KernelError && error.code === code && (message === undefined || message.test(error.message));

test('redis mapper: every script status maps to its outcome or kernel error', () => {
  assert.deepEqual(mapScriptReply('op', [1]), { outcome: 'installed', entryIds: [] });
  assert.deepEqual(mapScriptReply('op', [1, '1-0', '1-1']), { outcome: 'installed', entryIds: ['1-0', '1-1'] });
  assert.deepEqual(mapScriptReply('op', [2]), { outcome: 'duplicate', entryIds: [] });
  assert.deepEqual(mapScriptReply('op', [0]), { outcome: 'absent', entryIds: [] });
  assert.deepEqual(mapScriptReply('op', [-5]), { outcome: 'stale', entryIds: [] }, 'a splice that did not fit: nothing written');
  assert.deepEqual(mapScriptReply('op', [1n]), { outcome: 'installed', entryIds: [] }, 'a bigint status');
  assert.throws(() => mapScriptReply('op', [-1]), isCode('commit_conflict', /idempotency content differs/));
  assert.throws(() => mapScriptReply('op', [-2]), isCode('tree_incarnation_conflict', /authoritative head changed/));
  assert.throws(() => mapScriptReply('op', [-4, 'bad ttl']), isCode('invalid_commit', /bad ttl.*nothing was written/));
  assert.throws(() => mapScriptReply('op', [-4]), isCode('invalid_commit', /no reason/));
  // The table is exhaustive: every named status is one of the cases above.
  assert.deepEqual(Object.values(scriptStatus).sort((a, b) => a - b), [-5, -4, -2, -1, 0, 1, 2]);
});

test('redis mapper: anything else leaves the head unknown (committer_unavailable)', () => {
  const unknown = isCode('committer_unavailable', /^op: unexpected reply .*the tree head is unknown/);
  for (const reply of [[3], [-3], [-6], [99], [1.5], ['1'], [], null, undefined, 'OK', 1, {}, [null], [1, 7], [1, null]]) {
    assert.throws(() => mapScriptReply('op', reply), unknown, JSON.stringify(reply) ?? String(reply));
  }
});

test('redis deadlines: kernel errors pass through; timeouts, failures and shutdown become committer_unavailable', async () => {
  const deadlines = new StorageDeadlines(1_000);
  const conflict = new KernelError('commit_conflict', 'x');
  await assert.rejects(deadlines.run('op', () => Promise.reject(conflict)), (error) => error === conflict);
  await assert.rejects(
    deadlines.run('op', () => Promise.reject(new Error('ECONNRESET'))),
    (error) => isCode('committer_unavailable', /op: redis failed: ECONNRESET; the tree head is unknown/)(error) && (error as Error).cause instanceof Error,
  );
  await assert.rejects(
    deadlines.run('op', () => {
      throw new Error('sync');
    }),
    isCode('committer_unavailable', /sync/),
  );
  assert.equal(await deadlines.run('op', async () => 7), 7);
  assert.match(committerUnavailable('x', 'y').message, /not unchanged/);
  assert.throws(() => new StorageDeadlines(0), TypeError);
});

test('redis deadlines: every call gets its own deadline, in start order, from one timer', async () => {
  const deadlines = new StorageDeadlines(30);
  const never = () => new Promise<never>(() => {});
  let answer: (value: string) => void = () => {};
  const answered = deadlines.run('answered', () => new Promise<string>((resolve) => (answer = resolve)));
  const first = deadlines.run('first', never);
  const second = deadlines.run('second', never);
  answer('in time');
  assert.equal(await answered, 'in time');
  await assert.rejects(first, isCode('committer_unavailable', /^first: no reply within 30 ms/));
  // A call started after the first expired still gets its full deadline.
  const late = deadlines.run('late', never);
  await assert.rejects(second, isCode('committer_unavailable', /^second: no reply within 30 ms/));
  await assert.rejects(late, isCode('committer_unavailable', /^late: no reply within 30 ms/));
  // A late rejection of an abandoned call is absorbed (no unhandled rejection), a late answer ignored.
  let rejectLate: (error: Error) => void = () => {};
  await assert.rejects(deadlines.run('abandoned', () => new Promise((_resolve, reject) => (rejectLate = reject))), isCode('committer_unavailable'));
  rejectLate(new Error('late'));
});

test('redis deadlines: the host shutdown rejects pending calls at once and refuses new ones without running them', async () => {
  const shutdown = new AbortController();
  const deadlines = new StorageDeadlines(60_000, shutdown.signal);
  const pending = [deadlines.run('a', () => new Promise(() => {})), deadlines.run('b', () => new Promise(() => {}))];
  shutdown.abort(new Error('stopping'));
  for (const call of pending) await assert.rejects(call, isCode('committer_unavailable', /shut the store down/));
  let ran = false;
  await assert.rejects(
    deadlines.run('c', async () => {
      ran = true;
    }),
    isCode('committer_unavailable', /shut the store down/),
  );
  assert.equal(ran, false, 'nothing is sent after shutdown');
});

const luaDirectory = new URL('../../../src/store/redis/lua/', import.meta.url);

test('redis scripts: one file per command, named <command>-<numKeys>.lua, with a documented header', () => {
  const files = readdirSync(luaDirectory).filter((file) => file.endsWith('.lua')).sort();
  assert.deepEqual(files, [
    'activateTree-4.lua',
    'appendLog-1.lua',
    'commitCheckpoint-5.lua',
    'commitEffect-4.lua',
    'fenceStart-2.lua',
    'idempotencyClaim-1.lua',
    'idempotencyCommitting-1.lua',
    'idempotencyPromote-1.lua',
    'idempotencyRelease-1.lua',
    'idempotencyReplace-1.lua',
    'indexEntriesRemove-1.lua',
    'purgeTree-5.lua',
    'reconcileCommit-2.lua',
    'registerNode-2.lua',
    'renewNodeLease-1.lua',
    'takeOverTree-5.lua',
  ]);
  for (const file of files) {
    const source = readFileSync(new URL(file, luaDirectory), 'utf8');
    const name = file.replace(/-\d+\.lua$/, '');
    const script = luaScript(name);
    const header = /^--\[\[([\s\S]*?)\]\]/.exec(source)?.[1] ?? '';
    assert.match(header, new RegExp(`^\\s*${name}: `), `${file} header names the command`);
    for (const section of ['Input:', 'Output']) assert.ok(header.includes(section), `${file} header has ${section}`);
    for (let key = 1; key <= script.numKeys; key += 1) assert.match(header, new RegExp(`KEYS\\[${key}\\]`), `${file} documents KEYS[${key}]`);
    assert.doesNotMatch(header, new RegExp(`KEYS\\[${script.numKeys + 1}\\]`), `${file} documents no extra fixed key`);
    assert.match(header, /ARGV\[1\]/);
    assert.equal(script.lua.includes('@include'), false, `${file} includes are inlined`);
    assert.equal(script.variadicKeys, ['commitCheckpoint', 'commitEffect', 'activateTree', 'takeOverTree'].includes(name), `${file} variadic keys`);
  }
  assert.deepEqual([...luaScripts().keys()].sort(), files.map((file) => file.replace(/-\d+\.lua$/, '')).sort());
  const commandNames = new Set([...luaScripts().values()].map((script) => script.commandName));
  assert.equal(commandNames.size, files.length);
});

test('redis limits scripts (lua/limits/): documented headers, one key each, loaded by name', () => {
  const directory = new URL('limits/', luaDirectory);
  const files = readdirSync(directory).filter((file) => file.endsWith('.lua')).sort();
  assert.deepEqual(files, ['streamSlotAcquire-1.lua', 'streamSlotRenew-1.lua']);
  for (const file of files) {
    const name = file.replace(/-\d+\.lua$/, '');
    const header = /^--\[\[([\s\S]*?)\]\]/.exec(readFileSync(new URL(file, directory), 'utf8'))?.[1] ?? '';
    assert.match(header, new RegExp(`^\\s*${name}: `), `${file} header names the command`);
    for (const section of ['Input:', 'Output', 'KEYS[1]', 'ARGV[1]']) assert.ok(header.includes(section), `${file} header has ${section}`);
    assert.equal(luaScript(name).numKeys, 1);
  }
  assert.deepEqual([...limitsLuaScripts().keys()].sort(), ['streamSlotAcquire', 'streamSlotRenew']);
});

test('redis gate scripts (lua/gates/): documented headers naming every key, loaded by name', () => {
  const directory = new URL('gates/', luaDirectory);
  const files = readdirSync(directory).filter((file) => file.endsWith('.lua')).sort();
  assert.deepEqual(files, ['hostGateAnswer-2.lua', 'hostGateClose-2.lua', 'hostGateReserve-4.lua', 'hostGateWrite-1.lua']);
  for (const file of files) {
    const name = file.replace(/-\d+\.lua$/, '');
    const script = luaScript(name);
    const header = /^--\[\[([\s\S]*?)\]\]/.exec(readFileSync(new URL(file, directory), 'utf8'))?.[1] ?? '';
    assert.match(header, new RegExp(`^\\s*${name}: `), `${file} header names the command`);
    for (const section of ['Input:', 'Output', 'ARGV[1]']) assert.ok(header.includes(section), `${file} header has ${section}`);
    for (let key = 1; key <= script.numKeys; key += 1) assert.match(header, new RegExp(`KEYS\\[${key}\\]`), `${file} documents KEYS[${key}]`);
    assert.doesNotMatch(header, new RegExp(`KEYS\\[${script.numKeys + 1}\\]`), `${file} documents no extra key`);
    assert.equal(script.variadicKeys, false);
    assert.equal(script.lua.includes('@include'), false, `${file} includes are inlined`);
  }
  assert.deepEqual([...gateLuaScripts().keys()].sort(), files.map((file) => file.replace(/-\d+\.lua$/, '')).sort());
});

test('redis scripts: runScript refuses the wrong number of keys before sending', () => {
  const redis = new Redis({ lazyConnect: true, enableOfflineQueue: false });
  try {
    assert.throws(() => runScript(redis, 'purgeTree', ['a', 'b', 'c', 'd'], []), /takes 5 keys, got 4/);
    assert.throws(() => runScript(redis, 'purgeTree', ['a', 'b', 'c', 'd', 'e', 'f'], []), /takes 5 keys, got 6/);
    assert.throws(() => runScript(redis, 'commitEffect', ['a', 'b', 'c'], []), /takes 4 or more keys, got 3/);
    assert.throws(() => runScript(redis, 'noSuchScript', [], []), /no lua script noSuchScript/);
  } finally {
    redis.disconnect();
  }
});

test('redis keys: one hash tag per tree; prefixes and record suffixes are checked', () => {
  const root = ProcessId.parse(`process:${'ab'.repeat(16)}`);
  assert.equal(treeKeyBase('scope', root), `scope:{process:${'ab'.repeat(16)}}`);
  assert.equal(headKey('scope', root), `scope:{process:${'ab'.repeat(16)}}:head`);
  assert.equal(factsKey('p', root), `p:{process:${'ab'.repeat(16)}}:facts`);
  assert.equal(eventsKey('p', root), `p:{process:${'ab'.repeat(16)}}:events`);
  assert.equal(purgedKey('p', root), `p:{process:${'ab'.repeat(16)}}:purged`);
  assert.equal(recordKey('p', root, 'idem:42'), `p:{process:${'ab'.repeat(16)}}:record:idem:42`);
  for (const prefix of ['', 'a{b', 'a}b', 'has space', 'x'.repeat(65), 7]) assert.throws(() => checkKeyPrefix(prefix), TypeError, String(prefix));
  assert.equal(checkKeyPrefix('my-app.prod:v1_2'), 'my-app.prod:v1_2');
  for (const suffix of ['', 'a b', 'x'.repeat(257), 'tab\t', 'é', 1]) assert.throws(() => checkRecordSuffix(suffix), isCode('invalid_commit'), String(suffix));
  assert.equal(checkRecordSuffix('{weird}:ok'), '{weird}:ok', 'braces after the tree tag do not change the slot');
});

test('redis host writes: the encoding the scripts parse', () => {
  const root = ProcessId.parse(`process:${'cd'.repeat(16)}`);
  assert.deepEqual(encodeHostWrites('p', root, undefined, 10), { keys: [], args: [] });
  assert.deepEqual(encodeHostWrites('p', root, { events: [], entries: [], records: [] }, 10), { keys: [], args: [] });
  assert.deepEqual(encodeHostWrites('p', root, { records: [{ suffix: 'k', value: 'v' }] }, 10), {
    keys: [recordKey('p', root, 'k')],
    args: ['10', '0', 'v', '0'],
  });
  assert.deepEqual(
    encodeHostWrites('p', root, { entries: [{ a: '1', b: '2' }, { c: '' }], records: [{ suffix: 'k', value: 'v' }, { suffix: 'l', value: 'w', ttlMs: 5 }] }, 7),
    {
      keys: [recordKey('p', root, 'k'), recordKey('p', root, 'l')],
      args: ['7', '2', '2', 'a', '1', 'b', '2', '1', 'c', '', 'v', '0', 'w', '5'],
    },
  );
  // A consumed settlement inbox travels as a key with the deletion marker `-` for its TTL.
  const effectId = `effect:${'ef'.repeat(32)}`;
  assert.deepEqual(encodeHostWrites('p', root, { records: [{ suffix: 'k', value: 'v' }], inboxClears: [effectId] }, 10), {
    keys: [recordKey('p', root, 'k'), effectInboxKey('p', root, effectId)],
    args: ['10', '0', 'v', '0', '', '-'],
  });
  // A record marked `remove` travels like an inbox clear: its key, no value, the deletion marker.
  assert.deepEqual(encodeHostWrites('p', root, { records: [{ suffix: 'interrupt', value: 'ignored', ttlMs: 9, remove: true }] }, 10), {
    keys: [recordKey('p', root, 'interrupt')],
    args: ['10', '0', '', '-'],
  });
  assert.throws(() => encodeHostWrites('p', root, { inboxClears: ['effect:nope'] }, 7), isCode('invalid_commit'));
  assert.throws(() => encodeHostWrites('p', root, { inboxClears: [effectId, effectId] }, 7), isCode('invalid_commit'));
  assert.throws(() => encodeHostWrites('p', root, { entries: Array.from({ length: 1_025 }, () => ({ a: '1' })) }, 7), isCode('invalid_commit'));
  assert.throws(() => encodeHostWrites('p', root, { records: 'x' as never }, 7), isCode('invalid_commit'));
});

test('redis mapper: the pointer scripts answer 1 or 0; bad arguments are invalid_commit, anything else unknown', () => {
  assert.equal(mapFlagReply('op', 1), true);
  assert.equal(mapFlagReply('op', 0), false);
  assert.equal(mapFlagReply('op', 1n), true, 'a bigint reply');
  assert.throws(() => mapFlagReply('op', [-4, 'bad ttl']), isCode('invalid_commit', /bad ttl.*nothing was written/));
  for (const reply of [2, -1, '1', null, undefined, [1], 'OK']) {
    assert.throws(() => mapFlagReply('op', reply), isCode('committer_unavailable', /unexpected reply/), JSON.stringify(reply) ?? String(reply));
  }
});
