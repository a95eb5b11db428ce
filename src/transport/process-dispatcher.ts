import { type DeltaEmitter, type Digest, type Dispatcher, type Effect, type EffectRequest, Payload, type ReplayPolicy, Settlement } from '../kernel/index.js';
import { isSupervisorError } from '../supervisor/errors.js';
import type { Lease } from '../supervisor/lease.js';
import type { Starter } from '../supervisor/supervised-process.js';
import type { Supervisor } from '../supervisor/supervisor.js';
import { systemTimers, type Timers } from '../supervisor/timers.js';
import { JsonLinesWorker, type RequestOutcome } from './json-lines-worker.js';
import { ProcessDispatchError, ProcessDispatchErrorCode } from './process-dispatch-error.js';
import { parseProcessDispatcherConfig, processDispatcherFingerprint, type ProcessDispatcherConfig } from './process-dispatcher-config.js';

/** What a process dispatcher shares with the rest of the host. */
export interface ProcessDispatcherOptions {
  /** Owns the command's processes; the host closes it at shutdown. One serves every dispatcher. */
  readonly supervisor: Supervisor<JsonLinesWorker>;
  /** Request timeouts and the not-reading bound (default {@link systemTimers}). */
  readonly timers?: Timers;
  /** The command's working directory (default: this process's). */
  readonly cwd?: string;
  /** Observes the pid of every command the dispatcher spawns. */
  readonly onSpawn?: (pid: number) => void;
}

/** How many times a dispatch leases again when the leased command died before it was sent to. */
const resendsOnDeadCommand = 1;

/**
 * The `process` Dispatcher: each Effect payload is one JSON line `{"effectId","payload"}` written
 * to a long-lived command leased from the supervisor (key and fingerprint from the configuration),
 * and the command's answering line `{"effectId","status","payload"}` settles it.
 *
 * Definite and unknown outcomes are kept apart exactly:
 * - nothing was sent (the command could not start, the supervisor refused the lease, the dispatch
 *   was canceled first): a definite `failed` Settlement `{"code","message"}`;
 * - the command answered: its `succeeded` or `failed`, with its payload;
 * - the request was sent and the command died, went silent past `requestTimeoutMs`, answered
 *   badly or the dispatch was canceled: an `unknown` Settlement `{"code","message"}` — never
 *   `failed`, since the command may have done the work. A silent or garbling command is retired
 *   (`markBroken`), so the next Effect gets a new process.
 *
 * The replay policy is the configuration's.
 */
export class ProcessDispatcher implements Dispatcher {
  readonly #config: ProcessDispatcherConfig;
  readonly #fingerprint: Digest;
  readonly #key: string;
  readonly #supervisor: Supervisor<JsonLinesWorker>;
  readonly #starter: Starter<JsonLinesWorker>;

  constructor(config: ProcessDispatcherConfig, options: ProcessDispatcherOptions) {
    this.#config = parseProcessDispatcherConfig(config);
    if (typeof options !== 'object' || options === null || typeof options.supervisor?.lease !== 'function') {
      throw new ProcessDispatchError(ProcessDispatchErrorCode.invalidConfig, 'a process dispatcher needs a supervisor');
    }
    this.#fingerprint = processDispatcherFingerprint(this.#config);
    this.#key = this.#config.key ?? this.#fingerprint.toString();
    this.#supervisor = options.supervisor;
    const timers = options.timers ?? systemTimers;
    const { command, args, env } = this.#config;
    const { cwd, onSpawn } = options;
    this.#starter = async ({ signal }) => ({ process: await JsonLinesWorker.start({ command, args, env, cwd, timers, signal, onSpawn }) });
    Object.freeze(this);
  }

  get config(): ProcessDispatcherConfig {
    return this.#config;
  }

  /** The supervisor key of the command's processes. */
  get key(): string {
    return this.#key;
  }

  /** The supervisor fingerprint: the digest of the configuration's canonical JSON. */
  get fingerprint(): string {
    return this.#fingerprint.toString();
  }

  /** The configuration's digest, for `Deployment.create({ configurationDigest })`. */
  get configurationDigest(): Digest {
    return this.#fingerprint;
  }

  replayPolicy(_effect: Effect): ReplayPolicy {
    return this.#config.replayPolicy;
  }

  async dispatch(request: EffectRequest, emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
    if (signal.aborted) return failed(ProcessDispatchErrorCode.canceled, 'the dispatch was canceled before the request was sent');
    const effectId = request.id.toString();
    const payload = request.effect.payload;
    for (let attempt = 0; ; attempt += 1) {
      let lease: Lease<JsonLinesWorker>;
      try {
        lease = await this.#supervisor.lease(this.#key, this.fingerprint, this.#starter, { signal });
      } catch (error) {
        return leaseFailure(error, signal);
      }
      try {
        const worker = lease.process;
        const outcome: RequestOutcome = await worker.request(effectId, payload, {
          timeoutMs: this.#config.requestTimeoutMs,
          signal,
          onDelta: emit,
        });
        switch (outcome.kind) {
          case 'answered':
            return Settlement.of(outcome.status, outcome.payload);
          case 'not_sent':
            if (outcome.code === ProcessDispatchErrorCode.commandExited) {
              this.#supervisor.markBroken(this.#key, worker);
              if (attempt < resendsOnDeadCommand) continue;
            }
            return failed(outcome.code, outcome.message);
          case 'lost':
            if (outcome.code !== ProcessDispatchErrorCode.canceled) this.#supervisor.markBroken(this.#key, worker);
            return unknown(outcome.code, outcome.message);
        }
      } finally {
        lease.release();
      }
    }
  }
}

/** A lease that failed sent nothing: a definite failure, with the supervisor's or start's code. */
function leaseFailure(error: unknown, signal: AbortSignal): Settlement {
  if (signal.aborted) return failed(ProcessDispatchErrorCode.canceled, 'the dispatch was canceled before the request was sent');
  if (error instanceof ProcessDispatchError || isSupervisorError(error)) return failed(error.code, error.message);
  return failed(ProcessDispatchErrorCode.startFailed, 'the command could not be started');
}

function failed(code: string, message: string): Settlement {
  return Settlement.of('failed', Payload.encode({ code, message }));
}

function unknown(code: string, message: string): Settlement {
  return Settlement.of('unknown', Payload.encode({ code, message }));
}
