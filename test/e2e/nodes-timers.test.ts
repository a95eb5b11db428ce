import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { activeOn, Cluster, committedNames, eventually, exited, explained, json, leaseMs, processUrl, startProcess, type Node } from './nodes-cluster.js';

/**
 * Durable timers across real `scope serve` nodes (docs/host.md "Durable timers"): the owner of a
 * sleeping tree is SIGKILLed, and a survivor completes the sleep at the instant its pending commit
 * fixed — not a sleep's length after the takeover — with the timer settled once.
 */

const cluster = new Cluster();
let a: Node;
let b: Node;
let c: Node;
const sleepMs = 6_000;
/**
 * How late a survivor may complete the sleep: a poll period, a restore and two commits, on a shared,
 * loaded machine (measured 20–1,100 ms) — well under the sleep's own length, which a replay from the
 * start would add.
 */
const slackMs = 2_500;

before(async () => {
  await cluster.start();
  const timers = { SCOPE_TIMER_POLL_MS: '200' };
  [a, b, c] = await Promise.all([
    cluster.node('a', { ...timers, SCOPE_HIBERNATE_AFTER_MS: '200' }),
    cluster.node('b', { ...timers, SCOPE_HIBERNATE_AFTER_MS: '200' }),
    cluster.node('c', { ...timers, SCOPE_HIBERNATE_AFTER_MS: '0' }),
  ]);
});

after(async () => {
  await cluster.stop();
});

async function counter(node: Node, name: string): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

/** The due instant the sleep's pending commit recorded with the head (epoch ms). */
async function dueOf(node: Node, id: string): Promise<number> {
  const effectId = await eventually(async () => {
    const effects = (await json(await fetch(processUrl(node, id, '/effects')))).items as Array<{ effectId: string; status: string }>;
    return effects.find((effect) => effect.status === 'pending')?.effectId;
  }, `${id} pending`);
  const record = await cluster.redis.get(`${cluster.prefix}:{${id}}:record:timer:${effectId}`);
  assert.ok(record !== null, 'the pending commit wrote the timer record');
  return Number(record);
}

/** Completes on whichever survivor, and when (the result's `finishedAt`). */
async function finished(survivor: Node, id: string): Promise<{ status: string; finishedAt: number }> {
  return eventually(
    async () => {
      const result = await json(await fetch(processUrl(survivor, id, '/result?waitMs=5000')));
      return result?.status === 'completed' ? { status: result.status as string, finishedAt: Date.parse(result.finishedAt as string) } : undefined;
    },
    `${id} completed`,
    sleepMs + leaseMs + 15_000,
  );
}

async function settledOnce(node: Node, id: string): Promise<void> {
  const names = await committedNames(node, id);
  assert.equal(names.filter((name) => name === 'agent.effect.finished').length, 1, `one settlement: ${names.join(', ')}`);
  assert.equal(names.filter((name) => name === 'agent.process.finished').length, 1);
}

/**
 * Asserts the survivor completed the sleep within the slack of its instant; a failure carries the
 * timeline (epoch ms) and the tail of every node's log, so a late completion can be explained.
 */
async function assertOnTime(label: string, timeline: { started: number; due: number; killed: number }, done: { finishedAt: number }): Promise<void> {
  const late = done.finishedAt - timeline.due;
  process.stdout.write(`# ${label}: completed ${late} ms after its instant\n`);
  const at = (ms: number): string => `${ms - timeline.started} ms`;
  const story = `started at 0, due at ${at(timeline.due)}, owner killed at ${at(timeline.killed)}, finished at ${at(done.finishedAt)}, checked at ${at(Date.now())}`;
  await explained([a, b, c], async () => {
    assert.ok(late >= 0, `not before its instant (${late} ms; ${story})`);
    assert.ok(late <= slackMs, `at its instant, not ${late} ms later (${story})`);
  });
}

test('SIGKILL of the node a hibernated sleeping tree belongs to: a survivor completes it at its instant, settled once', async () => {
  const started = Date.now();
  const id = await startProcess(a, 'demo.sleep', { ms: sleepMs });
  const due = await dueOf(a, id);
  // Parked on its timer: it leaves a's memory after 200 ms idle.
  await eventually(async () => ((await activeOn([a], id)).length === 0 ? true : undefined), `${id} hibernated on a`);
  assert.ok((await counter(a, 'scope_trees_hibernated_total')) >= 1);

  a.child.kill('SIGKILL');
  const killed = Date.now();
  await exited(a.child);
  await assertOnTime('hibernated sleep, owner SIGKILLed', { started, due, killed }, await finished(b, id));
  await settledOnce(b, id);
});

test('SIGKILL of the node a resident sleeping tree runs on: the survivor completes it at its instant, not a sleep later', async () => {
  const started = Date.now();
  const id = await startProcess(c, 'demo.sleep', { ms: sleepMs });
  const due = await dueOf(c, id);
  assert.equal((await activeOn([c], id)).length, 1, 'c does not hibernate: the sleep waits in its memory');
  await new Promise((resolve) => setTimeout(resolve, 500));
  c.child.kill('SIGKILL');
  const killed = Date.now();
  await exited(c.child);
  await assertOnTime('resident sleep, owner SIGKILLed', { started, due, killed }, await finished(b, id));
  await settledOnce(b, id);
});
