import { define } from './definition.js';
import { defineToolSet } from './toolset.js';

/**
 * The interaction strategy (kernel-contract §6.4), as one namespace:
 * `interaction.define({...})` builds a ReAct Definition, `interaction.toolSet({...})` the ToolSet
 * its tools bind to. The wire forms (model-wire.ts, tool-wire.ts), steering (steer.ts) and the
 * pending human inputs (pending-inputs.ts) are imported from their own files.
 */
export const interaction = Object.freeze({ define, toolSet: defineToolSet });

export type { DelegateBinding, InteractionConfig, ToolBinding } from './definition.js';
export type { Artifact } from './state.js';
export type { ToolSetConfig, ToolConfig, ToolSet } from './toolset.js';
