import { Effect } from '../../src/kernel/effect.js';
import { Payload } from '../../src/kernel/payload.js';

/**
 * What passes between an interaction Process and the ToolSet deployment its tools bind to.
 *
 * - A tool call child's input: `{"tool","arguments"}`, the tool's name and the model's arguments as
 *   it wrote them (JSON text, possibly malformed: the ToolSet judges them, so a bad call is an
 *   ordinary, model-visible tool error).
 * - A tool call child's output: `{"content"}`, the text the model reads as the tool result.
 * - A dispatched tool's Effect (served by the ToolSet deployment's dispatcher):
 *   `{"operation":"tool.call","tool","arguments"}` with the arguments parsed and validated against
 *   the tool's parameter schema. Settle succeeded with `{"content"}`, or failed with
 *   `{"error":{"code","message"}}` (an ordinary tool error).
 *
 * Determinism: the payloads are pure functions of the arguments.
 */
export const toolCallOperation = 'tool.call';

export interface ToolInput {
  readonly tool: string;
  readonly arguments: string;
}

export interface ToolOutput {
  readonly content: string;
}

export const toolOutputSchema = {
  type: 'object',
  properties: { content: { type: 'string' } },
  required: ['content'],
  additionalProperties: false,
} as const;

export function toolCallEffect(tool: string, args: unknown): Effect {
  return Effect.dispatcher(Payload.encode({ operation: toolCallOperation, tool, arguments: args }));
}

export type ToolRequest = { readonly ok: true; readonly tool: string; readonly arguments: unknown } | { readonly ok: false; readonly problem: string };

/** Strictly decodes a dispatched tool Effect's payload (for ToolSet dispatchers). */
export function decodeToolRequest(payload: Payload): ToolRequest {
  const value = payload.decode<unknown>();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, problem: 'a tool request is a JSON object' };
  const record = value as Record<string, unknown>;
  if (record.operation !== toolCallOperation) return { ok: false, problem: `not a tool request (operation ${toolCallOperation})` };
  if (Object.keys(record).sort().join(',') !== 'arguments,operation,tool') return { ok: false, problem: 'a tool request has exactly operation, tool and arguments' };
  if (typeof record.tool !== 'string' || record.tool === '') return { ok: false, problem: 'tool must be a non-empty string' };
  return { ok: true, tool: record.tool, arguments: record.arguments };
}

/** The payload of a succeeded tool settlement. */
export function toolResultPayload(content: string): Payload {
  return Payload.encode({ content });
}

/** The payload of a failed tool settlement (an ordinary tool error). */
export function toolErrorPayload(code: string, message: string): Payload {
  return Payload.encode({ error: { code, message } });
}
