import { encodeCanonical, maxPayloadBytes, parseJson, writeCanonical, type JsonNode } from '../kernel/canonical-json.js';
import { Payload } from '../kernel/index.js';

/**
 * The JSON-lines protocol between the process dispatcher and a long-lived command. One JSON
 * document per line, UTF-8, in both directions:
 *
 * - command → host, once, first: `{"ready":true}` (optionally `"version":"…"`), the handshake
 *   that ends the start;
 * - host → command, one per Effect: `{"effectId":"…","payload":…}`;
 * - command → host, one per request: `{"effectId":"…","status":"succeeded"|"failed","payload":…}`,
 *   matched by effect id, in any order (requests may overlap);
 * - command → host, optional, before the answer: `{"effectId":"…","delta":…}`, a progress Delta.
 *
 * Lines are strict I-JSON; unknown members make a line invalid. The host writes canonical JSON,
 * which never contains a raw line break.
 */

/** The longest line either side may send: a maximal payload plus the envelope. */
export const maxLineBytes = maxPayloadBytes + 64 * 1024;

export type AnswerStatus = 'succeeded' | 'failed';

/** One parsed command → host line. */
export type WorkerLine =
  | { readonly kind: 'ready'; readonly version: string | undefined }
  | { readonly kind: 'answer'; readonly effectId: string; readonly status: AnswerStatus; readonly payload: Payload }
  | { readonly kind: 'delta'; readonly effectId: string; readonly payload: Payload }
  /** Not a protocol line; `effectId` is set when the line named one (its request is then answered badly). */
  | { readonly kind: 'invalid'; readonly effectId: string | undefined; readonly problem: string };

/** The request line of one Effect, newline included. */
export function requestLine(effectId: string, payload: Payload): string {
  return `${encodeCanonical({ effectId, payload })}\n`;
}

/** Parses one line the command wrote (without its newline); never throws. */
export function parseWorkerLine(line: Uint8Array | string): WorkerLine {
  let node: JsonNode;
  try {
    node = parseJson(line, { maxBytes: maxLineBytes, what: 'worker line' });
  } catch (error) {
    return invalid(undefined, error instanceof Error ? error.message : 'not JSON');
  }
  if (node.kind !== 'object') return invalid(undefined, 'a line must be a JSON object');
  const members = new Map(node.members);
  const idNode = members.get('effectId');
  const effectId = idNode?.kind === 'string' ? idNode.value : undefined;

  if (members.has('ready')) {
    const version = members.get('version');
    if (members.get('ready')?.kind !== 'boolean' || (members.get('ready') as { value: boolean }).value !== true) {
      return invalid(undefined, 'ready must be true');
    }
    if (version !== undefined && version.kind !== 'string') return invalid(undefined, 'version must be a string');
    if (!onlyMembers(members, ['ready', 'version'])) return invalid(undefined, 'unknown member in the handshake');
    return { kind: 'ready', version: version?.kind === 'string' ? version.value : undefined };
  }
  if (effectId === undefined) return invalid(undefined, 'effectId must be a string');
  if (members.has('delta')) {
    if (!onlyMembers(members, ['effectId', 'delta'])) return invalid(effectId, 'unknown member in a delta line');
    const payload = payloadOf(members.get('delta') as JsonNode);
    return payload === undefined ? invalid(effectId, 'invalid delta payload') : { kind: 'delta', effectId, payload };
  }
  if (!onlyMembers(members, ['effectId', 'status', 'payload'])) return invalid(effectId, 'unknown member in an answer line');
  const status = members.get('status');
  if (status?.kind !== 'string' || (status.value !== 'succeeded' && status.value !== 'failed')) {
    return invalid(effectId, 'status must be "succeeded" or "failed"');
  }
  const payloadNode = members.get('payload');
  const payload = payloadNode === undefined ? undefined : payloadOf(payloadNode);
  if (payload === undefined) return invalid(effectId, 'an answer needs a valid payload');
  return { kind: 'answer', effectId, status: status.value, payload };
}

function onlyMembers(members: ReadonlyMap<string, JsonNode>, allowed: readonly string[]): boolean {
  for (const name of members.keys()) if (!allowed.includes(name)) return false;
  return true;
}

function payloadOf(node: JsonNode): Payload | undefined {
  try {
    // A command's answer is a new value from outside: parsed with the payload bounds (depth included).
    return Payload.parse(writeCanonical(node));
  } catch {
    return undefined;
  }
}

function invalid(effectId: string | undefined, problem: string): WorkerLine {
  return { kind: 'invalid', effectId, problem };
}
