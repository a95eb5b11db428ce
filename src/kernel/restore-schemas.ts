import type { Descriptor } from './descriptor.js';
import type { Payload } from './payload.js';
import type { ProcessSnapshot } from './process-snapshot.js';

/**
 * Why a captured Process breaks its Deployment's Signal or output schema, or undefined when it does
 * not. Restore checks this for every member before anything is activated (the seed's RestoreTree and
 * ValidateRestorableTree): a completed output and a prepared completion output must satisfy the
 * output schema, and every pending unaddressed Host input must satisfy the Signal schema — the
 * checks admission made, repeated because a head can be edited or written by another writer.
 * Answers to waits are checked by their wait contracts, Engine-owned records have no schema.
 */
export function restoreSchemaProblem(descriptor: Descriptor, snapshot: ProcessSnapshot): string | undefined {
  const outputs: Array<[string, Payload | undefined]> = [
    ['the completed output', snapshot.status === 'completed' ? snapshot.output : undefined],
    ['the prepared completion output', snapshot.prepared?.intent.kind === 'complete' ? snapshot.prepared.intent.output : undefined],
  ];
  for (const [what, output] of outputs) {
    if (output === undefined) continue;
    const problem = violation(() => descriptor.validateOutput(output));
    if (problem !== undefined) return `${what} does not satisfy the output schema: ${problem}`;
  }
  const mailbox = snapshot.mailbox;
  for (let index = mailbox.cursor; index < mailbox.length; index += 1) {
    const record = mailbox.record(index);
    if (record?.kind !== 'external' || record.waitId !== undefined) continue;
    const problem = violation(() => descriptor.validateSignal(record.payload as Payload));
    if (problem !== undefined) return `pending signal ${record.id.toString()} does not satisfy the signal schema: ${problem}`;
  }
  return undefined;
}

function violation(check: () => void): string | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
