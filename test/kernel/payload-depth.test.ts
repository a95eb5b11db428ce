import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maxJsonDepth, parseJson } from '../../src/kernel/canonical-json.js';
import type { EffectBoundary, TreeCheckpoint } from '../../src/kernel/commit.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import type { Dispatcher } from '../../src/kernel/definition.js';
import { Engine } from '../../src/kernel/engine.js';
import { KernelError } from '../../src/kernel/errors.js';
import { Event } from '../../src/kernel/event.js';
import { maxPayloadDepth, Payload } from '../../src/kernel/payload.js';
import { Settlement } from '../../src/kernel/settlement.js';
import { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { echoDefinition } from '../../src/testing/example-definitions.js';

/**
 * A payload may nest only so deep that every record carrying it still parses: a head committed with
 * a payload as deep as the JSON bound itself could never be restored.
 */

const invalidPayload = (error: unknown) => error instanceof KernelError && error.code === 'invalid_payload';

/** A value `levels` containers deep (arrays around a string). */
function nested(levels: number): unknown {
  let value: unknown = 'x';
  for (let level = 0; level < levels; level += 1) value = [value];
  return value;
}

test('a payload nests at most maxPayloadDepth levels, whether encoded or parsed; a decoder reads deeper ones it is given', () => {
  assert.ok(maxPayloadDepth < maxJsonDepth);
  const deepest = Payload.encode(nested(maxPayloadDepth));
  assert.ok(Payload.parse(deepest.json()).equals(deepest));
  assert.throws(() => Payload.encode(nested(maxPayloadDepth + 1)), invalidPayload);
  assert.throws(() => Payload.encode({ inner: deepest }), invalidPayload, 'a payload nested in a value counts at its place');
  const tooDeep = `${'['.repeat(maxPayloadDepth + 1)}${']'.repeat(maxPayloadDepth + 1)}`;
  assert.throws(() => Payload.parse(tooDeep), invalidPayload);
  // Brackets inside strings are text, not nesting.
  const quoted = Payload.encode([`${'['.repeat(maxPayloadDepth * 2)}\\"{`]);
  assert.ok(Payload.parse(quoted.json()).equals(quoted));
  // A record written before the bound held such a payload: decoding it still works.
  assert.equal(Payload.fromNode(parseJson(tooDeep)).json(), tooDeep);
});

test('a settlement as deep as a payload may be commits heads and events that all parse again', async () => {
  const heads: TreeSnapshot[] = [];
  const committer = new MemoryTreeCommitter();
  const recording = Object.assign(Object.create(committer) as MemoryTreeCommitter, {
    async commitCheckpoint(checkpoint: TreeCheckpoint) {
      await committer.commitCheckpoint(checkpoint);
      heads.push(checkpoint.snapshot);
    },
    async commitEffect(boundary: EffectBoundary) {
      await committer.commitEffect(boundary);
      heads.push(boundary.snapshot);
    },
  });
  // Its own object around the deepest array: the settlement is exactly maxPayloadDepth deep.
  const settlement = Settlement.of('succeeded', Payload.encode({ value: 'x', deep: nested(maxPayloadDepth - 1) }));
  const dispatcher: Dispatcher = Object.freeze({ dispatch: async () => settlement, replayPolicy: () => 'never' as const });
  const events: Event[] = [];
  const engine = new Engine({ committer: recording, eventListeners: [(event) => events.push(event)] });
  const deployment = Deployment.create({ definition: echoDefinition, dispatcher, implementationDigest: Digest.of('depth'), configurationDigest: Digest.of('depth') });
  try {
    await engine.run(deployment, Payload.encode({ value: 'x' }));
  } finally {
    await engine.close();
  }
  assert.ok(heads.length >= 3, `start, pending and settled boundaries at least, got ${heads.length}`);
  assert.ok(heads.some((head) => head.json().includes('"deep"')), 'a committed head carries the settlement');
  for (const head of heads) assert.ok(TreeSnapshot.parse(head.json()).digest.equals(head.digest), 'every committed head parses back to itself');
  for (const event of events) assert.equal(Event.parse(event.json()).json(), event.json(), event.name);
});
