import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TreeCheckpoint } from '../../src/kernel/commit.js';
import { ProcessId, TreeIncarnationId } from '../../src/kernel/identity.js';
import { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import { MemoryIdempotencyStore } from '../../src/store/memory-idempotency.js';
import { MemoryRootIndex } from '../../src/store/root-index.js';
import { EmbeddedCommitter } from '../../src/server/embedded-committer.js';
import { grantDefaults } from '../../src/server/config.js';
import { idempotencyHostValue } from '../../src/server/idempotency.js';
import { conformanceTrees } from '../../src/testing/conformance-trees.js';
import { coordinationExampleNames } from '../../src/server/examples/coordination.js';
import { demoFlows } from './demo-flows.js';
import { dataOf, drainStream, embeddedHost, ofType, rejectsWith, result, start, stepCommittedWith, streamOf, untilEntry, untilSettled } from './harness.js';

demoFlows('embedded', { make: () => embeddedHost() });

test('the catalog lists the six demos with their exact refs and schemas; --no-demos registers none', async () => {
  const host = embeddedHost();
  try {
    const names = host.deployments().map((deployment) => deployment.name);
    assert.deepEqual(names, ['demo.echo', 'demo.approval', 'demo.counter', 'demo.sleep', 'demo.unreliable', 'demo.fanout', 'example.messaging.notify', 'example.workflow.review', 'example.workflow.batch', ...coordinationExampleNames, 'example.collaboration.research', 'example.collaboration.research.coordinator', 'example.collaboration.research.notes', 'example.collaboration.research.survey', 'example.planning.errands', 'example.agent.tools', 'example.agent.research', 'example.agent.summarizer', 'example.agent.briefing']);
    const echo = host.deployment('demo.echo');
    assert.match(echo.deploymentRef, /^demo\.echo\+sha256:[0-9a-f]{64}$/);
    assert.equal(echo.signalSchema, false);
    assert.deepEqual((host.deployment('demo.approval').signalSchema as { required: string[] }).required, ['note']);
    // Fixed digests: another server builds the very same refs (restore depends on it).
    const other = embeddedHost();
    assert.deepEqual(other.deployments(), host.deployments());
    await other.close(0);
    await rejectsWith(() => host.deployment('demo.nope'), 'deployment_not_found');
  } finally {
    await host.close(0);
  }
  const bare = embeddedHost({ env: { SCOPE_DEMOS: 'off' } });
  assert.deepEqual(bare.deployments(), []);
  await rejectsWith(bare.startProcess({ deployment: 'demo.echo', input: { value: 'x' } }), 'deployment_not_found');
  await bare.close(0);
});

test('starts are validated: unknown deployment, bad input, malformed members', async () => {
  const host = embeddedHost();
  try {
    await rejectsWith(host.startProcess({ deployment: 'demo.missing', input: {} }), 'deployment_not_found');
    await rejectsWith(host.startProcess({ deployment: 'demo.echo', input: { value: 3 } }), 'schema_validation_failed');
    await rejectsWith(host.startProcess({ deployment: 'demo.echo' } as never), 'invalid_request');
    await rejectsWith(host.startProcess({ deployment: 'demo.echo', input: { value: 'x' }, budget: { steps: { maximum: -1 } } } as never), 'invalid_request');
    await rejectsWith(host.startProcess({ deployment: 'demo.echo', input: { value: 'x' }, capabilities: ['Not A Name'] }), 'invalid_request');
    await rejectsWith(host.startProcess({ deployment: 'demo.echo', input: { value: 'x' } }, ''), 'invalid_request');
    await rejectsWith(host.startProcess({ deployment: 'demo.echo', input: { value: 'x' } }, 'has space'), 'invalid_request');
  } finally {
    await host.close(0);
  }
});

test('idempotent start (embedded): same key + same body → same process; other body → conflict', async () => {
  const host = embeddedHost();
  try {
    const request = { deployment: 'demo.approval', input: { subject: 'a', extra: undefined } } as const;
    const first = await host.startProcess({ deployment: 'demo.approval', input: { subject: 'a' } }, 'key-1');
    assert.equal(first.created, true);
    // Member order and absent members do not change the canonical body.
    const again = await host.startProcess(request as never, 'key-1');
    assert.equal(again.created, false);
    assert.equal(again.process.processId, first.process.processId);
    await rejectsWith(host.startProcess({ deployment: 'demo.approval', input: { subject: 'b' } }, 'key-1'), 'idempotency_key_conflict');
    const other = await host.startProcess({ deployment: 'demo.approval', input: { subject: 'a' } }, 'key-2');
    assert.equal(other.created, true);
    assert.notEqual(other.process.processId, first.process.processId);
    // Concurrent starts with one key: exactly one creates.
    const racing = await Promise.all([0, 1, 2].map(() => host.startProcess({ deployment: 'demo.echo', input: { value: 'r' } }, 'key-3')));
    assert.equal(racing.filter((outcome) => outcome.created).length, 1);
    assert.equal(new Set(racing.map((outcome) => outcome.process.processId)).size, 1);
    const listed = await host.listProcesses({ deployment: 'demo.echo' });
    assert.equal(listed.items.length, 1);
  } finally {
    await host.close(0);
  }
});

test('embedded committer: the idempotency record follows only an acknowledged start commit', async () => {
  const store = new MemoryTreeCommitter();
  const idempotency = new MemoryIdempotencyStore();
  const committer = new EmbeddedCommitter({ store, log: new MemoryEventLog(), idempotency, roots: new MemoryRootIndex() });
  const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  const intent = { keyDigest: 'k'.repeat(64), requestDigest: 'r'.repeat(64), ttlMs: 60_000 };
  await committer.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }), { events: [] });
  // A second start of the same root with other content is refused: no record appears.
  await rejectsWith(
    committer.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.runningWithPendingInput() }), {
      events: [],
      hostValues: { [idempotencyHostValue]: intent },
    }),
    'commit_conflict',
  );
  assert.equal(await idempotency.lookup(intent.keyDigest), undefined);
  // An acknowledged start writes it.
  const fresh = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  await committer.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: fresh.running(0) }), {
    events: [],
    hostValues: { [idempotencyHostValue]: intent },
  });
  assert.equal((await idempotency.lookup(intent.keyDigest))?.processId, fresh.rootId.toString());
  // Sealed: nothing more commits.
  committer.seal();
  await rejectsWith(
    committer.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random()).running(0) })),
    'committer_unavailable',
  );
  await committer.drained();
});

