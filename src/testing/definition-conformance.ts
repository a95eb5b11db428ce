// Over 500 lines: one exported conformance suite: its cases share fixtures and are read as one contract (§5).
import { test } from 'node:test';
import { CallbackPanicError, type CallbackOperation } from '../kernel/callback-panic-error.js';
import { stepFailure } from '../kernel/classified-error.js';
import type { Definition, Execution } from '../kernel/definition.js';
import { Descriptor } from '../kernel/descriptor.js';
import { describe } from '../kernel/digest.js';
import { ExecutionState } from '../kernel/execution-state.js';
import { isFailureKind, validDiagnostic, type Failure, type FailureKind } from '../kernel/failure.js';
import { isQualifiedName } from '../kernel/identity.js';
import { Payload } from '../kernel/payload.js';
import { Signal } from '../kernel/signal.js';
import { Transition } from '../kernel/transition.js';
import { ConformanceFailure } from './committer-conformance.js';

/**
 * The Definition conformance suite (kernel-contract §5.5): black-box cases over one Definition's
 * determinism, isolation and exact Snapshot→Restore, driven by configured inputs, Signal batches
 * and captured states. A definition passes only if every case passes; the suite's self-test
 * proves each case fails, with its named message, against a definition that breaks the rule.
 *
 * Equivalence is by canonical JSON (`json()`: object member order ignored), never by identity.
 *
 * How a thrown value maps onto the seed's "error" versus "panic" (see CallbackPanicError):
 * - `Definition.descriptor` and `Execution.snapshot` have no error result: any throw is a panic.
 * - `Definition.start`, `Definition.restore` and `Execution.step` return their error by throwing
 *   an `Error` (a DOMException is one). The suite reports it as a ConformanceFailure — or, for a
 *   rejected case, classifies a Step error with `stepFailure` exactly as the Engine would.
 * - Throwing anything that is not an `Error` (a string, `undefined`, a plain object) is a panic.
 * A panic surfaces as a CallbackPanicError naming the operation, with the thrown value as cause.
 *
 * Every `restore` and `step` call gets its own AbortSignal, aborted as soon as the call returns
 * (a Definition must not keep using it); the caller's signal (node:test's `t.signal` when the
 * suite registers the tests) is forwarded to it, so caller cancellation reaches the Step.
 */

/** One restorable state and the Signal batches to drive two restored copies through. */
export interface ExecutionConformanceCase {
  /** Non-empty, trimmed, unique among the restored cases; the test is `restored <name>`. */
  readonly name: string;
  readonly state: ExecutionState;
  readonly signals: readonly Signal[];
  readonly followingSignals?: readonly (readonly Signal[])[];
}

/** A state and window the Step must reject with exactly the declared Failure classification. */
export interface RejectedStepConformanceCase {
  /** Non-empty, trimmed, unique among the rejected cases; the test is `rejected <name>`. */
  readonly name: string;
  readonly state: ExecutionState;
  readonly signals: readonly Signal[];
  readonly failureKind: FailureKind;
  /** A qualified name. */
  readonly failureCode: string;
}

export interface DefinitionConformanceConfig {
  readonly definition: Definition;
  /** Start input; it must satisfy the descriptor's input schema. */
  readonly input: Payload;
  /** The first Step's window for the fresh executions. */
  readonly initialSignals: readonly Signal[];
  /** The windows of the following Steps, in order (none when absent). */
  readonly followingSignals?: readonly (readonly Signal[])[];
  readonly restoredCases?: readonly ExecutionConformanceCase[];
  readonly rejectedCases?: readonly RejectedStepConformanceCase[];
}

/** Per-run options of a case. */
export interface DefinitionCaseOptions {
  /** The caller's cancellation; forwarded to every `restore` and `step` call. */
  readonly signal?: AbortSignal;
}

export interface DefinitionConformanceCase {
  /** The test name without the prefix (`descriptor is stable`, `restored <name>`, …). */
  readonly name: string;
  run(options?: DefinitionCaseOptions): Promise<void>;
}

/** Validates `config` (throws ConformanceFailure), then registers every case as `<prefix> <case name>`. */
export function runDefinitionConformance(prefix: string, config: DefinitionConformanceConfig): void {
  for (const conformanceCase of definitionConformanceCases(config)) {
    test(`${prefix} ${conformanceCase.name}`, async (t) => {
      await runDefinitionCase(conformanceCase, { signal: t.signal });
    });
  }
}

