/**
 * The demo deployments end to end through the Host (rest-api.md, "Built-in demo deployments"),
 * registered once per mode: every behaviour must hold in embedded and in Redis mode alike.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EngineHost } from '../../src/server/engine-host.js';
import { dataOf, drainStream, effectsOf, ofType, payloadOf, rejectsWith, result, start, stepCommittedWith, untilEntry, untilSettled } from './harness.js';

export interface HostFactory {
  /** A fresh Host (its own store namespace). */
  make(): EngineHost;
}

export function demoFlows(mode: string, factory: HostFactory): void {
  const withHost = (name: string, body: (host: EngineHost) => Promise<void>): void => {
    test(`${mode}: ${name}`, async () => {
      const host = factory.make();
      try {
        await body(host);
      } finally {
        await host.close(2_000);
      }
    });
  };

  withHost('demo.fanout: a tree of echo children — quorum at subtree_drained, the rest canceled, every process in the tree view and the log', async (host) => {
    const process = await start(host, 'demo.fanout', { values: ['a', 'b', 'c', 'd'], quorum: 2 });
    const root = process.processId;
    const entries = await drainStream(host, root);
    const outcome = await result(host, root);
    assert.equal(outcome.status, 'completed');
    const output = outcome.output as { outputs: Array<{ processId: string; value: string }>; canceled: string[] };
    assert.ok(output.outputs.length >= 2, JSON.stringify(output));
    assert.ok(output.outputs.every((entry) => ['a', 'b', 'c', 'd'].includes(entry.value)));
    const tree = await host.inspectTree(root);
    assert.equal(tree.processes.length, 5);
    const children = tree.processes.filter((view) => view.parentId === root);
    assert.equal(children.length, 4);
    assert.ok(children.every((view) => view.depth === 1 && view.rootId === root && view.result !== null));
    for (const id of output.canceled) {
      const child = await result(host, id);
      assert.ok(child.status === 'completed' || child.cause === 'parent_cancellation', `${id}: ${child.status} ${child.cause}`);
    }
    const listed = await host.children(root);
    assert.deepEqual(new Set(listed.items.map((view) => view.processId)), new Set(children.map((view) => view.processId)));
    // The root's log carries the whole subtree: every child's start and end.
    const of = (name: string) => new Set(entries.filter((entry) => entry.type === name).map((entry) => (dataOf(entry) as { process_id?: string }).process_id));
    for (const child of children) {
      assert.ok(of('agent.process.started').has(child.processId), `started ${child.processId}`);
      assert.ok(of('agent.process.finished').has(child.processId), `finished ${child.processId}`);
    }
    // A child is its own process: inspected by its own id, its root is the fan-out.
    assert.equal((await host.inspectProcess(children[0]?.processId as string)).rootId, root);
  });

  // The structure issue's defect 3: the log read `effect.started a b step.finished c … effect.finished h … 9 …`
  // and deltas reached SSE clients after `agent.process.finished`.
  withHost('demo.echo: the log orders deltas before their settlement, and process.finished last', async (host) => {
    for (let round = 0; round < 5; round += 1) {
      const process = await start(host, 'demo.echo', { value: 'ordered!' });
      const pid = process.processId;
      const entries = await drainStream(host, pid);
      const names = entries.map((entry) => entry.type);
      const at = (name: string): number => names.indexOf(name);
      const deltas = names.flatMap((name, index) => (name === 'agent.delta' ? [index] : []));
      assert.equal(deltas.length, 'ordered!'.length, names.join(' '));
      assert.ok(deltas.every((index) => index > at('agent.effect.started') && index < at('agent.effect.finished')), names.join(' '));
      const committed = entries.filter((entry) => (dataOf(entry) as { phase?: string }).phase === 'committed').map((entry) => entry.type);
      assert.equal(committed.at(-1), 'agent.process.finished', `the last committed event: ${committed.join(' ')}`);
      assert.equal(names.at(-1), 'agent.process.finished', `nothing of the process follows its end: ${names.join(' ')}`);
      assert.ok(names.lastIndexOf('agent.step.finished') < at('agent.process.finished'), names.join(' '));
    }
  });

  withHost('demo.echo completes with one delta per character in the log and the stream', async (host) => {
    const process = await start(host, 'demo.echo', { value: 'héllo' });
    const entries = await drainStream(host, process.processId);
    const outcome = await result(host, process.processId);
    assert.equal(outcome.status, 'completed');
    assert.deepEqual(outcome.output, { value: 'héllo' });
    const deltas = entries.filter((entry) => entry.type === 'agent.delta');
    assert.deepEqual(
      deltas.map((entry) => payloadOf(entry)),
      [...'héllo'].map((char, index) => ({ index, char })),
    );
    // Deltas carry their per-attempt sequence, gap-free here.
    assert.deepEqual(
      deltas.map((entry) => (dataOf(entry) as { effect_sequence: number }).effect_sequence),
      [1, 2, 3, 4, 5],
    );
    const names = entries.map((entry) => entry.type);
    assert.equal(names[0], 'agent.process.started');
    assert.ok(names.includes('agent.process.finished'));
    // Positions strictly increase.
    const page = await host.events(process.processId, { limit: 1000 });
    assert.deepEqual(
      page.items.map((entry) => entry.position),
      entries.map((entry) => entry.position),
    );
    const effects = await effectsOf(host, process.processId);
    assert.equal(effects.length, 1);
    assert.equal(effects[0]?.status, 'settled');
    assert.equal(effects[0]?.attempts, 1);
    assert.equal(effects[0]?.target, 'dispatcher');
    assert.equal(effects[0]?.stepSequence, 1);
    assert.equal(effects[0]?.batchIndex, 0);
  });

  withHost('demo.approval waits in the inbox, queues notes, and completes on the answer', async (host) => {
    const process = await start(host, 'demo.approval', { subject: 'release 1.0' });
    const pid = process.processId;
    // A note before the wait is open is read with the answer too.
    assert.deepEqual(await host.deliverSignals(pid, [{ id: 'note-early', payload: { note: 'first' } }]), { accepted: true });
    await untilSettled(host, pid, stepCommittedWith('waiting', pid));
    const view = await host.inspectProcess(pid);
    assert.equal(view.status, 'waiting');
    assert.equal(view.waitKind, 'external');
    const waitId = view.waitId;
    assert.ok(waitId !== null);
    const inbox = await host.waits();
    const wait = inbox.find((entry) => entry.processId === pid);
    assert.deepEqual(wait && { ...wait, since: typeof wait.since, answerSchema: typeof wait.answerSchema, description: typeof wait.description }, {
      processId: pid,
      rootId: pid,
      waitId,
      waitKind: 'external',
      key: 'approval',
      deployment: 'demo.approval',
      since: 'string',
      answerSchema: 'object',
      prompt: null,
      description: 'string',
    });
    // A malformed answer is refused at admission; the wait stays open (the structure issue's defect 1).
    await rejectsWith(host.deliverSignals(pid, [{ id: 'typo', waitId, payload: { approved: 'yes' } }]), 'schema_validation_failed');
    assert.equal((await host.inspectProcess(pid)).waitId, waitId);
    // Notes queue without releasing the wait.
    assert.deepEqual(await host.deliverSignals(pid, [{ id: 'note-1', payload: { note: 'second' } }]), { accepted: true });
    assert.equal((await host.inspectProcess(pid)).status, 'waiting');
    // Unaddressed input outside the signal schema, or an answer to another wait, admits nothing.
    await rejectsWith(host.deliverSignals(pid, [{ id: 'bad', payload: { approved: true } }]), 'schema_validation_failed');
    await rejectsWith(
      host.deliverSignals(pid, [
        { id: 'note-2', payload: { note: 'never admitted' } },
        { id: 'wrong', waitId: 'wait:nope', payload: { approved: true } },
      ]),
      'signal_rejected',
    );
    await host.deliverSignals(pid, [{ id: 'answer', waitId, payload: { approved: true, comment: 'ship it' } }]);
    const outcome = await result(host, pid);
    assert.equal(outcome.status, 'completed');
    assert.deepEqual(outcome.output, { subject: 'release 1.0', approved: true, comment: 'ship it', notes: ['first', 'second'] });
    assert.equal((await host.waits()).some((entry) => entry.processId === pid), false);
  });

  withHost('demo.counter deduplicates a repeated signal id and refuses other content under it', async (host) => {
    const process = await start(host, 'demo.counter', { target: 3 });
    const pid = process.processId;
    await untilSettled(host, pid, stepCommittedWith('waiting', pid, 1));
    const first = (await host.inspectProcess(pid)).waitId as string;
    assert.deepEqual(await host.deliverSignals(pid, [{ id: 'add-1', waitId: first, payload: { add: 2 } }]), { accepted: true });
    assert.deepEqual(await host.deliverSignals(pid, [{ id: 'add-1', waitId: first, payload: { add: 2 } }]), { accepted: false });
    await rejectsWith(host.deliverSignals(pid, [{ id: 'add-1', waitId: first, payload: { add: 5 } }]), 'signal_conflict');
    await untilSettled(host, pid, stepCommittedWith('waiting', pid, 2));
    const second = (await host.inspectProcess(pid)).waitId as string;
    assert.notEqual(second, first);
    await host.deliverSignals(pid, [{ id: 'add-2', waitId: second, payload: { add: 1 } }]);
    const outcome = await result(host, pid);
    assert.deepEqual(outcome.output, { total: 3, rounds: 2 });
    // A terminal process: identical re-delivery → accepted false; anything new → process_finished.
    assert.deepEqual(await host.deliverSignals(pid, [{ id: 'add-2', waitId: second, payload: { add: 1 } }]), { accepted: false });
    await rejectsWith(host.deliverSignals(pid, [{ id: 'add-3', waitId: second, payload: { add: 1 } }]), 'process_finished');
    await rejectsWith(
      host.deliverSignals(pid, [
        { id: 'add-2', waitId: second, payload: { add: 1 } },
        { id: 'add-4', waitId: second, payload: { add: 1 } },
      ]),
      'process_finished',
    );
  });

  withHost('demo.unreliable: ok completes, fail fails definitely', async (host) => {
    const ok = await start(host, 'demo.unreliable', { mode: 'ok', replayable: false });
    assert.deepEqual((await result(host, ok.processId)).output, { mode: 'ok', attempts: 1 });
    const fail = await start(host, 'demo.unreliable', { mode: 'fail', replayable: false });
    const failed = await result(host, fail.processId);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.cause, 'external_failure');
    assert.equal(failed.failure?.code, 'demo.unreliable.failed');
    assert.equal((await effectsOf(host, fail.processId))[0]?.status, 'settled');
  });

  withHost('demo.unreliable unknown → host resolution completes it; replay is forbidden when not replayable', async (host) => {
    const process = await start(host, 'demo.unreliable', { mode: 'unknown', replayable: false });
    const pid = process.processId;
    await untilSettled(host, pid, ofType('agent.effect.finished', pid));
    const view = await host.inspectProcess(pid);
    assert.equal(view.unknownEffectIds.length, 1);
    const effectId = view.unknownEffectIds[0] as string;
    const [unknown] = await effectsOf(host, pid);
    assert.equal(unknown?.status, 'unknown');
    assert.equal(unknown?.attempts, 1);
    assert.equal(unknown?.settlement?.status, 'unknown');
    assert.equal(unknown?.diagnostic?.code, 'engine.dispatch.failed');
    await rejectsWith(host.replayEffect(pid, effectId), 'effect_replay_forbidden');
    await rejectsWith(host.resolveEffect(pid, 'effect:missing', { status: 'succeeded', payload: {} }), 'effect_not_found');
    const resolved = await host.resolveEffect(pid, effectId, { status: 'succeeded', payload: { attempts: 7 } });
    assert.equal(resolved.status, 'resolved');
    // The response shows the settlement it established (the structure issue's defect 8: it was null).
    assert.deepEqual(resolved.settlement, { effectId, status: 'succeeded', payload: { attempts: 7 } });
    assert.equal(resolved.attempts, 1);
    const outcome = await result(host, pid);
    assert.deepEqual(outcome.output, { mode: 'unknown', attempts: 7 });
    const [after] = await effectsOf(host, pid);
    assert.equal(after?.status, 'resolved');
  });

  withHost('demo.unreliable unknown + replayable → replay succeeds under the same identity', async (host) => {
    const process = await start(host, 'demo.unreliable', { mode: 'unknown', replayable: true });
    const pid = process.processId;
    await untilSettled(host, pid, ofType('agent.effect.finished', pid));
    const effectId = (await host.inspectProcess(pid)).unknownEffectIds[0] as string;
    const replayed = await host.replayEffect(pid, effectId);
    assert.equal(replayed.status, 'resolved');
    assert.equal(replayed.attempts, 2);
    assert.deepEqual((await result(host, pid)).output, { mode: 'unknown', attempts: 2 });
    await rejectsWith(host.replayEffect(pid, effectId), 'process_finished');
  });

  withHost('demo.sleep: pause then resume completes; cancel and kill end with their causes', async (host) => {
    const paused = await start(host, 'demo.sleep', { ms: 300 });
    // Pause applies at the next safe boundary, whatever the process is doing right now.
    await host.control(paused.processId, 'pause', 'hold on');
    await untilSettled(host, paused.processId, ofType('agent.process.paused', paused.processId));
    const view = await host.inspectProcess(paused.processId);
    assert.equal(view.status, 'paused');
    assert.equal(view.pauseReason, 'hold on');
    await rejectsWith(host.control(paused.processId, 'pause'), 'invalid_process_control');
    await host.control(paused.processId, 'resume');
    const completed = await result(host, paused.processId);
    assert.equal(completed.status, 'completed');
    assert.deepEqual(completed.output, { sleptMs: 300 });
    await rejectsWith(host.control(paused.processId, 'resume'), 'process_finished');

    const canceled = await start(host, 'demo.sleep', { ms: 600_000 });
    await untilEntry(host, canceled.processId, ofType('agent.effect.started', canceled.processId));
    await host.control(canceled.processId, 'cancel');
    const cancelOutcome = await result(host, canceled.processId);
    assert.equal(cancelOutcome.status, 'canceled');
    assert.equal(cancelOutcome.cause, 'host_cancellation');
    assert.equal(cancelOutcome.reason, 'canceled by host request');

    const killed = await start(host, 'demo.sleep', { ms: 600_000 });
    await untilEntry(host, killed.processId, ofType('agent.effect.started', killed.processId));
    await host.control(killed.processId, 'kill', 'stop now');
    const killOutcome = await result(host, killed.processId);
    assert.equal(killOutcome.status, 'killed');
    assert.equal(killOutcome.cause, 'engine_kill');
    assert.equal(killOutcome.reason, 'stop now');
    await rejectsWith(host.control(killed.processId, 'cancel'), 'process_finished');
  });
}
