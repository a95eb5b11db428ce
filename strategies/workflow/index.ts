import { define } from './definition.js';
import { call, fork, loop, map, switchStage, transform } from './stages.js';

/**
 * The workflow strategy: `workflow.define({name, description, inputSchema, outputSchema, stages})`
 * over the closed stage vocabulary `workflow.transform`, `.call`, `.switch`, `.fork`, `.map` and
 * `.loop`. See docs/strategies/workflow.md.
 */
export const workflow = Object.freeze({ define, transform, call, switch: switchStage, fork, map, loop });

export { define, type WorkflowConfig } from './definition.js';
export {
  call,
  defaultChildBudget,
  fork,
  invalidWorkflow,
  loop,
  map,
  maxFanoutItems,
  maxLoopIterations,
  maxWindowSize,
  switchStage,
  transform,
  type CallConfig,
  type ChildBindingConfig,
  type ForkBranchConfig,
  type ForkConfig,
  type LoopConfig,
  type MapConfig,
  type SchemaLike,
  type Stage,
  type StageKind,
  type SwitchCaseConfig,
  type SwitchConfig,
  type TransformConfig,
} from './stages.js';
export { workflowStateKind, type WorkflowState } from './state.js';
