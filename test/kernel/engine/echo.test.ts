import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Engine } from '../../../src/kernel/engine.js';
import { Payload } from '../../../src/kernel/payload.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { echoDefinition, echoDispatcher } from '../../../src/testing/example-definitions.js';

test('the seed echo example: completed hello, one dispatch, inspection shows completed', async () => {
  let dispatches = 0;
  const deployment = Deployment.create({
    definition: echoDefinition,
    dispatcher: {
      dispatch: async (request, emit, signal) => {
        dispatches += 1;
        return echoDispatcher.dispatch(request, emit, signal);
      },
      replayPolicy: (effect) => echoDispatcher.replayPolicy(effect),
    },
    implementationDigest: Digest.of('example-echo-implementation'),
    configurationDigest: Digest.of('example-echo-configuration'),
  });
  const committer = new MemoryTreeCommitter();
  const engine = new Engine({ committer });
  const result = await engine.run(deployment, Payload.encode({ value: 'hello' }));
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { value: 'hello' });
  assert.equal(dispatches, 1);
  const inspection = engine.inspectTree(result.processId);
  assert.equal(inspection.processes[0]?.snapshot.status, 'completed');
  assert.equal(inspection.processes[0]?.snapshot.usage().preparedEffects, 1n);
  const head = await committer.loadTree(result.processId);
  assert.equal(head?.digest.equals(inspection.headDigest), true);
  await engine.close();
});
