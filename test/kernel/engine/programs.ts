/**
 * Programmed Definitions shared by several Engine behaviour tests: successive external waits, and
 * a single dispatcher Effect whose settlement completes the Process.
 */
import { Effect } from '../../../src/kernel/effect.js';
import { WaitId, WaitKey } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import type { Schema } from '../../../src/kernel/schema.js';
import { Transition } from '../../../src/kernel/transition.js';
import { ProgramDefinition } from './harness.js';

interface WaitNote {
  readonly phase: 'opening' | 'waiting';
  readonly index: number;
  readonly waitId?: string;
}

/**
 * Opens one external wait per key, in order: declare `Effect.wait(key)`, consume its opening and
 * `wait` on the minted id, then consume everything up to the answer. After the last answer it
 * completes with that answer's payload. Unaddressed input is tolerated (consumed with the answer).
 */
export function waitsProgram(keys: readonly string[], signalSchema?: Schema): ProgramDefinition {
  return new ProgramDefinition({
    name: 'test.waits',
    signalSchema,
    step({ state, signals }) {
      const note: WaitNote | undefined = state.note === undefined ? undefined : (JSON.parse(state.note) as WaitNote);
      if (note === undefined) {
        const first = keys[0] as string;
        return { transition: Transition.continue(0, [Effect.wait(WaitKey.parse(first))]), note: JSON.stringify({ phase: 'opening', index: 0 }) };
      }
      if (note.phase === 'opening') {
        const opening = signals[0];
        if (opening?.waitId === undefined || !opening.engineOwned) throw new Error('expected the wait opening first');
        const next: WaitNote = { phase: 'waiting', index: note.index, waitId: opening.waitId.toString() };
        return { transition: Transition.wait(1, opening.waitId), note: JSON.stringify(next) };
      }
      const waitId = WaitId.parse(note.waitId as string);
      const position = signals.findIndex((signal) => waitId.equals(signal.waitId) && !signal.engineOwned);
      if (position < 0) return { transition: Transition.wait(0, waitId), note: state.note };
      const answer = signals[position];
      const nextKey = keys[note.index + 1];
      if (nextKey === undefined) return Transition.complete(position + 1, answer?.payload ?? Payload.emptyObject);
      return {
        transition: Transition.continue(position + 1, [Effect.wait(WaitKey.parse(nextKey))]),
        note: JSON.stringify({ phase: 'opening', index: note.index + 1 }),
      };
    },
  });
}

/**
 * Step 1 declares the given dispatcher Effects (by default one `{"value":"ping"}`); Step 2 consumes
 * the whole window and completes with the first settlement's status and payload — or, when
 * `failOnSettlement` is set, fails on a non-succeeded one like the echo example.
 */
export function dispatchProgram(options: { effects?: readonly Effect[]; signalSchema?: Schema; name?: string } = {}): ProgramDefinition {
  const effects = options.effects ?? [Effect.dispatcher(Payload.encode({ value: 'ping' }))];
  return new ProgramDefinition({
    name: options.name ?? 'test.dispatch',
    signalSchema: options.signalSchema,
    step({ step, signals }) {
      if (step === 1) return Transition.continue(0, effects);
      const settlement = signals.find((signal) => signal.status !== undefined);
      return Transition.complete(
        signals.length,
        Payload.encode({
          status: settlement?.status ?? 'none',
          payload: settlement === undefined ? null : settlement.payload.decode(),
          settlements: signals.filter((signal) => signal.status !== undefined).map((signal) => signal.status),
        }),
      );
    },
  });
}