test('authority: a start may only narrow the server grant', async () => {
  const grants = JSON.stringify({
    budget: { steps: { maximum: 100 }, effects: { maximum: 10 } },
    treeLimits: { maxDepth: 4, maxPendingSignals: 50 },
    capabilities: ['demo.read', 'demo.write'],
  });
  const host = embeddedHost({ env: { SCOPE_GRANTS: grants } });
  try {
    const base = { deployment: 'demo.echo', input: { value: 'x' } };
    // A member the grant omits keeps the safe default (signals: the mailbox bound), not unlimited.
    const budget = (steps: number | null) => ({ steps: { maximum: steps }, effects: { maximum: 10 }, signals: { maximum: grantDefaults.signalsPerProcess } });
    await rejectsWith(host.startProcess({ ...base, budget: budget(101) }), 'authority_exceeded');
    await rejectsWith(host.startProcess({ ...base, budget: budget(null) }), 'authority_exceeded');
    await rejectsWith(host.startProcess({ ...base, budget: { ...budget(1), signals: { maximum: null } } }), 'authority_exceeded');
    await rejectsWith(host.startProcess({ ...base, capabilities: ['demo.admin'] }), 'authority_exceeded');
    await rejectsWith(host.startProcess({ ...base, treeLimits: { maxDepth: 5 } }), 'authority_exceeded');
    await rejectsWith(host.startProcess({ ...base, treeLimits: { maxPendingSignals: 51 } }), 'authority_exceeded');
    // The default: exactly the grant.
    const granted = await start(host, 'demo.echo', { value: 'x' });
    assert.deepEqual(granted.budget, budget(100));
    assert.deepEqual(granted.capabilities, ['demo.read', 'demo.write']);
    // A narrower start gets exactly what it asked for.
    const narrow = await start(host, 'demo.echo', { value: 'x' }, { budget: budget(5), capabilities: ['demo.read'], treeLimits: { maxDepth: 2 } });
    assert.deepEqual(narrow.budget, budget(5));
    assert.deepEqual(narrow.capabilities, ['demo.read']);
    const snapshot = TreeSnapshot.parse((await host.snapshot(narrow.processId)).json);
    assert.equal(snapshot.treeLimits.maxDepth, 2);
    assert.equal(snapshot.treeLimits.maxPendingSignals, 50n);
    assert.equal((await result(host, narrow.processId)).status, 'completed');
    // A budget too small to finish is honoured by the Engine.
    const starved = await start(host, 'demo.echo', { value: 'x' }, { budget: budget(1) });
    const outcome = await result(host, starved.processId);
    assert.equal(outcome.status, 'failed');
    assert.equal(outcome.failure?.code, 'engine.limit.steps');
  } finally {
    await host.close(0);
  }
});

