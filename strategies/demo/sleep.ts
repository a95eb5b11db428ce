import { Descriptor } from '../../src/kernel/descriptor.js';
import { Failure } from '../../src/kernel/failure.js';
import { Schema } from '../../src/kernel/schema.js';
import { singleEffectDefinition } from './single-effect.js';

/**
 * demo.sleep: one dispatcher Effect that waits `ms` milliseconds (the dispatcher honours
 * cancellation), then completes with `{sleptMs}`. Pause applies once the sleep settles; cancel and
 * kill abort it.
 */
export const sleepName = 'demo.sleep';
export const maxSleepMs = 600_000;

export const sleepDescriptor: Descriptor = Descriptor.create({
  name: sleepName,
  description: 'Sleeps for ms milliseconds in one dispatcher effect that honours cancellation.',
  inputSchema: Schema.of({
    type: 'object',
    properties: { ms: { type: 'integer', minimum: 0, maximum: maxSleepMs } },
    required: ['ms'],
    additionalProperties: false,
  }),
  outputSchema: Schema.of({
    type: 'object',
    properties: { sleptMs: { type: 'integer', minimum: 0 } },
    required: ['sleptMs'],
    additionalProperties: false,
  }),
});

export interface SleepEffect {
  readonly ms: number;
}

export const sleepDefinition = singleEffectDefinition<{ ms: number }>({
  descriptor: sleepDescriptor,
  stateKind: 'demo.sleep',
  effectPayload: (input): SleepEffect => ({ ms: input.ms }),
  finish(input, settlement) {
    if (settlement.status !== 'succeeded') {
      return { failure: Failure.create('external', 'demo.sleep.failed', 'the sleep did not finish') };
    }
    return { output: { sleptMs: input.ms } };
  },
});
