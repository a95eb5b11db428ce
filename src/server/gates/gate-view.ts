import type { Json } from '../host.js';
import type { GateAnswerRecord, GateProvenance } from './gate-record.js';

export type GateKind = 'approval' | 'form' | 'open_url';
export type GateState = 'open' | 'answered' | 'closed';

/** One field of a form as a person sees it, read off the answer schema (so it cannot disagree with it). */
export interface GateField {
  readonly name: string;
  readonly type: string | null;
  readonly required: boolean;
  readonly description: string | null;
}

export interface GatePrompt {
  /** What the wait asks: the prompt its wait effect carried, else the deployment's description of the key. */
  readonly text: string | null;
  readonly fields: readonly GateField[];
}

export interface GateAnswerView {
  readonly answeredAt: string | null;
  readonly provenance: GateProvenance;
  readonly actor: string | null;
  readonly requestId: string | null;
  readonly rule: string | null;
  readonly signalId: string;
}

export interface GateView {
  readonly gateId: string;
  readonly owner: 'process';
  readonly kind: GateKind;
  readonly state: GateState;
  readonly subject: { readonly processId: string; readonly rootId: string; readonly deployment: string; readonly waitId: string; readonly key: string };
  readonly prompt: GatePrompt;
  readonly answerSchema: Json | null;
  /** When the wait opened (null when not known: a gate no longer open). */
  readonly openedAt: string | null;
  readonly answer: GateAnswerView | null;
}

/**
 * A process-owned gate's kind, from its answer schema: `approval` when the answer is an object that
 * must carry a boolean `approved`, else `form` (a form whose schema is null takes any JSON).
 */
export function gateKindOf(schema: Json | null): GateKind {
  const object = asObject(schema);
  const approved = asObject(asObject(object?.properties)?.approved);
  const required = Array.isArray(object?.required) ? object.required : [];
  return approved?.type === 'boolean' && required.includes('approved') ? 'approval' : 'form';
}

/** The prompt a person sees, derived from the wait's own validated facts. */
export function gatePromptOf(text: string | null, schema: Json | null): GatePrompt {
  const object = asObject(schema);
  const properties = asObject(object?.properties) ?? {};
  const required = new Set(Array.isArray(object?.required) ? object.required.filter((name): name is string => typeof name === 'string') : []);
  const fields = Object.entries(properties).map(([name, member]): GateField => {
    const field = asObject(member);
    return {
      name,
      type: typeof field?.type === 'string' ? field.type : null,
      required: required.has(name),
      description: typeof field?.description === 'string' ? field.description : null,
    };
  });
  return { text, fields };
}

export function answerViewOf(record: GateAnswerRecord): GateAnswerView {
  return { answeredAt: record.answeredAt, provenance: record.provenance, actor: record.actor, requestId: record.requestId, rule: record.rule, signalId: record.signalId };
}

function asObject(value: unknown): Record<string, Json> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, Json>) : undefined;
}