test('listing: newest first, filters, an opaque cursor', async () => {
  const host = embeddedHost();
  try {
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1) {
      ids.push((await start(host, index % 2 === 0 ? 'demo.approval' : 'demo.counter', index % 2 === 0 ? { subject: `s${index}` } : { target: 1 })).processId);
    }
    const newestFirst = [...ids].reverse();
    const first = await host.listProcesses({ limit: 2 });
    assert.deepEqual(first.items.map((item) => item.processId), newestFirst.slice(0, 2));
    assert.ok(first.nextCursor !== null);
    const second = await host.listProcesses({ limit: 2, cursor: first.nextCursor ?? undefined });
    assert.deepEqual(second.items.map((item) => item.processId), newestFirst.slice(2, 4));
    const third = await host.listProcesses({ limit: 2, cursor: second.nextCursor ?? undefined });
    assert.deepEqual(third.items.map((item) => item.processId), newestFirst.slice(4));
    assert.equal(third.nextCursor, null);
    const approvals = await host.listProcesses({ deployment: 'demo.approval' });
    assert.deepEqual(approvals.items.map((item) => item.processId), [ids[4], ids[2], ids[0]]);
    assert.ok(approvals.items.every((item) => item.deployment === 'demo.approval' && typeof item.startedAt === 'string'));
    await untilSettled(host, ids[0] as string, stepCommittedWith('waiting'));
    const waiting = await host.listProcesses({ status: 'waiting', deployment: 'demo.approval' });
    assert.ok(waiting.items.some((item) => item.processId === ids[0]));
    assert.ok(waiting.items.every((item) => item.status === 'waiting'));
    await rejectsWith(host.listProcesses({ status: 'sleeping' }), 'invalid_request');
    await rejectsWith(host.listProcesses({ limit: 0 }), 'invalid_request');
    await rejectsWith(host.listProcesses({ limit: 101 }), 'invalid_request');
    await rejectsWith(host.listProcesses({ cursor: '!!' }), 'invalid_request');
    await rejectsWith(host.listProcesses({ cursor: Buffer.from('garbage').toString('base64url') }), 'invalid_request');
  } finally {
    await host.close(0);
  }
});