/** Runs one case; throws ConformanceFailure on a contract violation and CallbackPanicError on a panic. */
export async function runDefinitionCase(
  conformanceCase: DefinitionConformanceCase,
  options: DefinitionCaseOptions = {},
): Promise<void> {
  await conformanceCase.run(options);
}

/**
 * The suite's cases for `config`, in order: `descriptor is stable`, `fresh executions are isolated
 * and deterministic`, one `restored <name>` per restored case and one `rejected <name>` per
 * rejected case. The config is validated first: an invalid one throws ConformanceFailure before
 * any definition code runs.
 */
export function definitionConformanceCases(config: DefinitionConformanceConfig): DefinitionConformanceCase[] {
  validateDefinitionConformanceConfig(config);
  const { definition, input } = config;
  const fresh: Batch[] = [
    { label: 'initial signals', signals: config.initialSignals },
    ...(config.followingSignals ?? []).map((signals, index) => ({ label: `following signals ${index + 1}`, signals })),
  ];
  const cases: DefinitionConformanceCase[] = [
    {
      name: 'descriptor is stable',
      async run() {
        await stableDescriptor(definition);
      },
    },
    {
      name: 'fresh executions are isolated and deterministic',
      async run(options = {}) {
        const harness = new Harness(definition, options.signal);
        const descriptor = await stableDescriptor(definition);
        try {
          descriptor.validateInput(input);
        } catch (error) {
          throw new ConformanceFailure(`the configured input does not satisfy the descriptor: ${messageOf(error)}`);
        }
        const [left, right] = await Promise.all([harness.start(input), harness.start(input)]);
        if (left === right) throw new ConformanceFailure('two starts returned the same Execution instance (shared execution state)');
        await pairwise(harness, descriptor, left, right, fresh, 'fresh executions');
      },
    },
  ];
  for (const restored of config.restoredCases ?? []) {
    const batches: Batch[] = [
      { label: 'signals', signals: restored.signals },
      ...(restored.followingSignals ?? []).map((signals, index) => ({ label: `following signals ${index + 1}`, signals })),
    ];
    cases.push({
      name: `restored ${restored.name}`,
      async run(options = {}) {
        const harness = new Harness(definition, options.signal);
        const descriptor = await stableDescriptor(definition);
        const scope = `restored ${restored.name}`;
        const [left, right] = await Promise.all([
          harness.restore(restored.state, `${scope} state`),
          harness.restore(restored.state, `${scope} state`),
        ]);
        if (left === right) throw new ConformanceFailure(`${scope}: two restores returned the same Execution instance (shared execution state)`);
        expectState(harness.snapshot(left), restored.state, `${scope}: Snapshot after Restore is not the captured state (lossy restore)`);
        expectState(harness.snapshot(right), restored.state, `${scope}: Snapshot after Restore is not the captured state (lossy restore)`);
        await pairwise(harness, descriptor, left, right, batches, scope);
      },
    });
  }
  for (const rejected of config.rejectedCases ?? []) {
    cases.push({
      name: `rejected ${rejected.name}`,
      async run(options = {}) {
        const harness = new Harness(definition, options.signal);
        const scope = `rejected ${rejected.name}`;
        for (const copy of ['first', 'second']) {
          const execution = await harness.restore(rejected.state, `${scope} state (${copy} copy)`);
          expectState(harness.snapshot(execution), rejected.state, `${scope}: Snapshot after Restore is not the captured state (lossy restore)`);
          await verifyRejectedStep(execution, rejected.signals, rejected, { ...options, scope: `${scope} (${copy} copy)` });
        }
      },
    });
  }
  return cases;
}

/** The Failure classification a rejected Step must produce. */
export interface ExpectedStepFailure {
  readonly failureKind: FailureKind;
  readonly failureCode: string;
}

/**
 * Steps `execution` once over `signals` and requires the Step to throw an error from which
 * `stepFailure` yields exactly the expected kind and code (what the Engine would persist).
 * Returns that Failure. A Transition, an unclassified error (the Engine would persist
 * `execution.step.failed`), a malformed classification or another classification is a
 * ConformanceFailure; a thrown non-Error value is a CallbackPanicError (`Execution.step`).
 */
