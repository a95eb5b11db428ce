import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { KernelError } from '../../src/kernel/errors.js';
import { isIdentityText } from '../../src/kernel/identity.js';
import { Quota } from '../../src/kernel/quota.js';
import { Schema } from '../../src/kernel/schema.js';

/**
 * The workflow vocabulary: six sealed Stage kinds, built by the functions below and nothing else.
 * A Stage is plain immutable data plus pure functions of the current value; building one validates
 * its configuration eagerly (`invalid_workflow`), so a mistake shows at `workflow.define`, not in
 * the middle of a run.
 *
 * Determinism: every function a Stage carries (`run`, `input`, `output`, `select`, `items`, `until`)
 * is called inside a Step and must be pure: no clock, randomness, I/O or shared mutable data.
 */

export type StageKind = 'transform' | 'call' | 'switch' | 'fork' | 'map' | 'loop';

export const stageKinds: readonly StageKind[] = Object.freeze(['transform', 'call', 'switch', 'fork', 'map', 'loop']);

/** A JSON value as a Stage sees it (decoded from the current value's Payload). */
export type Json = unknown;

/** A schema given as a kernel Schema or as a JSON Schema document. */
export type SchemaLike = Schema | boolean | Record<string, unknown>;

/** A child binding: one exact Deployment, the grant it starts with, and an optional input mapping. */
export interface ChildBindingConfig {
  readonly deployment: Deployment;
  /** The child's permanent budget, charged to the workflow when it starts. Default {@link defaultChildBudget}. */
  readonly budget?: Budget;
  /** The child's capabilities (a subset of the workflow's). Default none. */
  readonly capabilities?: CapabilitySet | readonly string[];
}

/**
 * The grant a child gets when its binding names none: finite in every dimension (a finite parent
 * can never grant an unlimited quota), and small enough that a 100-item map fits the default
 * 10,000-signal root budget.
 */
export const defaultChildBudget: Budget = Budget.of({ steps: Quota.of(64), effects: Quota.of(32), signals: Quota.of(32) });

/** A resolved child binding. */
export interface ChildBinding {
  readonly deployment: Deployment;
  readonly budget: Budget;
  readonly capabilities: CapabilitySet;
}

interface StageBase {
  /** Unique within the workflow (identity text: no white space, ≤ 128 bytes); names the stage in failures. */
  readonly id: string;
  /** What the current value must satisfy when the stage begins (checked when the stage is entered and on restore). */
  readonly inputSchema: Schema;
}

export interface TransformStage extends StageBase {
  readonly kind: 'transform';
  readonly outputSchema: Schema;
  readonly run: (value: Json) => Json;
}

export interface CallStage extends StageBase {
  readonly kind: 'call';
  readonly child: ChildBinding;
  readonly input: (value: Json) => Json;
  readonly output: (value: Json, result: Json) => Json;
}

export interface SwitchCase extends ChildBinding {
  readonly id: string;
  readonly input: (value: Json) => Json;
}

export interface SwitchStage extends StageBase {
  readonly kind: 'switch';
  readonly cases: readonly SwitchCase[];
  /** The id of the case to run for the current value. */
  readonly select: (value: Json) => string;
  readonly output: (value: Json, result: Json, caseId: string) => Json;
}

export interface ForkBranch extends ChildBinding {
  readonly id: string;
  readonly input: (value: Json) => Json;
}

export interface ForkStage extends StageBase {
  readonly kind: 'fork';
  readonly branches: readonly ForkBranch[];
  readonly windowSize: number;
  /** Combines the stage's input with the branch outputs (an object keyed by branch id). */
  readonly output: (value: Json, results: Record<string, Json>) => Json;
}

export interface MapStage extends StageBase {
  readonly kind: 'map';
  readonly child: ChildBinding;
  readonly items: (value: Json) => Json;
  readonly input: (item: Json, index: number) => Json;
  readonly maxItems: number;
  readonly windowSize: number;
  /** Combines the stage's input with the child outputs, in item order. */
  readonly output: (value: Json, results: Json[]) => Json;
}

