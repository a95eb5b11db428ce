/**
 * Requests generated from the operations of `openapi.yaml`: for each operation its path parameters
 * (a live id by reference, a schema-valid string, or a mutant), query and header parameters
 * (absent, valid or mutated, sometimes repeated or unknown), and a body (valid for the route and,
 * for starts and signals, for the demo deployments' own schemas; or mutated; or not JSON at all),
 * framed by Content-Length or chunked. A case is plain data; {@link materialize} turns it into
 * bytes against the live state when it is sent.
 */
import fc from 'fast-check';
import type { ApiSpec, JsonSchema, Operation, Parameter } from './openapi-spec.js';
import { isRef, type LiveState, type Ref } from './live-state.js';
import type { RawRequest } from './raw-client.js';
import { anyJson, expandDeep, hostileString, mutantValue, validValue } from './schema-values.js';

/** What the live catalog says about a deployment (GET /v1/deployments). */
export interface CatalogEntry {
  readonly name: string;
  readonly inputSchema: JsonSchema;
  readonly signalSchema: JsonSchema;
  readonly waits: ReadonlyArray<{ readonly answerSchema: JsonSchema }>;
}

/** A path parameter: a live id by reference, or literal text (percent-encoded or written raw). */
export type PathValue = Ref | { readonly text: string; readonly raw: boolean };

/** Placeholder in a generated signal: replaced by the addressed process's open wait. */
export const currentWait = '@current-wait';

/**
 * Placeholder payload: replaced, once the addressed process is known, by what its deployment
 * takes (an approval's answer or note, a counter's addend), so signals get admitted.
 */
export const fittingPayload = fc.record({ '@fit': fc.record({ approved: fc.boolean(), add: fc.integer({ min: 0, max: 3 }), note: fc.string({ maxLength: 16 }) }) });

export function fit(payload: unknown, deployment: string | undefined, waiting: boolean): unknown {
  const parts = (payload as { '@fit'?: { approved: boolean; add: number; note: string } } | null)?.['@fit'];
  if (parts === undefined) return payload;
  if (deployment === 'demo.counter') return { add: parts.add };
  if (deployment === 'demo.approval' && waiting) return parts.note === '' ? { approved: parts.approved } : { approved: parts.approved, comment: parts.note };
  return { note: parts.note };
}

export interface OperationCase {
  readonly kind: 'operation';
  readonly operationId: string;
  readonly method: string;
  readonly path: Readonly<Record<string, PathValue>>;
  readonly query: ReadonlyArray<readonly [string, string]>;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body?: { readonly json: unknown } | { readonly text: string };
  readonly contentType: string | null;
  readonly framing: 'length' | 'chunked';
  readonly chunks: readonly number[];
}

/** A write the server acknowledges with a 2xx, to read back once the run is over. */
export type Acknowledgeable =
  | { readonly kind: 'start'; readonly deployment: string }
  | { readonly kind: 'signals'; readonly processId: string; readonly signals: ReadonlyArray<{ readonly id: string; readonly payload: unknown }> }
  | { readonly kind: 'release'; readonly rootId: string; readonly purge: boolean };

const refKinds = fc.constantFrom<Ref['ref']>('process', 'process', 'root', 'waiting', 'waiting');

/** Signal ids from a small set, so batches collide with earlier ones (duplicates and conflicts). */
export const signalId = fc.oneof(
  { arbitrary: fc.constantFrom('s1', 's2', 's3', 'note-1', 'answer'), weight: 1 },
  { arbitrary: fc.stringMatching(/^[A-Za-z0-9._:-]{6,16}$/), weight: 4 },
);

function pathValue(parameter: Parameter): fc.Arbitrary<PathValue> {
  const live = (kind: fc.Arbitrary<Ref['ref']>) => fc.record({ ref: kind, pick: fc.nat() }) as fc.Arbitrary<PathValue>;
  // A mutant may be any value, a null-prototype object included (String() throws on one).
  const text = (arbitrary: fc.Arbitrary<unknown>, raw: boolean) => arbitrary.map((value) => ({ text: scalarText(value), raw }));
  const kind = parameter.name === 'effectId' ? fc.constant<Ref['ref']>('effect') : parameter.name === 'name' ? undefined : refKinds;
  return fc.oneof(
    ...(kind === undefined ? [] : [{ arbitrary: live(kind), weight: 6 }]),
    { arbitrary: text(validValue(parameter.schema), false), weight: 2 },
    { arbitrary: text(mutantValue(parameter.schema), false), weight: 2 },
    { arbitrary: text(hostileString, true), weight: 1 },
  );
}