test('inspection and the result long poll', async () => {
  const host = embeddedHost();
  try {
    await rejectsWith(host.inspectProcess('not an id'), 'invalid_request');
    await rejectsWith(host.inspectProcess('process:unknown'), 'process_not_found');
    const process = await start(host, 'demo.approval', { subject: 'poll' });
    const pid = process.processId;
    assert.equal(process.rootId, pid);
    assert.equal(process.parentId, null);
    assert.equal(process.depth, 0);
    assert.equal(process.deployment, 'demo.approval');
    assert.match(process.deploymentRef, /^demo\.approval\+sha256:/);
    assert.equal(process.result, null);
    assert.equal(process.runtimeError, null);
    await rejectsWith(host.awaitResult(pid, -1), 'invalid_request');
    await rejectsWith(host.awaitResult(pid, 60_001), 'invalid_request');
    await rejectsWith(host.awaitResult(pid, 1.5), 'invalid_request');
    const now = await host.awaitResult(pid, 0);
    assert.equal(now.done, false);
    // A long poll ends early when the caller goes away.
    const abort = new AbortController();
    const pending = host.awaitResult(pid, 60_000, abort.signal);
    abort.abort();
    assert.equal((await pending).done, false);
    await untilSettled(host, pid, stepCommittedWith('waiting'));
    const waiting = await host.inspectProcess(pid);
    const poll = host.awaitResult(pid, 60_000);
    await host.deliverSignals(pid, [{ id: 'yes', waitId: waiting.waitId as string, payload: { approved: false } }]);
    const done = await poll;
    assert.ok(done.done);
    assert.equal(done.result.status, 'completed');
    assert.deepEqual(done.result.output, { subject: 'poll', approved: false, notes: [] });
    assert.equal(done.result.reason, null);
    assert.equal(done.result.failure, null);
    const finished = await host.inspectProcess(pid);
    assert.deepEqual(finished.result, done.result);
    assert.ok((await host.signals(pid, {})).items.some((receipt) => receipt.id === 'yes' && receipt.consumed && receipt.payload === null));
    await rejectsWith(host.deliverSignals(pid, []), 'invalid_request');
    await rejectsWith(host.deliverSignals(pid, [{ id: 'signal:engine:forged', payload: {} }]), 'invalid_request');
    await rejectsWith(host.control(pid, 'pause', ' padded '), 'invalid_request');
    await rejectsWith(host.control(pid, 'stop' as never), 'invalid_request');
    await rejectsWith(host.replayEffect(pid, 'not an effect id'), 'invalid_request');
    await rejectsWith(host.resolveEffect(pid, 'effect:x', { status: 'unknown', payload: {} } as never), 'invalid_request');
    await rejectsWith(host.resolveEffect(pid, 'effect:x', { status: 'failed' } as never), 'invalid_request');
    await rejectsWith(host.effects('process:missing', {}), 'process_not_found');
  } finally {
    await host.close(0);
  }
});

test('trees: inspect, snapshot digest, capture, release, restore from the stored head, purge', async () => {
  const host = embeddedHost();
  try {
    await rejectsWith(host.inspectTree('process:none'), 'tree_not_found');
    await rejectsWith(host.snapshot('process:none'), 'tree_not_found');
    const process = await start(host, 'demo.approval', { subject: 'tree' });
    const pid = process.processId;
    await untilSettled(host, pid, stepCommittedWith('waiting'));
    const tree = await host.inspectTree(pid);
    assert.equal(tree.active, true);
    assert.equal(tree.stopped, false);
    assert.equal(tree.freeze, 'none');
    assert.equal(tree.processes.length, 1);
    const snapshot = await host.snapshot(pid);
    assert.equal(TreeSnapshot.parse(snapshot.json).digest.toString(), snapshot.digest);
    assert.equal(snapshot.digest, tree.headDigest);
    const captured = await host.captureTree(pid);
    assert.equal(captured.digest, snapshot.digest);
    // A live tree cannot be released or purged.
    await rejectsWith(host.releaseTree(pid, false), 'tree_live');
    await host.control(pid, 'cancel');
    await result(host, pid);
    await host.releaseTree(pid, false);
    // Released: served from the stored head, inactive; commands on its finished process answer from
    // the head (finished is final), a capture needs a restore.
    const stored = await host.inspectProcess(pid);
    assert.equal(stored.work, 'inactive');
    assert.equal(stored.status, 'canceled');
    assert.equal((await host.inspectTree(pid)).active, false);
    await rejectsWith(host.control(pid, 'kill'), 'process_finished');
    await rejectsWith(host.deliverSignals(pid, [{ id: 'x', payload: {} }]), 'process_finished');
    assert.equal((await host.inspectTree(pid)).active, false);
    await rejectsWith(host.captureTree(pid), 'tree_not_active');
    assert.equal((await host.awaitResult(pid, 0)).done, true);
    const restored = await host.restoreTree(pid);
    assert.equal(restored.active, true);
    assert.notEqual(restored.incarnationId, tree.incarnationId);
    assert.equal((await host.restoreTree(pid)).incarnationId, restored.incarnationId); // already owned: no-op
    await host.releaseTree(pid, true);
    await rejectsWith(host.inspectTree(pid), 'tree_not_found');
    await rejectsWith(host.inspectProcess(pid), 'process_not_found');
    await rejectsWith(host.releaseTree(pid, true), 'tree_not_found');
    await rejectsWith(host.events(pid, {}), 'process_not_found');
    assert.equal((await host.listProcesses({})).items.some((item) => item.processId === pid), false);
  } finally {
    await host.close(0);
  }
});

