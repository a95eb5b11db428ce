/**
 * What the system acknowledged to the workload, and so must keep: every start answered 201/200 and
 * every signal answered 2xx (and every cancel answered 202). The end checks hold the stored trees
 * against it. Also where a trial writes what went wrong for it (a tree that never settled).
 */

export type TrialKind = 'approval' | 'echo' | 'sleep' | 'unreliable' | 'fanout';

export interface StartRecord {
  readonly trial: number;
  readonly kind: TrialKind;
  readonly rootId: string;
  readonly status: number;
  /** The tree's one Effect may not be replayed (`never`): demo.unreliable with replayable false. */
  readonly replayForbidden: boolean;
}

export interface SignalRecord {
  readonly rootId: string;
  readonly processId: string;
  readonly signalId: string;
  readonly status: number;
  readonly accepted: boolean;
}

export interface ControlRecord {
  readonly rootId: string;
  readonly processId: string;
  readonly action: 'cancel';
  readonly status: number;
}

export class Ledger {
  readonly starts: StartRecord[] = [];
  readonly signals: SignalRecord[] = [];
  readonly controls: ControlRecord[] = [];
  /** Violations seen while the workload ran (a tree that stopped progressing, a refused request). */
  readonly problems: string[] = [];

  get acknowledged(): number {
    return this.starts.length + this.signals.length + this.controls.length;
  }
}