function parameterText(parameter: Parameter): fc.Arbitrary<string> {
  let schema = parameter.schema;
  // A long poll must not hold the fuzzer for a minute: valid waits stay short.
  if (parameter.name === 'waitMs') schema = { type: 'integer', minimum: 0, maximum: 200 };
  if (parameter.name === 'after' || parameter.name === 'last-event-id') {
    return fc.oneof(validValue(schema).map(String), mutantValue(schema).map(String), fc.constantFrom('0', '1-0', '99999999999999999999-0', '1\r\n2', '1\n', '\r', '-1', '00', '1-', 'abc'));
  }
  return fc.oneof({ arbitrary: validValue(schema).map(String), weight: 3 }, { arbitrary: mutantValue(schema).map(scalarText), weight: 2 });
}

function scalarText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value) ?? 'undefined';
}

function queryOf(operation: Operation): fc.Arbitrary<Array<[string, string]>> {
  const parameters = operation.parameters.filter((parameter) => parameter.in === 'query');
  const each = parameters.map((parameter) =>
    fc.oneof(
      { arbitrary: fc.constant<Array<[string, string]>>([]), weight: 2 },
      { arbitrary: parameterText(parameter).map((value): Array<[string, string]> => [[parameter.name, value]]), weight: 3 },
      { arbitrary: fc.tuple(parameterText(parameter), parameterText(parameter)).map(([a, b]): Array<[string, string]> => [[parameter.name, a], [parameter.name, b]]), weight: 1 },
    ),
  );
  const extra = fc.oneof(
    { arbitrary: fc.constant<Array<[string, string]>>([]), weight: 8 },
    { arbitrary: fc.tuple(fc.constantFrom('__proto__[x]', 'constructor[prototype][x]', 'x', 'limit[]', ''), hostileString).map(([key, value]): Array<[string, string]> => [[key, value]]), weight: 1 },
  );
  return fc.tuple(fc.tuple(...each), extra).map(([lists, more]) => [...lists.flat(), ...more]);
}

function headersOf(operation: Operation): fc.Arbitrary<Array<[string, string]>> {
  const declared = operation.parameters.filter((parameter) => parameter.in === 'header');
  const each = declared.map((parameter) =>
    fc.oneof(
      { arbitrary: fc.constant<Array<[string, string]>>([]), weight: 2 },
      {
        arbitrary: (parameter.name === 'idempotency-key' ? fc.oneof(fc.constantFrom('k1', 'k2', 'k3'), parameterText(parameter)) : parameterText(parameter)).map(
          (value): Array<[string, string]> => [[parameter.name, value]],
        ),
        weight: 3,
      },
    ),
  );
  const accept = fc.oneof(
    { arbitrary: fc.constant<Array<[string, string]>>([]), weight: 6 },
    { arbitrary: fc.constantFrom('application/json', 'text/event-stream', 'application/xml', '*/*', 'application/problem+json', '', 'text/html;q=0.1, garbage').map((value): Array<[string, string]> => [['accept', value]]), weight: 2 },
  );
  const noise = fc.oneof(
    { arbitrary: fc.constant<Array<[string, string]>>([]), weight: 8 },
    { arbitrary: fc.tuple(fc.constantFrom('x-fuzz', 'x-request-id', 'origin', 'authorization', 'cookie', 'user-agent', 'forwarded', 'x-forwarded-for'), hostileString).map(([name, value]): Array<[string, string]> => [[name, value]]), weight: 1 },
  );
  return fc.tuple(fc.tuple(...each), accept, noise).map(([lists, a, n]) => [...lists.flat(), ...a, ...n]);
}

