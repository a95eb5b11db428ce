import { Digest, encodeCanonical, parseReplayPolicy, type ReplayPolicy } from '../kernel/index.js';
import { checkEnvEntry } from '../supervisor/base-env.js';
import { maxTimerMs } from '../supervisor/timers.js';
import { ProcessDispatchError, ProcessDispatchErrorCode } from './process-dispatch-error.js';

/**
 * The frozen configuration of one process dispatcher: which long-lived command serves its Effects
 * and how. It belongs to the Deployment's configuration: its canonical JSON digest is the
 * supervisor fingerprint of the command's processes (a process started from another
 * configuration is retired) and should be the Deployment's `configurationDigest` (or part of it).
 */
export interface ProcessDispatcherConfig {
  /** The executable (a path, or a name looked up on the base PATH). */
  readonly command: string;
  readonly args: readonly string[];
  /** Variables added to the minimal base environment (see `baseEnv`). */
  readonly env: Readonly<Record<string, string>>;
  /**
   * The supervisor key naming the worker. Dispatchers sharing a key share (and replace) one
   * process: a lease from another configuration retires the running one. Absent, the key is the
   * fingerprint, so every distinct configuration has its own process.
   */
  readonly key?: string;
  /** Whether an Effect may be repeated under its original EffectId (see `ReplayPolicy`). */
  readonly replayPolicy: ReplayPolicy;
  /** Silence longer than this after sending a request makes its outcome Unknown. */
  readonly requestTimeoutMs: number;
}

const members = ['command', 'args', 'env', 'key', 'replayPolicy', 'requestTimeoutMs'];

/**
 * Validates a configuration and returns a frozen copy. Every rejection is
 * `invalid_process_dispatcher_config`; nothing is defaulted or repaired.
 */
export function parseProcessDispatcherConfig(value: unknown): ProcessDispatcherConfig {
  const fail = (message: string): never => {
    throw new ProcessDispatchError(ProcessDispatchErrorCode.invalidConfig, `invalid process dispatcher config: ${message}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('expected an object');
  const input = value as Record<string, unknown>;
  for (const name of Object.keys(input)) if (!members.includes(name)) fail(`unknown member ${JSON.stringify(name)}`);
  const { command, args, env, key, replayPolicy, requestTimeoutMs } = input;
  if (typeof command !== 'string' || command.length === 0 || command.includes('\0')) fail('command must be a non-empty string');
  if (!Array.isArray(args) || args.some((arg) => typeof arg !== 'string' || arg.includes('\0'))) fail('args must be an array of strings');
  if (typeof env !== 'object' || env === null || Array.isArray(env)) fail('env must be an object of strings');
  const environment: Record<string, string> = {};
  for (const [name, setting] of Object.entries(env as Record<string, unknown>)) {
    try {
      checkEnvEntry(name, setting);
    } catch (error) {
      fail(error instanceof Error ? error.message : 'invalid env');
    }
    environment[name] = setting as string;
  }
  if (key !== undefined && (typeof key !== 'string' || key.length === 0)) fail('key must be a non-empty string when present');
  let policy: ReplayPolicy = 'never';
  try {
    policy = parseReplayPolicy(replayPolicy);
  } catch {
    fail(`replayPolicy must be "never" or "same_identity"`);
  }
  if (!Number.isSafeInteger(requestTimeoutMs) || (requestTimeoutMs as number) < 1 || (requestTimeoutMs as number) > maxTimerMs) {
    fail(`requestTimeoutMs must be an integer from 1 to ${maxTimerMs}`);
  }
  return Object.freeze({
    command: command as string,
    args: Object.freeze([...(args as string[])]),
    env: Object.freeze(environment),
    ...(key === undefined ? {} : { key: key as string }),
    replayPolicy: policy,
    requestTimeoutMs: requestTimeoutMs as number,
  });
}

/** The canonical JSON of a configuration (snake_case members, sorted, `key` omitted when absent). */
export function processDispatcherConfigJson(config: ProcessDispatcherConfig): string {
  return encodeCanonical({
    command: config.command,
    args: [...config.args],
    env: { ...config.env },
    key: config.key,
    replay_policy: config.replayPolicy,
    request_timeout_ms: config.requestTimeoutMs,
  });
}

/** The sha256 of {@link processDispatcherConfigJson}: the supervisor fingerprint of the configuration. */
export function processDispatcherFingerprint(config: ProcessDispatcherConfig): Digest {
  return Digest.of(processDispatcherConfigJson(config));
}