export async function verifyRejectedStep(
  execution: Execution,
  signals: readonly Signal[],
  expected: ExpectedStepFailure,
  options: DefinitionCaseOptions & { readonly scope?: string } = {},
): Promise<Failure> {
  const scope = options.scope ?? 'rejected step';
  const want = `${expected.failureKind}/${expected.failureCode}`;
  const outcome = await stepOutcome(execution, signals, options.signal);
  if (outcome.ok) {
    throw new ConformanceFailure(
      `${scope}: Step accepted the signals with a ${outcome.transition.kind} transition ${outcome.transition.json()}, want an error classified ${want}`,
    );
  }
  let failure: Failure | undefined;
  try {
    failure = stepFailure(outcome.error);
  } catch (error) {
    throw new ConformanceFailure(`${scope}: Step threw an invalid classified failure (${messageOf(error)}), want ${want}`);
  }
  if (failure === undefined) {
    throw new ConformanceFailure(
      `${scope}: Step threw an unclassified error that would be persisted as execution.step.failed ` +
        `(${messageOf(outcome.error)}), want an error classified ${want}`,
    );
  }
  if (failure.kind !== expected.failureKind || failure.code !== expected.failureCode) {
    throw new ConformanceFailure(`${scope}: Step failed with ${failure.kind}/${failure.code}, want ${want}`);
  }
  return failure;
}

/**
 * Validates a config without running any definition code; throws ConformanceFailure naming the
 * first problem. Exposed for callers that build configs dynamically.
 */
export function validateDefinitionConformanceConfig(config: DefinitionConformanceConfig): void {
  const fail = (problem: string): never => {
    throw new ConformanceFailure(`invalid definition conformance config: ${problem}`);
  };
  if (typeof config !== 'object' || config === null) fail(`expected a config object, got ${describe(config)}`);
  const { definition } = config;
  if (
    (typeof definition !== 'object' && typeof definition !== 'function') ||
    definition === null ||
    !['descriptor', 'childDeployments', 'start', 'restore'].every(
      (method) => typeof (definition as unknown as Record<string, unknown>)[method] === 'function',
    )
  ) {
    fail('definition must implement descriptor, childDeployments, start and restore');
  }
  if (!(config.input instanceof Payload)) fail('input must be a Payload');
  checkBatch(config.initialSignals, 'initialSignals', fail);
  checkBatches(config.followingSignals, 'followingSignals', fail);
  checkCases(config.restoredCases, 'restoredCases', fail, (item, path) => {
    checkBatch(item.signals, `${path}.signals`, fail);
    checkBatches(item.followingSignals, `${path}.followingSignals`, fail);
  });
  checkCases(config.rejectedCases, 'rejectedCases', fail, (item, path) => {
    checkBatch(item.signals, `${path}.signals`, fail);
    if (!isFailureKind(item.failureKind)) fail(`${path}.failureKind ${describe(item.failureKind)} is not a failure kind`);
    if (!isQualifiedName(item.failureCode)) fail(`${path}.failureCode ${describe(item.failureCode)} is not a qualified name`);
  });
}

// ---------------------------------------------------------------------------------------------
// Config validation helpers

type Fail = (problem: string) => never;

function checkBatch(batch: unknown, path: string, fail: Fail): void {
  if (!Array.isArray(batch)) fail(`${path} must be an array of Signals`);
  const ids = new Set<string>();
  for (const [index, signal] of (batch as unknown[]).entries()) {
    if (!(signal instanceof Signal)) fail(`${path}[${index}] is not a Signal (${describe(signal)})`);
    const id = (signal as Signal).id.toString();
    // A delivered window never holds one SignalId twice.
    if (ids.has(id)) fail(`${path}[${index}] repeats signal id ${id} within one batch`);
    ids.add(id);
  }
}

function checkBatches(batches: unknown, path: string, fail: Fail): void {
  if (batches === undefined) return;
  if (!Array.isArray(batches)) fail(`${path} must be an array of Signal batches`);
  for (const [index, batch] of (batches as unknown[]).entries()) checkBatch(batch, `${path}[${index}]`, fail);
}

function checkCases<T extends { readonly name: string; readonly state: ExecutionState }>(
  cases: readonly T[] | undefined,
  path: string,
  fail: Fail,
  checkRest: (item: T, path: string) => void,
): void {
  if (cases === undefined) return;
  if (!Array.isArray(cases)) fail(`${path} must be an array`);
  const names = new Set<string>();
  for (const [index, item] of cases.entries()) {
    const itemPath = `${path}[${index}]`;
    if (typeof item !== 'object' || item === null) fail(`${itemPath} must be a case object`);
    if (!validDiagnostic(item.name)) fail(`${itemPath}.name ${describe(item.name)} must be non-empty, trimmed text`);
    if (names.has(item.name)) fail(`${itemPath}.name ${describe(item.name)} is not unique`);
    names.add(item.name);
    if (!(item.state instanceof ExecutionState)) fail(`${itemPath}.state must be an ExecutionState`);
    checkRest(item, itemPath);
  }
}