export interface LoopStage extends StageBase {
  readonly kind: 'loop';
  readonly child: ChildBinding;
  readonly input: (value: Json) => Json;
  readonly maxIterations: number;
  /** After an iteration: true ends the loop early (the body's output is the value). */
  readonly until: (value: Json, iteration: number) => boolean;
}

export type Stage = TransformStage | CallStage | SwitchStage | ForkStage | MapStage | LoopStage;

/** The fan-out stages (they run children in windows). */
export type FanoutStage = ForkStage | MapStage;

/** The bound on a fan-out window: the default grant allows 16 active children per parent. */
export const maxWindowSize = 16;

/** The bound on `maxItems` and on fork branches: the workflow's state holds every output of a stage. */
export const maxFanoutItems = 1000;

/** The bound on `maxIterations`. */
export const maxLoopIterations = 1000;

/** The code of every configuration error a workflow builder throws. */
export const invalidWorkflow = 'invalid_workflow';

export function configError(message: string): KernelError {
  return new KernelError(invalidWorkflow, `invalid workflow: ${message}`);
}

function fail(message: string): never {
  throw configError(message);
}

export function toSchema(value: SchemaLike | undefined, what: string, fallback: Schema = Schema.of(true)): Schema {
  if (value === undefined) return fallback;
  if (value instanceof Schema) return value;
  try {
    return Schema.of(value);
  } catch (error) {
    return fail(`${what} is not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function checkId(id: unknown, what: string): string {
  if (typeof id !== 'string' || !isIdentityText(id) || id.length > 64) fail(`${what} must be identity text of at most 64 characters, got ${JSON.stringify(id)}`);
  return id;
}

function checkFunction<F>(fn: F | undefined, what: string): F | undefined {
  if (fn !== undefined && typeof fn !== 'function') fail(`${what} must be a function`);
  return fn;
}

function checkCount(value: unknown, what: string, minimum: number, maximum: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum || value > maximum) {
    fail(`${what} must be an integer from ${minimum} to ${maximum}, got ${JSON.stringify(value)}`);
  }
  return value as number;
}

function binding(config: ChildBindingConfig, what: string): ChildBinding {
  if (typeof config !== 'object' || config === null) fail(`${what} must be a child binding`);
  if (!(config.deployment instanceof Deployment)) fail(`${what}.deployment must be a Deployment`);
  if (config.budget !== undefined && !(config.budget instanceof Budget)) fail(`${what}.budget must be a Budget`);
  let capabilities: CapabilitySet;
  try {
    capabilities = config.capabilities instanceof CapabilitySet ? config.capabilities : CapabilitySet.of(config.capabilities ?? []);
  } catch (error) {
    return fail(`${what}.capabilities: ${error instanceof Error ? error.message : String(error)}`);
  }
  return Object.freeze({ deployment: config.deployment, budget: config.budget ?? defaultChildBudget, capabilities });
}

const identity = (value: Json): Json => value;
const replaceWith = (_value: Json, result: Json): Json => result;

/** The child's own input schema when the value is handed over as is, else the declared one (default: any). */
function childInputSchema(declared: SchemaLike | undefined, mapped: boolean, child: ChildBinding, what: string): Schema {
  if (declared !== undefined || mapped) return toSchema(declared, what);
  return child.deployment.descriptor.inputSchema;
}

export interface TransformConfig {
  readonly id: string;
  readonly inputSchema?: SchemaLike;
  /** Required: a transform's output is validated before the workflow goes on (`workflow.transform.output_invalid`). */
  readonly outputSchema: SchemaLike;
  /** A pure typed function of the current value, run inside the Step. Throwing fails the process (`workflow.transform.failed`). */
  readonly run: (value: Json) => Json;
}

/** A pure function of the current value, run inside the Step; its output is validated against `outputSchema`. */
export function transform(config: TransformConfig): TransformStage {
  const id = checkId(config?.id, 'transform id');
  if (config.outputSchema === undefined) fail(`transform ${id} needs an outputSchema`);
  if (typeof config.run !== 'function') fail(`transform ${id} needs a run function`);
  return Object.freeze({
    kind: 'transform',
    id,
    inputSchema: toSchema(config.inputSchema, `transform ${id} inputSchema`),
    outputSchema: toSchema(config.outputSchema, `transform ${id} outputSchema`),
    run: config.run,
  });
}

export interface CallConfig extends ChildBindingConfig {
  readonly id: string;
  /** Default: the child's input schema when `input` is absent, else any value. */
  readonly inputSchema?: SchemaLike;
  /** The child's input from the current value (default: the value itself). */
  readonly input?: (value: Json) => Json;
  /** The next value from the stage input and the child's output (default: the child's output). */
  readonly output?: (value: Json, result: Json) => Json;
}

/** One child Process with its own budget and capabilities; its output becomes the value. */
export function call(config: CallConfig): CallStage {
  const id = checkId(config?.id, 'call id');
  const child = binding(config, `call ${id}`);
  const input = checkFunction(config.input, `call ${id} input`);
  return Object.freeze({
    kind: 'call',
    id,
    child,
    inputSchema: childInputSchema(config.inputSchema, input !== undefined, child, `call ${id} inputSchema`),
    input: input ?? identity,
    output: checkFunction(config.output, `call ${id} output`) ?? replaceWith,
  });
}

export interface SwitchCaseConfig extends ChildBindingConfig {
  readonly id: string;
  readonly input?: (value: Json) => Json;
}

export interface SwitchConfig {
  readonly id: string;
  readonly inputSchema?: SchemaLike;
  /** Returns the id of the case to run; an id no case has fails the process (`workflow.switch.case_unknown`). */
  readonly select: (value: Json) => string;
  readonly cases: readonly SwitchCaseConfig[];
  readonly output?: (value: Json, result: Json, caseId: string) => Json;
}

/** Chooses one case binding from the current value and runs it as one child Process. */
export function switchStage(config: SwitchConfig): SwitchStage {
  const id = checkId(config?.id, 'switch id');
  if (typeof config.select !== 'function') fail(`switch ${id} needs a select function`);
  if (!Array.isArray(config.cases) || config.cases.length === 0) fail(`switch ${id} needs at least one case`);
  const seen = new Set<string>();
  const cases = config.cases.map((entry, index): SwitchCase => {
    const caseId = checkId(entry?.id, `switch ${id} case ${index} id`);
    if (seen.has(caseId)) fail(`switch ${id} has two cases ${caseId}`);
    seen.add(caseId);
    return Object.freeze({ ...binding(entry, `switch ${id} case ${caseId}`), id: caseId, input: checkFunction(entry.input, `switch ${id} case ${caseId} input`) ?? identity });
  });
  return Object.freeze({
    kind: 'switch',
    id,
    inputSchema: toSchema(config.inputSchema, `switch ${id} inputSchema`),
    cases: Object.freeze(cases),
    select: config.select,
    output: checkFunction(config.output, `switch ${id} output`) ?? replaceWith,
  });
}

export interface ForkBranchConfig extends ChildBindingConfig {
  readonly id: string;
  readonly input?: (value: Json) => Json;
}

export interface ForkConfig {
  readonly id: string;
  readonly inputSchema?: SchemaLike;
  readonly branches: readonly ForkBranchConfig[];
  /** How many branches run at once (default: all, at most {@link maxWindowSize}). */
  readonly windowSize?: number;
  /** Default: the branch outputs, an object keyed by branch id. */
  readonly output?: (value: Json, results: Record<string, Json>) => Json;
}

/** Fixed branches, each a child Process, fanned out in windows; the first failure in declaration order fails the stage. */
export function fork(config: ForkConfig): ForkStage {
  const id = checkId(config?.id, 'fork id');
  if (!Array.isArray(config.branches) || config.branches.length === 0) fail(`fork ${id} needs at least one branch`);
  checkCount(config.branches.length, `fork ${id} branch count`, 1, maxFanoutItems);
  const seen = new Set<string>();
  const branches = config.branches.map((entry, index): ForkBranch => {
    const branchId = checkId(entry?.id, `fork ${id} branch ${index} id`);
    if (seen.has(branchId)) fail(`fork ${id} has two branches ${branchId}`);
    seen.add(branchId);
    return Object.freeze({ ...binding(entry, `fork ${id} branch ${branchId}`), id: branchId, input: checkFunction(entry.input, `fork ${id} branch ${branchId} input`) ?? identity });
  });
  const windowSize = checkCount(config.windowSize ?? Math.min(branches.length, maxWindowSize), `fork ${id} windowSize`, 1, maxWindowSize);
  return Object.freeze({
    kind: 'fork',
    id,
    inputSchema: toSchema(config.inputSchema, `fork ${id} inputSchema`),
    branches: Object.freeze(branches),
    windowSize,
    output: checkFunction(config.output, `fork ${id} output`) ?? ((_value: Json, results: Record<string, Json>) => results),
  });
}

export interface MapConfig extends ChildBindingConfig {
  readonly id: string;
  /** Default: an array when `items` is absent, else any value. */
  readonly inputSchema?: SchemaLike;
  /** The list to map over (default: the value itself, which must then be an array). */
  readonly items?: (value: Json) => Json;
  /** Each child's input (default: the item). */
  readonly input?: (item: Json, index: number) => Json;
  /** More items than this fail the stage before any child starts (`workflow.map.too_many_items`). */
  readonly maxItems: number;
  /** How many items run at once (default {@link maxWindowSize} or fewer). */
  readonly windowSize?: number;
  /** Default: the child outputs, in item order. */
  readonly output?: (value: Json, results: Json[]) => Json;
}

/** One child Process per item of a list, bounded by `maxItems`, fanned out in windows of `windowSize`. */
export function map(config: MapConfig): MapStage {
  const id = checkId(config?.id, 'map id');
  const child = binding(config, `map ${id}`);
  const maxItems = checkCount(config.maxItems, `map ${id} maxItems`, 1, maxFanoutItems);
  const items = checkFunction(config.items, `map ${id} items`);
  return Object.freeze({
    kind: 'map',
    id,
    child,
    inputSchema: toSchema(config.inputSchema, `map ${id} inputSchema`, items === undefined ? Schema.of({ type: 'array' }) : Schema.of(true)),
    items: items ?? identity,
    input: checkFunction(config.input, `map ${id} input`) ?? identity,
    maxItems,
    windowSize: checkCount(config.windowSize ?? Math.min(maxItems, maxWindowSize), `map ${id} windowSize`, 1, maxWindowSize),
    output: checkFunction(config.output, `map ${id} output`) ?? ((_value: Json, results: Json[]) => results),
  });
}

export interface LoopConfig extends ChildBindingConfig {
  readonly id: string;
  readonly inputSchema?: SchemaLike;
  /** The body's input from the current value (default: the value itself). */
  readonly input?: (value: Json) => Json;
  /** The loop stops after this many iterations (it is a bound, not a failure). */
  readonly maxIterations: number;
  /** Checked after each iteration with the body's output; true stops the loop early. Default: never. */
  readonly until?: (value: Json, iteration: number) => boolean;
}

/** A body child repeated, each iteration's output the next one's value, up to `maxIterations`. */
export function loop(config: LoopConfig): LoopStage {
  const id = checkId(config?.id, 'loop id');
  const child = binding(config, `loop ${id}`);
  const input = checkFunction(config.input, `loop ${id} input`);
  return Object.freeze({
    kind: 'loop',
    id,
    child,
    inputSchema: childInputSchema(config.inputSchema, input !== undefined, child, `loop ${id} inputSchema`),
    input: input ?? identity,
    maxIterations: checkCount(config.maxIterations, `loop ${id} maxIterations`, 1, maxLoopIterations),
    until: checkFunction(config.until, `loop ${id} until`) ?? (() => false),
  });
}

/** The child bindings of a stage, in declaration order. */
export function stageBindings(stage: Stage): ChildBinding[] {
  switch (stage.kind) {
    case 'transform':
      return [];
    case 'call':
    case 'map':
    case 'loop':
      return [stage.child];
    case 'switch':
      return [...stage.cases];
    case 'fork':
      return [...stage.branches];
  }
}
