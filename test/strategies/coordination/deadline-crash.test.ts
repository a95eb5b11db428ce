/**
 * The Deadline crash test with real `scope serve` nodes in Redis mode: two deadlines are started,
 * their timers in flight, then every node is SIGKILLed and one new node starts. The pending timer
 * Effects are durable in the head; the new node takes the trees over once the dead leases lapse and
 * replays each timer under its identity, so each deadline completes with its instant — never before
 * it, and no later than the lease TTL + 5 s after the instant or after the node's return, whichever
 * is later. In the same crash a waiting InputGate and a FirstSuccess whose winner was mid-sleep
 * complete with the outputs an uninterrupted run gives. Synchronised on the processes' results
 * (long polls), not on sleeps.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cluster, eventually, exited, json, leaseMs, post, processUrl, startProcess, waitingWaitId, type Node } from '../../e2e/nodes-cluster.js';

const cluster = new Cluster();

before(async () => {
  await cluster.start();
});

after(async () => {
  await cluster.stop();
});

/** An RFC 3339 instant `ms` from now, at whole milliseconds. */
const ahead = (ms: number): string => new Date(Date.now() + ms).toISOString();

/** Resolves once the process's timer Effect is prepared and dispatched (its pending boundary committed). */
async function inFlight(node: Node, id: string): Promise<void> {
  await eventually(async () => ((await json(await fetch(processUrl(node, id, '/effects')))).items.length > 0 ? true : undefined), `${id} timer dispatched`);
}

test('a Deadline fires after every node was SIGKILLed and one returned, within the lease TTL + 5 s; a gate and a competition complete as uninterrupted', async () => {
  const [a, b] = await Promise.all([cluster.node('a'), cluster.node('b')]);
  const soon = ahead(2_000);
  const later = ahead(6_000);
  const ids = [await startProcess(a, 'example.coordination.deadline', soon), await startProcess(b, 'example.coordination.deadline', later)];
  await Promise.all([inFlight(a, ids[0]!), inFlight(b, ids[1]!)]);
  // Beside them, a gate waiting for its answer and a competition whose winner is still sleeping.
  const gate = await startProcess(a, 'example.coordination.input', { question: 'after the crash?' });
  const gateWait = await waitingWaitId(a, gate);
  const competition = await startProcess(b, 'example.coordination.first-success', [
    { deployment: 'demo.sleep', input: { ms: 4_000 }, budget: { steps: 4, effects: 2, signals: 4 } },
    { deployment: 'demo.echo', input: { value: 'reject' }, budget: { steps: 4, effects: 2, signals: 4 } },
  ]);
  const sleeper = await eventually(async () => {
    const children = (await json(await fetch(processUrl(b, competition, '/children')))).items as Array<{ processId: string; deployment: string }>;
    return children.find((child) => child.deployment === 'demo.sleep')?.processId;
  }, 'the sleeping candidate');
  await inFlight(b, sleeper);
  for (const node of [a, b]) node.child.kill('SIGKILL');
  await Promise.all([exited(a.child), exited(b.child)]);

  const c = await cluster.node('c');
  const returned = Date.now();
  const results = await Promise.all(
    ids.map((id) =>
      eventually(
        async () => {
          const result = await json(await fetch(processUrl(c, id, '/result?waitMs=2000')));
          return result?.status === 'completed' || result?.status === 'failed' ? { result, seen: Date.now() } : undefined;
        },
        `${id} result`,
        leaseMs + 15_000,
      ),
    ),
  );
  for (const [index, at] of [soon, later].entries()) {
    const { result, seen } = results[index]!;
    assert.equal(result.status, 'completed', JSON.stringify(result));
    assert.equal(result.output, at, 'completes with the same instant');
    const finished = Date.parse(result.finishedAt);
    const due = Math.max(Date.parse(at), returned);
    assert.ok(finished >= Date.parse(at), `never before the instant: finished ${result.finishedAt}, instant ${at}`);
    assert.ok(seen - due <= leaseMs + 5_000, `fired ${seen - due} ms after it was due (instant or return), bound ${leaseMs + 5_000} ms`);
    process.stdout.write(`# deadline ${at}: finished ${result.finishedAt}, ${finished - due} ms after due (node back at ${new Date(returned).toISOString()})\n`);
  }
  const effects = await json(await fetch(processUrl(c, ids[0]!, '/effects')));
  assert.equal(effects.items.length, 1, 'one timer Effect, replayed under its identity');

  // The competition was taken over with its winner's sleep in flight (replayed); the output is the
  // uninterrupted run's: the echo is refused, the sleep wins, nobody is left to cancel.
  const raced = await eventually(async () => {
    const result = await json(await fetch(processUrl(c, competition, '/result?waitMs=2000')));
    return result?.status === 'completed' || result?.status === 'failed' ? result : undefined;
  }, 'the competition result');
  const children = (await json(await fetch(processUrl(c, competition, '/children')))).items as Array<{ processId: string; deployment: string }>;
  const echoId = children.find((child) => child.deployment === 'demo.echo')?.processId;
  assert.deepEqual(raced.output, {
    winner: { index: 0, processId: sleeper, output: { sleptMs: 4_000 } },
    outcomes: [
      { index: 0, processId: sleeper, status: 'completed' },
      { index: 1, processId: echoId, status: 'completed' },
    ],
    canceled: [],
  });

  // The parked gate is restored by the answer where it lands and completes with that very signal.
  const answered = await post(processUrl(c, gate, '/signals'), { signals: [{ id: 'answer-1', waitId: gateWait, payload: { choice: 'yes' } }] });
  assert.equal(answered.status, 200, await answered.clone().text());
  const opened = await json(await fetch(processUrl(c, gate, '/result?waitMs=10000')));
  assert.equal(opened.status, 'completed');
  assert.deepEqual(opened.output, { id: 'answer-1', wait_id: gateWait, payload: { choice: 'yes' } });
});

test('with the BullMQ transport the Deadline timer still runs in the owner process: no worker needed, none asked for', async () => {
  const queued = new Cluster();
  await queued.start();
  try {
    const node = await queued.node('q', { SCOPE_TRANSPORT: 'bullmq' });
    const at = ahead(500);
    const id = await startProcess(node, 'example.coordination.deadline', at);
    const result = await eventually(async () => {
      const read = await json(await fetch(processUrl(node, id, '/result?waitMs=2000')));
      return read?.status === 'completed' || read?.status === 'failed' ? read : undefined;
    }, `${id} result`);
    assert.equal(result.status, 'completed', JSON.stringify(result));
    assert.equal(result.output, at);
    const ready = await json(await fetch(`${node.url}/readyz`));
    assert.equal(ready.checks['worker:example.coordination.deadline'], undefined, 'readiness asks no worker for the timer');
    assert.notEqual(ready.checks['worker:demo.echo'], undefined, 'the other deployments go through the transport');
  } finally {
    await queued.stop();
  }
});