/** Bodies that reach the Host: a start of a real deployment, signals a demo understands. */
function domainBody(operation: Operation, catalog: readonly CatalogEntry[]): fc.Arbitrary<unknown> | undefined {
  const body = operation.body as Record<string, any> | undefined;
  if (operation.operationId === 'startProcess' && catalog.length > 0) {
    const extras = body?.properties ?? {};
    return fc.constantFrom(...catalog).chain((entry) =>
      fc.record(
        {
          deployment: fc.constant(entry.name),
          input: fc.oneof({ arbitrary: startInput(entry), weight: 4 }, { arbitrary: mutantValue(entry.inputSchema), weight: 1 }),
          // Mostly absent: a random budget or limit usually asks for more than the server grants (403).
          budget: rarely(validValue(extras.budget ?? {})),
          treeLimits: rarely(validValue(extras.treeLimits ?? {})),
          capabilities: rarely(validValue(extras.capabilities ?? {})),
        },
        { requiredKeys: ['deployment', 'input'] },
      ),
    );
  }
  if (operation.operationId === 'deliverSignals') {
    const payloads = catalog.flatMap((entry) => [entry.signalSchema, ...entry.waits.map((wait) => wait.answerSchema)]).filter((schema) => schema !== false);
    const payload = fc.oneof(
      { arbitrary: fittingPayload, weight: 6 },
      ...payloads.map((schema) => ({ arbitrary: validValue(schema), weight: 1 })),
      { arbitrary: fc.record({ add: fc.integer({ min: -5, max: 50 }) }), weight: 2 },
      { arbitrary: anyJson, weight: 1 },
    );
    const signal = fc.record(
      { id: signalId, waitId: fc.oneof(fc.constant(currentWait), fc.constant(currentWait), fc.stringMatching(/^wait:[0-9a-f]{4}$/)), payload },
      { requiredKeys: ['id', 'payload'] },
    );
    return fc.record({ signals: fc.array(signal, { minLength: 1, maxLength: 4 }) });
  }
  return undefined;
}

/** Mostly undefined (an absent member), now and then a value. */
function rarely<T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ arbitrary: fc.constant(undefined), weight: 6 }, { arbitrary, weight: 1 });
}

/** An input the deployment accepts, kept small where a large value only costs time (sleeps, counts). */
function startInput(entry: CatalogEntry): fc.Arbitrary<unknown> {
  if (entry.name === 'demo.sleep') return fc.record({ ms: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.constant(600_000)) });
  if (entry.name === 'demo.counter') return fc.record({ target: fc.integer({ min: 1, max: 5 }) });
  return validValue(entry.inputSchema);
}

function bodyOf(operation: Operation, catalog: readonly CatalogEntry[]): fc.Arbitrary<OperationCase['body'] | undefined> {
  const schema = operation.body;
  const json = (arbitrary: fc.Arbitrary<unknown>) => arbitrary.map((value) => ({ json: value }));
  const notJson = fc.constantFrom('', '{', '{"a":1,}', "{'a':1}", 'null', '[]', '"text"', 'NaN', '{"a":1}{"b":2}', '\u0000', '{"a":1} trailing', '{"a":"\\ud800"}').map((text) => ({ text }));
  if (schema === undefined) {
    // A route that takes no body, sent one anyway now and then.
    return fc.oneof({ arbitrary: fc.constant(undefined), weight: 8 }, { arbitrary: json(anyJson), weight: 1 }, { arbitrary: notJson, weight: 1 });
  }
  const domain = domainBody(operation, catalog);
  return fc.oneof(
    ...(domain === undefined ? [] : [{ arbitrary: json(domain), weight: 6 }]),
    { arbitrary: json(validValue(schema)), weight: 3 },
    { arbitrary: json(mutantValue(schema)), weight: 3 },
    { arbitrary: notJson, weight: 1 },
  );
}

const contentTypes = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 12 },
  { arbitrary: fc.constantFrom(null, 'text/plain', 'application/json; charset=utf-16', 'application/json; charset=latin1', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/JSON', 'application/json;;', '*/*', 'application/problem+json'), weight: 1 },
);

const methodSwaps = fc.constantFrom('PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'get', 'POST', 'GET', 'TRACE', 'PROPFIND');

/**
 * A case for one operation: half of them well-formed (the declared method, documented or live
 * values, a body the route and the deployment accept) so they reach deep into the Host, the other
 * half with every part open to mutation.
 */
export function operationCase(operation: Operation, catalog: readonly CatalogEntry[]): fc.Arbitrary<OperationCase> {
  return fc.oneof(wellFormedCase(operation, catalog), mutatedCase(operation, catalog));
}

function mutatedCase(operation: Operation, catalog: readonly CatalogEntry[]): fc.Arbitrary<OperationCase> {
  const path: Record<string, fc.Arbitrary<PathValue>> = {};
  for (const parameter of operation.parameters.filter((candidate) => candidate.in === 'path')) path[parameter.name] = pathValue(parameter);
  return fc.record({
    kind: fc.constant('operation' as const),
    operationId: fc.constant(operation.operationId),
    method: fc.oneof({ arbitrary: fc.constant(operation.method), weight: 15 }, { arbitrary: methodSwaps, weight: 1 }),
    path: fc.record(path),
    query: queryOf(operation),
    headers: headersOf(operation),
    body: bodyOf(operation, catalog),
    contentType: contentTypes,
    framing: fc.oneof({ arbitrary: fc.constant('length' as const), weight: 5 }, { arbitrary: fc.constant('chunked' as const), weight: 1 }),
    chunks: fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 4 }),
  });
}