// ---------------------------------------------------------------------------------------------
// Calling the definition

interface Batch {
  readonly label: string;
  readonly signals: readonly Signal[];
}

type StepOutcome = { readonly ok: true; readonly transition: Transition } | { readonly ok: false; readonly error: Error };

/**
 * Runs `call` with a fresh AbortSignal that follows `parent` and is aborted as soon as the call
 * settles, so a definition that keeps the signal sees it aborted.
 */
async function withCallSignal<T>(parent: AbortSignal | undefined, call: (signal: AbortSignal) => T | Promise<T>): Promise<T> {
  const controller = new AbortController();
  const forward = (): void => controller.abort(parent?.reason);
  if (parent?.aborted) forward();
  else parent?.addEventListener('abort', forward, { once: true });
  try {
    return await call(controller.signal);
  } finally {
    parent?.removeEventListener('abort', forward);
    controller.abort();
  }
}

/** Runs a callback with an error result: an Error is returned, any other thrown value is a panic. */
async function guarded<T>(
  operation: CallbackOperation,
  call: () => T | Promise<T>,
): Promise<{ readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: Error }> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    if (error instanceof Error) return { ok: false, error };
    throw new CallbackPanicError(operation, error);
  }
}

async function stepOutcome(execution: Execution, signals: readonly Signal[], parent: AbortSignal | undefined): Promise<StepOutcome> {
  // Each Step gets its own frozen copy of the window, so a Step cannot edit another's input.
  const window = Object.freeze([...signals]);
  const outcome = await guarded('Execution.step', () => withCallSignal(parent, (signal) => execution.step(signal, window)));
  if (!outcome.ok) return outcome;
  const transition: unknown = outcome.value;
  if (!(transition instanceof Transition)) {
    throw new ConformanceFailure(`Execution.step returned ${describe(transition)}, not a Transition`);
  }
  if (transition.consumedSignals > window.length) {
    throw new ConformanceFailure(
      `Execution.step consumed ${transition.consumedSignals} signals of a ${window.length}-signal window ` +
        '(the consumed count must not exceed the delivered prefix)',
    );
  }
  return { ok: true, transition };
}

async function stableDescriptor(definition: Definition): Promise<Descriptor> {
  const [first, second] = await Promise.all([callDescriptor(definition), callDescriptor(definition)]);
  if (first.json() !== second.json()) {
    throw new ConformanceFailure(`descriptor is not stable: two calls encode ${first.json()} and ${second.json()}`);
  }
  return first;
}

async function callDescriptor(definition: Definition): Promise<Descriptor> {
  let descriptor: unknown;
  try {
    descriptor = definition.descriptor();
  } catch (error) {
    throw new CallbackPanicError('Definition.descriptor', error);
  }
  if (!(descriptor instanceof Descriptor)) {
    throw new ConformanceFailure(`Definition.descriptor returned ${describe(descriptor)}, not a Descriptor`);
  }
  return descriptor;
}

function checkExecution(value: unknown, operation: string): Execution {
  const record = value as Record<string, unknown> | null;
  if (
    (typeof value !== 'object' && typeof value !== 'function') ||
    record === null ||
    typeof record.step !== 'function' ||
    typeof record.snapshot !== 'function'
  ) {
    throw new ConformanceFailure(`${operation} returned ${describe(value)}, not an Execution`);
  }
  return value as Execution;
}

class Harness {
  constructor(
    readonly definition: Definition,
    readonly signal: AbortSignal | undefined,
  ) {}

  async start(input: Payload): Promise<Execution> {
    const outcome = await guarded('Definition.start', () => this.definition.start(input));
    if (!outcome.ok) throw new ConformanceFailure(`Definition.start rejected the configured input: ${messageOf(outcome.error)}`);
    return checkExecution(outcome.value, 'Definition.start');
  }

  async restore(state: ExecutionState, what: string): Promise<Execution> {
    const outcome = await guarded('Definition.restore', () =>
      withCallSignal(this.signal, (signal) => this.definition.restore(state, signal)),
    );
    if (!outcome.ok) throw new ConformanceFailure(`Definition.restore rejected the ${what}: ${messageOf(outcome.error)}`);
    return checkExecution(outcome.value, 'Definition.restore');
  }

