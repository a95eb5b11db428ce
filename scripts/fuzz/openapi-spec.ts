/**
 * What the fuzzer reads from `openapi.yaml`: each operation's method, path template, parameters and
 * request body schema (every `$ref` resolved), and the catalogue of problem codes a response may
 * carry (the Problem schema's `code` enum, which a contract test pins to the server's registry).
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export type JsonSchema = boolean | { readonly [keyword: string]: unknown };

export interface Parameter {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header';
  readonly required: boolean;
  readonly schema: JsonSchema;
}

export interface Operation {
  readonly operationId: string;
  readonly method: string;
  /** The template as written, e.g. `/v1/processes/{id}/signals`. */
  readonly path: string;
  readonly parameters: readonly Parameter[];
  /** The `application/json` request body schema, when the operation takes a body. */
  readonly body: JsonSchema | undefined;
}

export interface ApiSpec {
  readonly operations: readonly Operation[];
  readonly problemCodes: ReadonlySet<string>;
}

const specPath = new URL('../../openapi.yaml', import.meta.url);

export function loadSpec(path: URL | string = specPath): ApiSpec {
  const document = parse(readFileSync(path, 'utf8')) as Record<string, any>;
  const resolve = (schema: unknown, seen: readonly string[] = []): JsonSchema => resolveRefs(document, schema, seen) as JsonSchema;
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
    for (const [method, operation] of Object.entries(item)) {
      const parameters = ((operation.parameters ?? []) as any[]).map((parameter) => ({
        name: String(parameter.name),
        in: parameter.in,
        required: parameter.required === true,
        schema: resolve(parameter.schema ?? {}),
      }));
      const bodySchema = operation.requestBody?.content?.['application/json']?.schema;
      operations.push({
        operationId: String(operation.operationId ?? `${method} ${path}`),
        method: method.toUpperCase(),
        path,
        parameters,
        body: bodySchema === undefined ? undefined : resolve(bodySchema),
      });
    }
  }
  const codes = document.components?.schemas?.Problem?.properties?.code?.enum as string[] | undefined;
  if (codes === undefined || codes.length === 0) throw new Error('openapi.yaml: no Problem code enum');
  return { operations, problemCodes: new Set(codes) };
}

/** Inlines `#/components/...` references (a cycle is left as an empty schema). */
function resolveRefs(document: Record<string, any>, schema: unknown, seen: readonly string[]): unknown {
  if (Array.isArray(schema)) return schema.map((item) => resolveRefs(document, item, seen));
  if (schema === null || typeof schema !== 'object') return schema;
  const ref = (schema as { $ref?: unknown }).$ref;
  if (typeof ref === 'string') {
    if (seen.includes(ref)) return {};
    const target = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<any>((node, token) => node?.[token.replaceAll('~1', '/').replaceAll('~0', '~')], document);
    return resolveRefs(document, target, [...seen, ref]);
  }
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) copy[key] = key === 'example' || key === 'examples' ? value : resolveRefs(document, value, seen);
  return copy;
}
