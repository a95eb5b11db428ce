/**
 * The Deadline crash test with real `scope serve` nodes in Redis mode: two deadlines are started,
 * their timers in flight, then every node is SIGKILLed and one new node starts. The pending timer
 * Effects are durable in the head; the new node takes the trees over once the dead leases lapse and
 * replays each timer under its identity, so each deadline completes with its instant — never before
 * it, and no later than the lease TTL + 5 s after the instant or after the node's return, whichever
 * is later. Synchronised on the processes' results (long polls), not on sleeps.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cluster, eventually, exited, json, leaseMs, processUrl, startProcess, type Node } from '../../e2e/nodes-cluster.js';

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

test('a Deadline fires after every node was SIGKILLed and one returned, within the lease TTL + 5 s', async () => {
  const [a, b] = await Promise.all([cluster.node('a'), cluster.node('b')]);
  const soon = ahead(2_000);
  const later = ahead(6_000);
  const ids = [await startProcess(a, 'example.coordination.deadline', soon), await startProcess(b, 'example.coordination.deadline', later)];
  await Promise.all([inFlight(a, ids[0]!), inFlight(b, ids[1]!)]);
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