function wellFormedCase(operation: Operation, catalog: readonly CatalogEntry[]): fc.Arbitrary<OperationCase> {
  const path: Record<string, fc.Arbitrary<PathValue>> = {};
  for (const parameter of operation.parameters.filter((candidate) => candidate.in === 'path')) {
    path[parameter.name] =
      parameter.name === 'name'
        ? fc.constantFrom(...(catalog.length > 0 ? catalog.map((entry) => entry.name) : ['demo.echo'])).map((text) => ({ text, raw: false }))
        : (fc.record({
            ref: parameter.name === 'effectId' ? fc.constant<Ref['ref']>('effect') : operation.operationId === 'deliverSignals' ? fc.constant<Ref['ref']>('waiting') : refKinds,
            pick: fc.nat(),
          }) as fc.Arbitrary<PathValue>);
  }
  const query = fc.tuple(
    ...operation.parameters
      .filter((parameter) => parameter.in === 'query')
      .map((parameter) => fc.option(documentedValue(parameter), { nil: undefined, freq: 2 }).map((value): Array<[string, string]> => (value === undefined ? [] : [[parameter.name, value]]))),
  );
  const declared = operation.parameters.filter((parameter) => parameter.in === 'header');
  const headers = fc
    .tuple(...declared.map((parameter) => fc.option(parameter.name === 'idempotency-key' ? fc.uuid() : documentedValue(parameter), { nil: undefined, freq: 2 }).map((value): Array<[string, string]> => (value === undefined ? [] : [[parameter.name, value]]))))
    .map((lists) => [...lists.flat(), ...(operation.operationId === 'streamTree' ? ([['accept', 'text/event-stream']] as Array<[string, string]>) : [])]);
  const domain = operation.body === undefined ? undefined : (domainBody(operation, catalog) ?? validValue(operation.body));
  return fc.record({
    kind: fc.constant('operation' as const),
    operationId: fc.constant(operation.operationId),
    method: fc.constant(operation.method),
    path: fc.record(path),
    query: query.map((lists) => lists.flat()),
    headers,
    body: domain === undefined ? fc.constant(undefined) : domain.map((json) => ({ json })),
    contentType: fc.constant('application/json'),
    framing: fc.constant('length' as const),
    chunks: fc.constant([1]),
  });
}

/** A value the documentation shows (its example or an enum member), or a valid one; short long polls. */
function documentedValue(parameter: Parameter): fc.Arbitrary<string> {
  const schema = parameter.schema as Record<string, unknown>;
  if (parameter.name === 'waitMs') return fc.integer({ min: 0, max: 200 }).map(String);
  if (parameter.name === 'after' || parameter.name === 'last-event-id') return fc.constantFrom('0', '1', '2');
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]).map(String));
  if (schema.example !== undefined) return fc.constant(String(schema.example));
  if (schema.type === 'boolean') return fc.boolean().map(String);
  return validValue(schema).map(String);
}

/** One case per operation of the spec, weighted alike (the write routes a little more). */
export function operationCases(spec: ApiSpec, catalog: readonly CatalogEntry[]): fc.Arbitrary<OperationCase> {
  return fc.oneof(
    ...spec.operations.map((operation) => ({
      arbitrary: operationCase(operation, catalog),
      weight: operation.operationId === 'startProcess' ? 4 : operation.operationId === 'deliverSignals' ? 8 : 1,
    })),
  );
}

