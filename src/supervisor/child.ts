import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Readable } from 'node:stream';
import { baseEnv } from './base-env.js';
import { ByteTail } from './byte-tail.js';
import { deferred } from '../kernel/deferred.js';
import { SupervisorError, SupervisorErrorCode } from './errors.js';
import type { SupervisedProcess } from './supervised-process.js';
import { maxTimerMs, systemTimers, type Timer, type Timers } from './timers.js';

/** Options of {@link Child.spawn}. */
export interface ChildOptions {
  readonly command: string;
  readonly args?: readonly string[];
  /** Added on top of {@link baseEnv}; the command sees nothing else of this process's environment. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** The clock and timers of the not-reading bound (default {@link systemTimers}). */
  readonly timers?: Timers;
  /** Bytes queued for the command beyond which a write kills it as `not_reading` (default 16 MiB). */
  readonly maxQueuedBytes?: number;
  /** How long queued input may sit unread before the command is killed as `not_reading` (default 30 s). */
  readonly notReadingMs?: number;
  /** Bytes of stderr kept for diagnostics (default 16 KiB). */
  readonly stderrTailBytes?: number;
  /** Sees every stderr chunk as it arrives (to forward a command's diagnostics to a log). */
  readonly onStderr?: (chunk: Buffer) => void;
}

export const defaultChildOptions = Object.freeze({
  maxQueuedBytes: 16 * 1024 * 1024,
  notReadingMs: 30_000,
  stderrTailBytes: 16 * 1024,
});

/**
 * One long-lived command (a `node:child_process` child in its own process group), exposed as a
 * byte sink (`write`) and a byte source (`stdout`).
 *
 * Writes never wait on the command: they are queued for one sender (the stdin stream) and return
 * at once. A command that leaves queued input unread — no write completes for `notReadingMs`, or
 * more than `maxQueuedBytes` pile up — has stopped taking input and is killed (`not_reading`).
 * `done` settles as soon as the command can serve no more (it exited, or a kill began), so nothing
 * hands it out while it is torn down; `exited` once the process is gone. Killing signals the whole
 * process group, so helpers the command started do not outlive it.
 */
export class Child implements SupervisedProcess {
  readonly #process: ChildProcessWithoutNullStreams;
  readonly #timers: Timers;
  readonly #maxQueuedBytes: number;
  readonly #notReadingMs: number;
  readonly #stderr: ByteTail;
  readonly #done = deferred<void>();
  readonly #exited = deferred<void>();
  #isDone = false;
  #hasExited = false;
  #reason: SupervisorError | undefined;
  #exitCode: number | null = null;
  #signalCode: NodeJS.Signals | null = null;
  /** Writes handed to stdin whose completion callback has not run yet. */
  #outstanding = 0;
  /** When a write last completed (or the queue last became non-empty). */
  #lastProgress = 0;
  #readTimer: Timer | undefined;