test('events: pages with cursors, type and process filters; bad cursors are invalid_request', async () => {
  const host = embeddedHost();
  try {
    const process = await start(host, 'demo.echo', { value: 'abc' });
    const all = await drainStream(host, process.processId);
    const first = await host.events(process.processId, { limit: 4 });
    assert.deepEqual(first.items, all.slice(0, 4));
    assert.equal(first.nextCursor, all[3]?.position);
    const rest = await host.events(process.processId, { after: first.nextCursor ?? undefined, limit: 1000 });
    assert.deepEqual(rest.items, all.slice(4));
    assert.equal(rest.nextCursor, null);
    const deltas = await host.events(process.processId, { types: ['agent.delta'] });
    assert.equal(deltas.items.length, 3);
    const mine = await host.events(process.processId, { processId: 'process:other' });
    assert.deepEqual(mine.items, []);
    await rejectsWith(host.events(process.processId, { after: 'x' }), 'invalid_request');
    await rejectsWith(host.events(process.processId, { after: '01' }), 'invalid_request');
    await rejectsWith(host.events(process.processId, { limit: 1001 }), 'invalid_request');
  } finally {
    await host.close(0);
  }
});

test('stream: stored entries, then live, ending after the terminal event; resume without gap or repeat', async () => {
  const host = embeddedHost();
  try {
    const process = await start(host, 'demo.approval', { subject: 's' });
    const pid = process.processId;
    // A live reader from the start.
    const live = drainStream(host, pid);
    await untilSettled(host, pid, stepCommittedWith('waiting'));
    const before = (await host.events(pid, { limit: 1000 })).items;
    const cut = before[before.length - 1]?.position as string;
    const waitId = (await host.inspectProcess(pid)).waitId as string;
    await host.deliverSignals(pid, [{ id: 'note', payload: { note: 'n' } }, { id: 'a', waitId, payload: { approved: true } }]);
    const everything = await live;
    assert.equal(everything.filter((entry) => entry.type === 'agent.process.finished').length, 1);
    assert.equal(everything.at(-1)?.type === 'agent.process.finished' || everything.at(-1)?.type === 'agent.step.finished', true);
    // Resuming after `cut` yields exactly the rest.
    const resumed = await drainStream(host, pid, cut);
    const index = everything.findIndex((entry) => entry.position === cut);
    assert.deepEqual(resumed, everything.slice(index + 1));
    // After the end: an immediate end.
    assert.deepEqual(await drainStream(host, pid, everything.at(-1)?.position), []);
    // Filters.
    const signals: string[] = [];
    for await (const entry of streamOf(host, pid, { signal: new AbortController().signal, types: ['agent.signal.accepted'] })) signals.push(entry.type);
    assert.deepEqual(signals, ['agent.signal.accepted', 'agent.signal.accepted']);
    // Bad input.
    await rejectsWith(host.openStream(pid, { signal: new AbortController().signal, after: '1.5' }), 'invalid_request');
    await rejectsWith(host.openStream('bad id', { signal: new AbortController().signal }), 'invalid_request');
    await rejectsWith(host.openStream('process:absent', { signal: new AbortController().signal }), 'tree_not_found');
  } finally {
    await host.close(0);
  }
});

