import type { Payload } from '../kernel/index.js';
import { Child, type ChildOptions } from '../supervisor/child.js';
import { deferred } from '../kernel/deferred.js';
import { isSupervisorError, SupervisorErrorCode } from '../supervisor/errors.js';
import type { SupervisedProcess } from '../supervisor/supervised-process.js';
import { systemTimers, type Timer, type Timers } from '../supervisor/timers.js';
import { LineSplitter } from './line-splitter.js';
import { maxLineBytes, parseWorkerLine, requestLine, type AnswerStatus } from './json-lines-protocol.js';
import { ProcessDispatchError, ProcessDispatchErrorCode } from './process-dispatch-error.js';

/** Options of {@link JsonLinesWorker.start}. */
export interface JsonLinesWorkerOptions extends Pick<ChildOptions, 'command' | 'args' | 'env' | 'cwd' | 'maxQueuedBytes' | 'notReadingMs' | 'stderrTailBytes'> {
  /** Request timeouts and the child's not-reading bound (default {@link systemTimers}). */
  readonly timers?: Timers;
  /** Bounds the start (spawn and handshake); aborting it kills the command. */
  readonly signal?: AbortSignal;
  /** Observes the pid of every command spawned, before its handshake (logs, metrics, tests). */
  readonly onSpawn?: (pid: number) => void;
}

/** Options of one {@link JsonLinesWorker.request}. */
export interface RequestOptions {
  /** Silence longer than this after sending makes the outcome unknown (`request_timeout`). */
  readonly timeoutMs: number;
  /** Aborting after the request was sent makes the outcome unknown (`canceled`). */
  readonly signal?: AbortSignal;
  /** Receives the command's progress lines for this request until it settles. */
  readonly onDelta?: (payload: Payload) => void;
}

/**
 * How one request ended. `answered` is the command's definite word; `not_sent` means the request
 * never reached the command (definite: nothing happened); `lost` means it was sent and the command
 * died, went silent, answered badly or the caller gave up — the outcome is unknown.
 */
export type RequestOutcome =
  | { readonly kind: 'answered'; readonly status: AnswerStatus; readonly payload: Payload }
  | { readonly kind: 'not_sent'; readonly code: ProcessDispatchErrorCode; readonly message: string }
  | { readonly kind: 'lost'; readonly code: ProcessDispatchErrorCode; readonly message: string };

interface InFlight {
  readonly onDelta: ((payload: Payload) => void) | undefined;
  settle(outcome: RequestOutcome): void;
}

/**
 * A long-lived command speaking the JSON-lines protocol (`json-lines-protocol.ts`), multiplexing
 * overlapping requests by effect id. It is the process the process dispatcher leases from the
 * supervisor: `done`/`close` are the child's, and its death settles every request in flight as
 * `lost` (`command_exited`).
 */
export class JsonLinesWorker implements SupervisedProcess {
  readonly #child: Child;
  readonly #timers: Timers;
  readonly #inFlight = new Map<string, InFlight>();
  readonly #handshake = deferred<string | undefined>();
  #ready = false;
  #version: string | undefined;
  #strayLines = 0;