/** The bytes of a case against the live state, and what a 2xx would acknowledge. */
export function materialize(spec: ApiSpec, testCase: OperationCase, state: LiveState, host: string): { request: RawRequest; acknowledges?: Acknowledgeable } {
  const operation = spec.operations.find((candidate) => candidate.operationId === testCase.operationId)!;
  const resolved: Record<string, string> = {};
  let target = operation.path;
  for (const [name, value] of Object.entries(testCase.path)) {
    let text: string;
    if (isRef(value)) {
      const owner = resolved.id;
      text = (value.ref === 'effect' && owner !== undefined ? state.effectOf(owner, value.pick) : undefined) ?? state.resolve(value) ?? 'process:00000000000000000000000000000000';
      resolved[name] = text;
      text = percentEncode(text);
    } else {
      resolved[name] = value.text;
      text = value.raw ? value.text : percentEncode(value.text);
    }
    target = target.replace(`{${name}}`, text);
  }
  if (testCase.query.length > 0) target += `?${testCase.query.map(([key, value]) => `${percentEncode(key)}=${percentEncode(value)}`).join('&')}`;

  const headers: Array<[string, string]> = [['host', host], ...testCase.headers.map(([name, value]) => [name, value] as [string, string])];
  let body: string | undefined;
  let json: unknown;
  if (testCase.body !== undefined) {
    if ('json' in testCase.body) {
      const target = resolved.id === undefined ? undefined : state.processes.find((process) => process.processId === resolved.id);
      json = fillWaits(testCase.body.json, resolved.id === undefined ? undefined : state.waits.get(resolved.id), target?.deployment);
      body = expandDeep(JSON.stringify(json) ?? 'null');
      // What the server parses (deep stand-ins expanded, -0 written as 0) is what a 2xx acknowledges.
      json = JSON.parse(body);
    } else {
      body = testCase.body.text;
    }
    if (testCase.contentType !== null) headers.push(['content-type', testCase.contentType]);
  }
  headers.push(['connection', 'close']);
  const request: RawRequest = { method: testCase.method, target, headers, ...(body === undefined ? {} : { body }), framing: testCase.framing, chunks: testCase.chunks };
  return { request, ...acknowledgement(testCase, operation, resolved, json) };
}

/** encodeURIComponent, also for text with lone surrogates (their UTF-8 replacement bytes, encoded). */
export function percentEncode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('');
  }
}

/** Fills the placeholders of a signal batch: the addressed process's wait, a payload it takes. */
function fillWaits(value: unknown, wait: string | undefined, deployment: string | undefined): unknown {
  if (typeof value !== 'object' || value === null || !Array.isArray((value as { signals?: unknown }).signals)) return value;
  const signals = (value as { signals: unknown[] }).signals.map((signal) => {
    if (typeof signal !== 'object' || signal === null) return signal;
    const { waitId, payload, ...rest } = signal as Record<string, unknown>;
    const addressed = waitId === currentWait ? wait : waitId;
    return { ...rest, ...(addressed === undefined ? {} : { waitId: addressed }), payload: fit(payload, deployment, addressed !== undefined) };
  });
  return { ...(value as object), signals };
}

function acknowledgement(testCase: OperationCase, operation: Operation, resolved: Record<string, string>, json: unknown): { acknowledges?: Acknowledgeable } {
  if (testCase.method !== operation.method) return {};
  if (operation.operationId === 'startProcess' && typeof (json as { deployment?: unknown })?.deployment === 'string') {
    return { acknowledges: { kind: 'start', deployment: (json as { deployment: string }).deployment } };
  }
  if (operation.operationId === 'deliverSignals' && resolved.id !== undefined && Array.isArray((json as { signals?: unknown })?.signals)) {
    const batch = (json as { signals: unknown[] }).signals;
    // A batch holding anything but signal objects with a string id is refused whole: nothing to read back.
    if (!batch.every((signal) => typeof signal === 'object' && signal !== null && typeof (signal as { id?: unknown }).id === 'string')) return {};
    const signals = (batch as Array<{ id: string; payload: unknown }>).map((signal) => ({ id: signal.id, payload: signal.payload }));
    return { acknowledges: { kind: 'signals', processId: resolved.id, signals } };
  }
  if (operation.operationId === 'releaseTree' && resolved.rootId !== undefined) {
    return { acknowledges: { kind: 'release', rootId: resolved.rootId, purge: testCase.query.some(([key]) => key === 'purge') } };
  }
  return {};
}
