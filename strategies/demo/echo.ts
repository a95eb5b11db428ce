import { Descriptor } from '../../src/kernel/descriptor.js';
import { Failure } from '../../src/kernel/failure.js';
import { Schema } from '../../src/kernel/schema.js';
import { objectOf } from '../internal/machine.js';
import { singleEffectDefinition } from './single-effect.js';

/**
 * demo.echo: one dispatcher Effect echoes `{value}`; the dispatcher streams one delta per
 * character. Output `{value}` (the value the settlement carries). A failed or unknown-then-failed
 * settlement fails the process (`demo.echo.failed`).
 */
export const echoName = 'demo.echo';

const valueSchema = {
  type: 'object',
  properties: { value: { type: 'string', maxLength: 65_536 } },
  required: ['value'],
  additionalProperties: false,
} as const;

export const echoDescriptor: Descriptor = Descriptor.create({
  name: echoName,
  description: 'Echoes a string through one dispatcher effect that streams one delta per character.',
  inputSchema: Schema.of(valueSchema),
  outputSchema: Schema.of(valueSchema),
});

/** The payload of the echo Effect (what the dispatcher receives). */
export interface EchoEffect {
  readonly value: string;
}

export const echoDefinition = singleEffectDefinition<{ value: string }>({
  descriptor: echoDescriptor,
  stateKind: 'demo.echo',
  effectPayload: (input): EchoEffect => ({ value: input.value }),
  finish(input, settlement) {
    if (settlement.status !== 'succeeded') {
      return { failure: Failure.create('external', 'demo.echo.failed', 'the echo dispatcher did not echo the value') };
    }
    const value = objectOf(settlement.payload)?.value;
    return { output: { value: typeof value === 'string' ? value : input.value } };
  },
});