  private constructor(child: ChildProcessWithoutNullStreams, options: ChildOptions) {
    this.#process = child;
    this.#timers = options.timers ?? systemTimers;
    this.#maxQueuedBytes = options.maxQueuedBytes ?? defaultChildOptions.maxQueuedBytes;
    this.#notReadingMs = options.notReadingMs ?? defaultChildOptions.notReadingMs;
    this.#stderr = new ByteTail(options.stderrTailBytes ?? defaultChildOptions.stderrTailBytes);
    child.stdin.on('error', () => {
      // EPIPE after the command exited or closed its input: the exit path reports it.
    });
    child.stdout.on('error', () => {});
    child.stderr.on('error', () => {});
    const onStderr = options.onStderr;
    child.stderr.on('data', (chunk: Buffer) => {
      this.#stderr.push(chunk);
      try {
        onStderr?.(chunk);
      } catch {
        // A failing log sink must not take the command down.
      }
    });
    child.on('error', () => {
      // A failed kill or a late spawn error: the exit (or its absence) is what counts.
    });
    child.on('exit', (code, signal) => this.#onExit(code, signal));
  }

  /**
   * Spawns `command` and resolves once it runs; rejects with `spawn_failed` when it cannot start
   * (missing executable, permissions) and `invalid_argument` for invalid options.
   */
  static spawn(options: ChildOptions): Promise<Child> {
    checkOptions(options);
    const child = spawn(options.command, [...(options.args ?? [])], {
      cwd: options.cwd,
      env: baseEnv(options.env ?? {}),
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      windowsHide: true,
    });
    return new Promise<Child>((resolve, reject) => {
      const onError = (error: Error): void => {
        child.off('spawn', onSpawn);
        child.on('error', () => {});
        reject(new SupervisorError(SupervisorErrorCode.spawnFailed, `cannot start ${options.command}: ${error.message}`, { cause: error }));
      };
      const onSpawn = (): void => {
        child.off('error', onError);
        resolve(new Child(child, options));
      };
      child.once('error', onError);
      child.once('spawn', onSpawn);
    });
  }

  get pid(): number {
    return this.#process.pid as number;
  }

  /** The command's standard output; the consumer must read it, or the command blocks on a full pipe. */
  get stdout(): Readable {
    return this.#process.stdout;
  }

  get done(): Promise<void> {
    return this.#done.promise;
  }

  get isDone(): boolean {
    return this.#isDone;
  }

  get exited(): Promise<void> {
    return this.#exited.promise;
  }

  get hasExited(): boolean {
    return this.#hasExited;
  }

  /** Why the command can serve no more (`exited`, `killed`, `not_reading`); undefined while it can. */
  get reason(): SupervisorError | undefined {
    return this.#reason;
  }

  get exitCode(): number | null {
    return this.#exitCode;
  }

  get signalCode(): NodeJS.Signals | null {
    return this.#signalCode;
  }

  /** Bytes handed to the command's input that it has not taken yet. */
  get queuedBytes(): number {
    return this.#process.stdin.writableLength;
  }

  /**
   * Queues `data` for the command and returns at once. Throws the reason the command is done
   * once it can serve no more, and `not_reading` (after killing it) when the queue overflows.
   */
  write(data: string | Uint8Array): void {
    if (this.#isDone) throw this.#reason as SupervisorError;
    if (this.#outstanding === 0) this.#lastProgress = this.#timers.now();
    this.#outstanding += 1;
    this.#process.stdin.write(data, () => this.#onWritten());
    if (this.#process.stdin.writableLength > this.#maxQueuedBytes) {
      this.#kill(notReading(`more than ${this.#maxQueuedBytes} bytes of input are queued unread`));
      throw this.#reason as SupervisorError;
    }
    this.#readTimer ??= this.#timers.after(this.#notReadingMs, () => this.#checkReading());
  }

  /** Ends the command's input without stopping it: it sees EOF once what was queued is sent. */
  closeStdin(): void {
    if (!this.#process.stdin.writableEnded) this.#process.stdin.end();
  }

  /** Takes the command out of service at once and kills its process group; never waits. */
  kill(): void {
    this.#kill(new SupervisorError(SupervisorErrorCode.killed, `${this.#describe()} was killed`));
  }

  /** Kills the command and resolves once it has exited. */
  close(): Promise<void> {
    this.kill();
    return this.#exited.promise;
  }

  /** The most recent stderr output, for diagnostics (never for a persisted result). */
  stderrTail(): string {
    return this.#stderr.text();
  }

  #kill(reason: SupervisorError): void {
    this.#finish(reason);
    if (this.#hasExited) return;
    this.#signalGroup();
  }

  /** SIGKILL to the process group (the command was spawned as its leader), else to the command. */
  #signalGroup(): void {
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      try {
        this.#process.kill('SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }

  #finish(reason: SupervisorError): void {
    if (this.#isDone) return;
    this.#isDone = true;
    this.#reason = reason;
    this.#readTimer?.cancel();
    this.#readTimer = undefined;
    this.#done.resolve();
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.#exitCode = code;
    this.#signalCode = signal;
    this.#finish(new SupervisorError(SupervisorErrorCode.exited, `${this.#describe()} exited (${code !== null ? `code ${code}` : `signal ${signal}`})`));
    // Helpers the command left in its group must not outlive it; the group id cannot be reused
    // while any member remains, so this reaches only the command's own descendants.
    this.#signalGroup();
    this.#hasExited = true;
    this.#exited.resolve();
  }

  #onWritten(): void {
    this.#outstanding -= 1;
    this.#lastProgress = this.#timers.now();
  }

  /** The not-reading timer: kills when queued input made no progress for the whole bound. */
  #checkReading(): void {
    this.#readTimer = undefined;
    if (this.#isDone || this.#outstanding === 0) return;
    const stalled = this.#timers.now() - this.#lastProgress;
    if (stalled >= this.#notReadingMs) {
      this.#kill(notReading(`queued input stayed unread for ${this.#notReadingMs} ms`));
      return;
    }
    this.#readTimer = this.#timers.after(this.#notReadingMs - stalled, () => this.#checkReading());
  }

  #describe(): string {
    return `command ${this.#process.spawnfile} (pid ${this.pid})`;
  }
}

function notReading(detail: string): SupervisorError {
  return new SupervisorError(SupervisorErrorCode.notReading, `the command is not reading its input: ${detail}; it was killed`);
}

function checkOptions(options: ChildOptions): void {
  const fail = (message: string): never => {
    throw new SupervisorError(SupervisorErrorCode.invalidArgument, `invalid child options: ${message}`);
  };
  if (typeof options !== 'object' || options === null) fail('expected options');
  if (options.onStderr !== undefined && typeof options.onStderr !== 'function') fail('onStderr must be a function');
  if (typeof options.command !== 'string' || options.command.length === 0 || options.command.includes('\0')) fail('command must be a non-empty string');
  if (options.args !== undefined && (!Array.isArray(options.args) || options.args.some((arg) => typeof arg !== 'string' || arg.includes('\0')))) {
    fail('args must be strings without NUL');
  }
  for (const name of ['maxQueuedBytes', 'notReadingMs', 'stderrTailBytes'] as const) {
    const value = options[name];
    if (value === undefined) continue;
    const limit = name === 'notReadingMs' ? maxTimerMs : Number.MAX_SAFE_INTEGER;
    const minimum = name === 'stderrTailBytes' ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < minimum || value > limit) fail(`${name} must be an integer >= ${minimum}`);
  }
}