  private constructor(child: Child, timers: Timers) {
    this.#child = child;
    this.#timers = timers;
    const splitter = new LineSplitter(maxLineBytes, (line) => this.#onLine(line), () => this.#child.kill());
    child.stdout.on('data', (chunk: Buffer) => splitter.push(chunk));
    // A command that closed its output can answer nothing more.
    child.stdout.on('end', () => this.#child.kill());
    void child.done.then(() => this.#onDone());
  }

  /**
   * Spawns the command and resolves once it printed its `{"ready":true}` handshake. Rejects with
   * `start_failed` (spawn failure, or an exit before the handshake), `invalid_handshake`, or the
   * signal's reason; in every case the command has exited before the promise rejects.
   */
  static async start(options: JsonLinesWorkerOptions): Promise<JsonLinesWorker> {
    const timers = options.timers ?? systemTimers;
    options.signal?.throwIfAborted();
    let child: Child;
    try {
      const { command, args, env, cwd, maxQueuedBytes, notReadingMs, stderrTailBytes } = options;
      child = await Child.spawn({ command, args, env, cwd, maxQueuedBytes, notReadingMs, stderrTailBytes, timers });
    } catch (error) {
      if (isSupervisorError(error, SupervisorErrorCode.spawnFailed)) {
        throw new ProcessDispatchError(ProcessDispatchErrorCode.startFailed, error.message, { cause: error });
      }
      throw error;
    }
    const worker = new JsonLinesWorker(child, timers);
    try {
      options.onSpawn?.(child.pid);
    } catch {
      // An observer must not fail the start.
    }
    const signal = options.signal;
    const onAbort = (): void => worker.#handshake.reject(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (signal?.aborted === true) onAbort();
      worker.#version = await worker.#handshake.promise;
      worker.#ready = true;
      return worker;
    } catch (error) {
      await child.close();
      // Reported once the command is gone, so the exit status is the command's own (a kill of a
      // command that had already exited changes nothing).
      if (error instanceof ProcessDispatchError && error.code === ProcessDispatchErrorCode.startFailed) {
        throw new ProcessDispatchError(ProcessDispatchErrorCode.startFailed, `the command ended before its handshake (${exitStatus(child)})`, {
          cause: error.cause,
          stderrTail: child.stderrTail(),
        });
      }
      throw error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  get child(): Child {
    return this.#child;
  }

  get pid(): number {
    return this.#child.pid;
  }

  /** The version the handshake reported, if any. */
  get version(): string | undefined {
    return this.#version;
  }

  /** Requests sent and not settled yet (a drain's busy check). */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Lines that matched no request in flight (late answers, stray output). */
  get strayLines(): number {
    return this.#strayLines;
  }

  get done(): Promise<void> {
    return this.#child.done;
  }

  get isDone(): boolean {
    return this.#child.isDone;
  }

  close(): Promise<void> {
    return this.#child.close();
  }

  /** Sends one request and resolves with how it ended; never rejects. */
  request(effectId: string, payload: Payload, options: RequestOptions): Promise<RequestOutcome> {
    const { timeoutMs, signal, onDelta } = options;
    if (this.#child.isDone) {
      return Promise.resolve(notSent(ProcessDispatchErrorCode.commandExited, 'the command had exited before the request was sent'));
    }
    if (this.#inFlight.has(effectId)) {
      return Promise.resolve(notSent(ProcessDispatchErrorCode.duplicateEffect, `effect ${effectId} is already in flight on this command`));
    }
    if (signal?.aborted === true) {
      return Promise.resolve(notSent(ProcessDispatchErrorCode.canceled, 'the dispatch was canceled before the request was sent'));
    }
    const line = requestLine(effectId, payload);
    return new Promise<RequestOutcome>((resolve) => {
      let timer: Timer | undefined;
      const onAbort = (): void => entry.settle(lost(ProcessDispatchErrorCode.canceled, 'the dispatch was canceled after the request was sent'));
      const entry: InFlight = {
        onDelta,
        settle: (outcome) => {
          if (this.#inFlight.get(effectId) !== entry) return;
          this.#inFlight.delete(effectId);
          timer?.cancel();
          signal?.removeEventListener('abort', onAbort);
          resolve(outcome);
        },
      };
      this.#inFlight.set(effectId, entry);
      try {
        this.#child.write(line);
      } catch (error) {
        // The child is alive (checked above), so the only refusal is an overflowing queue: the
        // command was killed with the request partly queued — it may have read some of it.
        const message = error instanceof Error ? error.message : 'the write was refused';
        entry.settle(lost(ProcessDispatchErrorCode.notReading, message));
        return;
      }
      timer = this.#timers.after(timeoutMs, () =>
        entry.settle(lost(ProcessDispatchErrorCode.requestTimeout, `the command did not answer within ${timeoutMs} ms`)),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #onLine(bytes: Buffer): void {
    const line = parseWorkerLine(bytes);
    if (!this.#ready) {
      if (line.kind === 'ready') this.#handshake.resolve(line.version);
      else {
        this.#handshake.reject(new ProcessDispatchError(ProcessDispatchErrorCode.invalidHandshake, 'the command did not start with {"ready":true}'));
      }
      return;
    }
    if (line.kind === 'ready' || line.effectId === undefined) {
      this.#strayLines += 1;
      return;
    }
    const entry = this.#inFlight.get(line.effectId);
    if (entry === undefined) {
      this.#strayLines += 1;
      return;
    }
    switch (line.kind) {
      case 'answer':
        entry.settle({ kind: 'answered', status: line.status, payload: line.payload });
        return;
      case 'delta':
        try {
          entry.onDelta?.(line.payload);
        } catch {
          // Deltas are best effort; a failing observer must not lose the request.
        }
        return;
      case 'invalid':
        entry.settle(lost(ProcessDispatchErrorCode.invalidAnswer, `the command answered with an invalid line: ${line.problem}`));
        return;
    }
  }

  #onDone(): void {
    const reason = this.#child.reason;
    this.#handshake.reject(
      new ProcessDispatchError(
        ProcessDispatchErrorCode.startFailed,
        `the command ended before its handshake: ${reason?.message ?? 'no longer running'}`,
        { cause: reason },
      ),
    );
    const code = reason?.code === SupervisorErrorCode.notReading ? ProcessDispatchErrorCode.notReading : ProcessDispatchErrorCode.commandExited;
    for (const entry of [...this.#inFlight.values()]) {
      entry.settle(lost(code, `the command ended with the request in flight: ${reason?.message ?? 'no longer running'}`));
    }
  }
}

function exitStatus(child: Child): string {
  if (child.exitCode !== null) return `exit code ${child.exitCode}`;
  return child.signalCode !== null ? `signal ${child.signalCode}` : 'no exit status';
}

function notSent(code: ProcessDispatchErrorCode, message: string): RequestOutcome {
  return { kind: 'not_sent', code, message };
}

function lost(code: ProcessDispatchErrorCode, message: string): RequestOutcome {
  return { kind: 'lost', code, message };
}