  async step(execution: Execution, signals: readonly Signal[], where: string): Promise<Transition> {
    const outcome = await stepOutcome(execution, signals, this.signal).catch((error: unknown) => {
      if (error instanceof ConformanceFailure) throw new ConformanceFailure(`${where}: ${error.message}`);
      throw error;
    });
    if (!outcome.ok) throw new ConformanceFailure(`${where}: Execution.step failed: ${messageOf(outcome.error)}`);
    return outcome.transition;
  }

  snapshot(execution: Execution): ExecutionState {
    let state: unknown;
    try {
      state = execution.snapshot();
    } catch (error) {
      throw new CallbackPanicError('Execution.snapshot', error);
    }
    if (!(state instanceof ExecutionState)) {
      throw new ConformanceFailure(`Execution.snapshot returned ${describe(state)}, not an ExecutionState`);
    }
    return state;
  }
}

// ---------------------------------------------------------------------------------------------
// The pairwise procedure (fresh and restored cases)

function expectState(actual: ExecutionState, expected: ExecutionState, problem: string): void {
  if (actual.json() !== expected.json()) throw new ConformanceFailure(`${problem}: got ${actual.json()}, want ${expected.json()}`);
}

/**
 * Drives two equal executions through `batches`. Per batch: both states agree; the state restores
 * exactly; stepping `left` leaves `right` untouched (shared-state detection); both Steps return
 * the same Transition and reach the same state; a copy restored from the state before the Step
 * returns the same Transition and reaches the same state; the resulting state restores exactly;
 * and the descriptor has not changed.
 */
async function pairwise(
  harness: Harness,
  descriptor: Descriptor,
  left: Execution,
  right: Execution,
  batches: readonly Batch[],
  scope: string,
): Promise<void> {
  for (const batch of batches) {
    const where = `${scope}, ${batch.label}`;
    const before = harness.snapshot(left);
    const rightBefore = harness.snapshot(right);
    if (before.json() !== rightBefore.json()) {
      throw new ConformanceFailure(`${where}: equal executions hold different states before the step: ${before.json()} and ${rightBefore.json()}`);
    }
    const copy = await harness.restore(before, `state before the step (${where})`);
    expectState(harness.snapshot(copy), before, `${where}: Snapshot→Restore is not exact (lossy restore)`);

    const leftTransition = await harness.step(left, batch.signals, `${where}, first execution`);
    const rightUntouched = harness.snapshot(right);
    if (rightUntouched.json() !== rightBefore.json()) {
      throw new ConformanceFailure(
        `${where}: stepping one execution changed another execution's state (shared execution state): ` +
          `${rightBefore.json()} became ${rightUntouched.json()}`,
      );
    }
    const rightTransition = await harness.step(right, batch.signals, `${where}, second execution`);
    if (leftTransition.json() !== rightTransition.json()) {
      throw new ConformanceFailure(
        `${where}: equal executions returned different transitions (nondeterministic step or hidden mutable input): ` +
          `${leftTransition.json()} and ${rightTransition.json()}`,
      );
    }
    const after = harness.snapshot(left);
    const rightAfter = harness.snapshot(right);
    if (after.json() !== rightAfter.json()) {
      throw new ConformanceFailure(
        `${where}: equal executions reached different states (nondeterministic step or hidden mutable input): ` +
          `${after.json()} and ${rightAfter.json()}`,
      );
    }

    const copyTransition = await harness.step(copy, batch.signals, `${where}, restored copy`);
    if (copyTransition.json() !== leftTransition.json()) {
      throw new ConformanceFailure(
        `${where}: a copy restored from the state before the step returned a different transition: ` +
          `${copyTransition.json()}, want ${leftTransition.json()}`,
      );
    }
    expectState(harness.snapshot(copy), after, `${where}: a copy restored from the state before the step reached a different state`);

    const resumed = await harness.restore(after, `state after the step (${where})`);
    expectState(harness.snapshot(resumed), after, `${where}: the resulting state does not restore exactly (lossy restore)`);

    const current = await callDescriptor(harness.definition);
    if (current.json() !== descriptor.json()) {
      throw new ConformanceFailure(`${where}: the descriptor changed while stepping: ${descriptor.json()} became ${current.json()}`);
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
