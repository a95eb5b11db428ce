import { Descriptor } from '../../src/kernel/descriptor.js';
import { Failure } from '../../src/kernel/failure.js';
import { Schema } from '../../src/kernel/schema.js';
import { objectOf } from '../internal/machine.js';
import { singleEffectDefinition } from './single-effect.js';

/**
 * demo.unreliable: one dispatcher Effect whose dispatcher succeeds (`ok`), fails definitely
 * (`fail`) or throws on its first attempt so the outcome is Unknown (`unknown`). The Effect's
 * replay policy is `same_identity` exactly when `replayable`. Output `{mode, attempts}`: the
 * dispatch attempts the settlement reports (`attempts` of its payload; 0 when a host resolution
 * supplied none). A failed settlement (or a `failed` resolution) fails the process with
 * `demo.unreliable.failed`.
 */
export const unreliableName = 'demo.unreliable';
export const unreliableModes = ['ok', 'fail', 'unknown'] as const;
export type UnreliableMode = (typeof unreliableModes)[number];

export const unreliableDescriptor: Descriptor = Descriptor.create({
  name: unreliableName,
  description: 'One dispatcher effect that succeeds, fails definitely, or ends with an unknown outcome; replayable on request.',
  inputSchema: Schema.of({
    type: 'object',
    properties: { mode: { enum: [...unreliableModes] }, replayable: { type: 'boolean' } },
    required: ['mode', 'replayable'],
    additionalProperties: false,
  }),
  outputSchema: Schema.of({
    type: 'object',
    properties: { mode: { enum: [...unreliableModes] }, attempts: { type: 'integer', minimum: 0 } },
    required: ['mode', 'attempts'],
    additionalProperties: false,
  }),
});

export interface UnreliableEffect {
  readonly mode: UnreliableMode;
  readonly replayable: boolean;
}

export const unreliableDefinition = singleEffectDefinition<UnreliableEffect>({
  descriptor: unreliableDescriptor,
  stateKind: 'demo.unreliable',
  effectPayload: (input): UnreliableEffect => ({ mode: input.mode, replayable: input.replayable }),
  finish(input, settlement) {
    if (settlement.status !== 'succeeded') {
      return { failure: Failure.create('external', 'demo.unreliable.failed', `the ${input.mode} effect failed definitely`) };
    }
    const attempts = objectOf(settlement.payload)?.attempts;
    return { output: { mode: input.mode, attempts: Number.isSafeInteger(attempts) && (attempts as number) >= 0 ? attempts : 0 } };
  },
});