test('stream: an abort ends a live tail; close ends every stream', async () => {
  const host = embeddedHost();
  const process = await start(host, 'demo.approval', { subject: 's' });
  const abort = new AbortController();
  const seen: string[] = [];
  const reader = (async () => {
    for await (const { entry } of await host.openStream(process.processId, { signal: abort.signal })) {
      seen.push(entry.type);
      if (entry.type === 'agent.step.committed' && (dataOf(entry) as { payload: { status: string } }).payload.status === 'waiting') abort.abort();
    }
  })();
  await reader;
  assert.ok(seen.includes('agent.process.started'));
  const closing = drainStream(host, process.processId);
  await untilEntry(host, process.processId, stepCommittedWith('waiting'));
  await host.close(1_000);
  const entries = await closing;
  assert.equal(entries.some((entry) => entry.type === 'agent.process.finished'), false);
  await rejectsWith(host.startProcess({ deployment: 'demo.echo', input: { value: 'late' } }), 'shutting_down');
  await rejectsWith(host.restoreTree(process.processId), 'shutting_down');
  assert.equal((await host.readiness()).ready, false);
});

test('readiness, metrics and the SSE telemetry', async () => {
  const host = embeddedHost();
  try {
    assert.deepEqual(await host.readiness(), { ready: true, checks: { engine: 'ok', dispatch: 'ok' } });
    const process = await start(host, 'demo.echo', { value: 'm' });
    await drainStream(host, process.processId);
    const paused = await start(host, 'demo.approval', { subject: 'x' });
    await untilSettled(host, paused.processId, stepCommittedWith('waiting'));
    const done = host.telemetry.sseClientConnected();
    let metrics = await host.metrics();
    assert.match(metrics.contentType, /^text\/plain/);
    assert.match(metrics.body, /scope_sse_clients 1/);
    // What exists (the root index), and apart from it what is resident here (the structure issue's defect 8).
    assert.match(metrics.body, /^scope_processes 2$/m);
    assert.match(metrics.body, /scope_resident_processes\{status="completed"\} 1/);
    assert.match(metrics.body, /scope_resident_processes\{status="waiting"\} 1/);
    assert.match(metrics.body, /# TYPE scope_event_log_append_failures_total counter/);
    assert.match(metrics.body, /scope_processes_finished_total\{status="completed",cause="completion"\} 1/);
    assert.match(metrics.body, /scope_steps_total\{status="succeeded"\} [1-9]/);
    assert.match(metrics.body, /scope_effects_settled_total\{status="succeeded"\} 1/);
    assert.match(metrics.body, /scope_commit_duration_seconds_count\{kind="start",outcome="ok"\} 2/);
    assert.match(metrics.body, /scope_commit_duration_seconds_count\{kind="effect",outcome="ok"\} 2/);
    done('completed');
    done('completed'); // only the first call counts
    metrics = await host.metrics();
    assert.match(metrics.body, /scope_sse_clients 0/);
    assert.match(metrics.body, /scope_sse_streams_ended_total\{reason="completed"\} 1/);
    assert.ok(host.telemetry.registry.getSingleMetric('scope_sse_clients') !== undefined);
    await untilEntry(host, process.processId, ofType('agent.process.finished'));
  } finally {
    await host.close(0);
  }
});

test('finished trees beyond the retention are released to bound memory; they still answer as finished processes', async () => {
  const host = embeddedHost({ finishedTreeRetention: 1 });
  try {
    const first = await start(host, 'demo.approval', { subject: 'old' });
    await untilSettled(host, first.processId, stepCommittedWith('waiting'));
    const waitId = (await host.inspectProcess(first.processId)).waitId as string;
    const answer = { id: 'answer', waitId, payload: { approved: true } };
    await host.deliverSignals(first.processId, [answer]);
    await result(host, first.processId);
    const second = await start(host, 'demo.echo', { value: 'new' });
    await result(host, second.processId);
    await host.settleReleases();
    assert.equal((await host.inspectTree(first.processId)).active, false);
    assert.equal((await host.inspectTree(second.processId)).active, true);
    const view = await host.inspectProcess(first.processId);
    assert.equal(view.work, 'inactive');
    assert.equal(view.status, 'completed');
    // No runtime is needed to answer a finished process.
    assert.deepEqual(await host.deliverSignals(first.processId, [answer]), { accepted: false });
    await rejectsWith(host.deliverSignals(first.processId, [{ ...answer, id: 'other' }]), 'process_finished');
    await rejectsWith(host.control(first.processId, 'cancel'), 'process_finished');
    assert.equal((await host.captureTree(first.processId)).digest, (await host.snapshot(first.processId)).digest);
    assert.equal((await host.awaitResult(first.processId, 0)).done, true);
    assert.ok((await host.listProcesses({})).items.some((item) => item.processId === first.processId));
  } finally {
    await host.close(0);
  }
});

test('list: nextCursor is null exactly when nothing follows; a deployment filter reads its own index', async () => {
  const host = embeddedHost();
  try {
    const approvals = [];
    for (let index = 0; index < 3; index += 1) approvals.push((await start(host, 'demo.approval', { subject: `a${index}` })).processId);
    // Many newer roots of another deployment: before, a filtered page scanned them and came back empty
    // with a cursor, several times in a row (the structure issue's defect 8).
    for (let index = 0; index < 250; index += 1) await start(host, 'demo.counter', { target: 1 });
    const filtered = await host.listProcesses({ deployment: 'demo.approval', limit: 3 });
    assert.deepEqual(filtered.items.map((item) => item.processId), [...approvals].reverse());
    assert.equal(filtered.nextCursor, null, 'the page holds the last of them');
    const two = await host.listProcesses({ deployment: 'demo.approval', limit: 2 });
    assert.equal(two.items.length, 2);
    assert.notEqual(two.nextCursor, null);
    const rest = await host.listProcesses({ deployment: 'demo.approval', limit: 2, cursor: two.nextCursor as string });
    assert.deepEqual(rest.items.map((item) => item.processId), [approvals[0]]);
    assert.equal(rest.nextCursor, null);
    // Unfiltered: a page that ends exactly at the oldest root says so.
    const all = await host.listProcesses({ limit: 100 });
    let cursor = all.nextCursor;
    let seen = all.items.length;
    while (cursor !== null) {
      const page = await host.listProcesses({ limit: 100, cursor });
      assert.ok(page.items.length > 0, 'a non-null cursor always leads somewhere');
      seen += page.items.length;
      cursor = page.nextCursor;
    }
    assert.equal(seen, 253);
    assert.deepEqual((await host.listProcesses({ deployment: 'demo.sleep' })).items, []);
  } finally {
    await host.close(0);
  }
});

test('a dozen concurrent result polls and streams raise no listener-leak warning (each links to the shared shutdown)', async () => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error): void => {
    if (warning.name === 'MaxListenersExceededWarning') warnings.push(warning);
  };
  process.on('warning', onWarning);
  const host = embeddedHost();
  try {
    const approval = await start(host, 'demo.approval', { subject: 'many' });
    const pid = approval.processId;
    await untilSettled(host, pid, stepCommittedWith('waiting'));
    const polls = Array.from({ length: 12 }, () => host.awaitResult(pid, 60_000));
    const streams = Array.from({ length: 12 }, () => drainStream(host, pid));
    // Barrier: every poll and stream has linked itself to the shutdown signal (in-memory, no timer).
    await untilEntry(host, pid, stepCommittedWith('waiting'));
    await new Promise((resolve) => setImmediate(resolve));
    const waiting = await host.inspectProcess(pid);
    await host.deliverSignals(pid, [{ id: 'ok', waitId: waiting.waitId as string, payload: { approved: true } }]);
    for (const poll of await Promise.all(polls)) assert.equal(poll.done, true);
    for (const entries of await Promise.all(streams)) assert.equal(entries.at(-1)?.type, 'agent.process.finished');
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(warnings.map((warning) => warning.message), []);
  } finally {
    process.off('warning', onWarning);
    await host.close(0);
  }
});
