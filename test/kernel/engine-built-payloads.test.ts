import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import { ChildSpec, ChildWaitCondition, ChildWaitSpec, Effect } from '../../src/kernel/effect.js';
import { Failure } from '../../src/kernel/failure.js';
import { ChildKey, EffectId, ProcessId, WaitKey } from '../../src/kernel/identity.js';
import { childWaitSatisfiedPayload } from '../../src/kernel/mailbox.js';
import { Payload } from '../../src/kernel/payload.js';
import { frameworkSettlementPayload } from '../../src/kernel/prepared-step.js';
import { Quota } from '../../src/kernel/quota.js';
import { Result } from '../../src/kernel/result.js';
import { SignalRequest } from '../../src/kernel/signal.js';
import { Termination } from '../../src/kernel/termination.js';
import { Usage } from '../../src/kernel/usage.js';
import { echoDefinition, echoDispatcher } from '../../src/testing/example-definitions.js';

/**
 * The payloads the engine builds from its own records (framework effects, their settlements, child
 * wait answers) are wrapped as the record's wire text, not parsed again: that text must already be
 * exactly what the strict parser makes of it, whatever the data inside (escapes, `<>&`, non-ASCII,
 * number literals of user payloads).
 */

const canonical = (payload: Payload): void => assert.equal(Payload.parse(payload.json()).json(), payload.json());

const deployment = Deployment.create({ definition: echoDefinition, dispatcher: echoDispatcher, implementationDigest: Digest.of('built'), configurationDigest: Digest.of('built') });
const parent = ProcessId.parse('process:built-parent');
const child = ProcessId.parse('process:built-child');
// User data: any JSON value, strings over the whole Unicode range (no lone surrogates: a payload refuses them).
const userValue = fc.jsonValue({ maxDepth: 3 });
const text = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).map((value) => value.trim()).filter((value) => value.length > 0);
const literals = fc.constantFrom('1.5e3', '-0.25', '1E-7', '12345678901234567890', '0');

test('framework effects, their settlements and child wait answers carry canonical payloads', () => {
  fc.assert(
    fc.property(userValue, literals, text, (value, literal, message) => {
      const input = Payload.parse(`{"literal":${literal},"value":${JSON.stringify(value) ?? 'null'},"tag":"<a href=\\"x\\">&amp;</a>\\u2028"}`);
      const failure = Failure.create('external', 'demo.refused', message);
      const budget = Budget.of({ steps: Quota.of(3), effects: Quota.of(2), signals: Quota.of(5) });
      const spec = ChildSpec.create({ key: ChildKey.parse('worker'), deploymentRef: deployment.ref, input, budget, capabilities: CapabilitySet.empty });
      const effects = [
        Effect.startChild(spec),
        Effect.signalChild(child, SignalRequest.create({ id: 'user:built', payload: input })),
        Effect.cancelChild(child, message),
        Effect.waitChildren(ChildWaitSpec.create({ key: WaitKey.parse('built'), children: [child], boundary: 'subtree_drained', condition: ChildWaitCondition.any() })),
      ];
      const effectId = EffectId.derive(parent, 1n, 0);
      for (const effect of effects) {
        canonical(effect.payload);
        const operation = effect.frameworkOperation();
        canonical(frameworkSettlementPayload(effectId, operation));
        if (operation.operation !== 'wait_children') canonical(frameworkSettlementPayload(effectId, operation, failure));
      }
      const results = [
        Result.create({ processId: child, startedAt: '2025-01-01T00:00:00Z', finishedAt: '2025-01-01T00:00:01Z', output: input, termination: Termination.completed(), usage: Usage.of() }),
        Result.create({ processId: child, startedAt: '2025-01-01T00:00:00Z', finishedAt: '2025-01-01T00:00:01Z', termination: Termination.failed(failure), usage: Usage.of() }),
      ];
      const drained = ChildWaitSpec.create({ key: WaitKey.parse('drained'), children: [child], boundary: 'subtree_drained', condition: ChildWaitCondition.all() });
      for (const result of results) canonical(childWaitSatisfiedPayload(drained, [{ result, subtreeUnresolved: [{ processId: child, effectId }] }]));
    }),
    { seed: 29, numRuns: 200 },
  );
});
