/**
 * Hand-made hostile cases, each a fast-check arbitrary of plain parameters and a plan that turns
 * them into bytes: malformed and deep JSON, huge and chunked bodies, bad and oversized ids, NUL and
 * unicode in ids and headers, CR/LF in SSE cursors, prototype-pollution keys, lying framing,
 * pipelining, concurrent conflicting signals and starts on one process, stream floods, and
 * slow-loris sockets (a head or body that never finishes, run in the background by the runner).
 */
import fc from 'fast-check';
import type { LiveState, Ref } from './live-state.js';
import { fit, fittingPayload, percentEncode, signalId, type Acknowledgeable } from './openapi-requests.js';
import { serialize, type RawRequest } from './raw-client.js';
import { hostileString, pollutionKey } from './schema-values.js';

export interface HostileCase {
  readonly kind: 'hostile';
  readonly name: HostileName;
  readonly params: Readonly<Record<string, unknown>>;
}

/** One exchange of a plan; the exchanges of a plan are sent at once (concurrently). */
export interface PlannedExchange {
  readonly bytes: Buffer;
  /** For the report: the request as text (truncated). */
  readonly label: string;
  readonly acknowledges?: Acknowledgeable;
  /** Pipelined requests: responses to wait for. */
  readonly expect?: number;
  /**
   * The server may close without an answer: it stops reading a body over the limit and the reset
   * can overtake its 413 (the kernel drops unread data on a reset).
   */
  readonly allowClose?: boolean;
  /** Keep an event stream open this long (ms) so that concurrent streams overlap. */
  readonly streamReadMs?: number;
}

export interface Plan {
  readonly exchanges: readonly PlannedExchange[];
  /** All 2xx answers must name one process (concurrent starts with one Idempotency-Key and body). */
  readonly oneProcess?: boolean;
  /** A socket the runner keeps open in the background, dripping bytes, never finishing. */
  readonly loris?: { readonly head: Buffer; readonly drip: Buffer; readonly intervalMs: number };
}

export type HostileName =
  | 'malformedJson'
  | 'deepJson'
  | 'hugeBody'
  | 'chunkedBody'
  | 'badId'
  | 'hostileHeader'
  | 'sseCursor'
  | 'pollution'
  | 'concurrentSignals'
  | 'concurrentStarts'
  | 'slowLoris'
  | 'streamFlood'
  | 'pipelined'
  | 'framing';

const live = (kind: Ref['ref']) => fc.record({ ref: fc.constant(kind), pick: fc.nat() });

/** Routes that take a JSON body, as `[method, template]` (`{id}`, `{effectId}`, `{rootId}` filled from the live state). */
const bodyRoutes = [
  ['POST', '/v1/processes'],
  ['POST', '/v1/processes/{id}/signals'],
  ['POST', '/v1/processes/{id}/pause'],
  ['POST', '/v1/processes/{id}/resume'],
  ['POST', '/v1/processes/{id}/cancel'],
  ['POST', '/v1/processes/{id}/kill'],
  ['POST', '/v1/processes/{id}/effects/{effectId}/resolution'],
] as const;

const idRoutes = [
  ['GET', '/v1/processes/{id}'],
  ['GET', '/v1/processes/{id}/children'],
  ['GET', '/v1/processes/{id}/result'],
  ['GET', '/v1/processes/{id}/signals'],
  ['GET', '/v1/processes/{id}/effects'],
  ['GET', '/v1/processes/{id}/events'],
  ['GET', '/v1/trees/{id}'],
  ['GET', '/v1/trees/{id}/snapshot'],
  ['GET', '/v1/trees/{id}/stream'],
  ['POST', '/v1/trees/{id}/capture'],
  ['POST', '/v1/trees/{id}/restore'],
  ['DELETE', '/v1/trees/{id}'],
  ['POST', '/v1/processes/{id}/cancel'],
  ['GET', '/v1/deployments/{id}'],
] as const;

const bodyRoute = fc.constantFrom(...bodyRoutes.map(([method, path]) => `${method} ${path}`));
const idRoute = fc.constantFrom(...idRoutes.map(([method, path]) => `${method} ${path}`));

/** A body a route accepts, to carry a hostile part. */
function sampleBody(route: string, inner: string): string {
  if (route.endsWith('/v1/processes')) return `{"deployment":"demo.echo","input":${inner}}`;
  if (route.endsWith('/signals')) return `{"signals":[{"id":"s1","payload":${inner}}]}`;
  if (route.endsWith('/resolution')) return `{"status":"succeeded","payload":${inner}}`;
  return `{"reason":${JSON.stringify(inner.slice(0, 100))}}`;
}

export const hostileCases: fc.Arbitrary<HostileCase> = fc.oneof(
  hostile('malformedJson', {
    route: bodyRoute,
    target: live('waiting'),
    text: fc.oneof(
      fc.constantFrom('{', '}', '{"deployment":', '{"a":1,}', "{'a':1}", '{"a":NaN}', '{"a":Infinity}', '{"a":01}', '{"a":.5}', '{"a":1e400}', '{"a":-}', '{a:1}', '{"a":1}/*c*/', '{"a":"\u0000"}', '{"a":"\\x00"}', '{"a":"\\ud800"}', '{"a":1,"a":2}', '\ufeff{}', '\ufeff', '[', 'true', '"'),
      fc.string({ unit: 'binary', maxLength: 64 }),
    ),
  }),
  hostile('deepJson', { route: bodyRoute, target: live('waiting'), depth: fc.integer({ min: 500, max: 120_000 }), shape: fc.constantFrom('array', 'object', 'mixed'), whole: fc.boolean() }),
  hostile('hugeBody', { route: bodyRoute, target: live('waiting'), megabytes: fc.double({ min: 1.01, max: 6, noNaN: true }), chunked: fc.boolean(), string: fc.boolean() }),
  hostile('chunkedBody', {
    route: bodyRoute,
    target: live('waiting'),
    chunkSize: fc.integer({ min: 1, max: 7 }),
    variant: fc.constantFrom('tiny', 'extensions', 'bad-size', 'huge-size', 'trailers', 'uppercase-hex', 'leading-zeros'),
  }),
  hostile('badId', {
    route: idRoute,
    id: fc.oneof(
      fc.constantFrom(257, 2048, 2049, 10_000, 70_000).map((length) => ({ length })),
      hostileString.map((text) => ({ text })),
      fc.constantFrom('%00', 'process%3A%00', 'a%2Fb', '..', '%2e%2e', 'process:%F0%9F%98%80', '%C0%AF', '%E2%80%AE', '%ZZ', '%', 'process:1;x=y', 'process:1?', 'process:1#f').map((encoded) => ({ encoded })),
      fc.constantFrom('process:\u0000', 'process:😀', 'process:é', 'a b', 'a\tb', 'process:\u202e').map((raw) => ({ raw })),
    ),
  }),
  hostile('hostileHeader', {
    route: idRoute,
    target: live('process'),
    variant: fc.constantFrom('nul', 'unicode', 'obs-fold', 'no-colon', 'space-before-colon', 'many', 'long', 'empty-name', 'duplicate-host', 'no-host', 'expect', 'utf8-name', 'control'),
    value: hostileString,
  }),
  hostile('sseCursor', {
    route: fc.constantFrom('stream', 'events'),
    target: live('root'),
    place: fc.constantFrom('header', 'query', 'both'),
    cursor: fc.oneof(
      fc.constantFrom('1\r2', '1\n2', '1\r\n2', '1\r\nX-Injected: yes', '%0d%0a', '1%0d%0aX-Injected:%20yes', '\r\n\r\n', '1\u0000', '１', '1-0\r', ' 1', '1 ', '-1', '99999999999999999999999', '18446744073709551616-0', '0-18446744073709551616', '1.5', '0x10', '1e3', ''),
      live('position').map((ref) => ({ position: ref })),
      hostileString,
    ),
  }),
  hostile('pollution', {
    route: bodyRoute,
    target: live('waiting'),
    key: pollutionKey,
    depth: fc.integer({ min: 0, max: 4 }),
    inQuery: fc.boolean(),
  }),
  hostile('concurrentSignals', {
    target: live('waiting'),
    count: fc.integer({ min: 2, max: 12 }),
    sameId: fc.boolean(),
    id: signalId,
    payloads: fc.array(fittingPayload, { minLength: 2, maxLength: 4 }),
    controls: fc.array(fc.constantFrom('pause', 'resume', 'cancel', 'kill'), { maxLength: 3 }),
  }),
  hostile('concurrentStarts', {
    count: fc.integer({ min: 2, max: 10 }),
    key: fc.string({ minLength: 1, maxLength: 12, unit: fc.constantFrom(...'abcdefghij0123456789-_') }),
    sameBody: fc.boolean(),
    value: fc.string({ maxLength: 16 }),
  }),
  hostile('slowLoris', {
    route: bodyRoute,
    target: live('waiting'),
    stage: fc.constantFrom('head', 'body', 'chunked'),
    intervalMs: fc.integer({ min: 20, max: 500 }),
  }),
  hostile('streamFlood', { target: live('root'), count: fc.integer({ min: 4, max: 24 }), holdMs: fc.integer({ min: 50, max: 300 }) }),
  hostile('pipelined', {
    first: idRoute,
    second: fc.constantFrom('good', 'bad-line', 'bad-json', 'huge-header', 'bare-lf'),
    target: live('process'),
  }),
  hostile('framing', {
    route: bodyRoute,
    target: live('waiting'),
    variant: fc.constantFrom('short-length', 'cl-and-te', 'two-lengths', 'te-gzip', 'te-identity', 'negative-length', 'http10', 'absolute-form', 'asterisk', 'bad-method', 'bad-version', 'tab-in-line', 'lf-only', 'te-chunked-twice', 'length-plus-sign', 'huge-length'),
  }),
);

function hostile(name: HostileName, params: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<HostileCase> {
  return fc.record(params).map((values) => ({ kind: 'hostile' as const, name, params: values }));
}

interface Context {
  readonly state: LiveState;
  readonly host: string;
}

/** The bytes of a hostile case against the live state. */
export function planHostile(testCase: HostileCase, context: Context): Plan {
  const p = testCase.params as Record<string, any>;
  const { state, host } = context;
  const resolve = (ref: Ref) => state.resolve(ref) ?? 'process:00000000000000000000000000000000';
  const fill = (route: string, target: Ref | undefined): { method: string; path: string; processId: string } => {
    const [method, template] = route.split(' ') as [string, string];
    const processId = target === undefined ? 'process:00000000000000000000000000000000' : resolve(target);
    const effectId = state.effectOf(processId, 0) ?? 'effect:0000';
    const path = template.replace('{id}', percentEncode(processId)).replace('{effectId}', percentEncode(effectId));
    return { method, path, processId };
  };
  const json = (method: string, path: string, body: string, extra: ReadonlyArray<readonly [string, string]> = []): RawRequest => ({
    method,
    target: path,
    headers: [['host', host], ['content-type', 'application/json'], ...extra, ['connection', 'close']],
    body,
  });
  const one = (request: RawRequest | Buffer, options: Omit<PlannedExchange, 'bytes' | 'label'> = {}): Plan => {
    const bytes = Buffer.isBuffer(request) ? request : serialize(request);
    return { exchanges: [{ bytes, label: label(bytes), ...options }] };
  };

  switch (testCase.name) {
    case 'malformedJson': {
      const { method, path } = fill(p.route, p.target);
      return one(json(method, path, p.text as string));
    }
    case 'deepJson': {
      const { method, path } = fill(p.route, p.target);
      const depth = p.depth as number;
      const open = p.shape === 'array' ? '[' : p.shape === 'object' ? '{"a":' : '[{"a":';
      const close = p.shape === 'array' ? ']' : p.shape === 'object' ? '}' : '}]';
      const inner = `${open.repeat(depth)}1${close.repeat(depth)}`;
      return one(json(method, path, p.whole === true ? inner : sampleBody(p.route, inner)), { allowClose: inner.length > 1_000_000 });
    }
    case 'hugeBody': {
      const { method, path } = fill(p.route, p.target);
      const size = Math.floor((p.megabytes as number) * 1024 * 1024);
      const inner = p.string === true ? JSON.stringify('x'.repeat(size)) : `[${'1,'.repeat(Math.floor(size / 2))}1]`;
      const request: RawRequest = { ...json(method, path, sampleBody(p.route, inner)), framing: p.chunked === true ? 'chunked' : 'length', chunks: [65_536] };
      return one(request, { allowClose: true });
    }
    case 'chunkedBody': {
      const { method, path } = fill(p.route, p.target);
      const body = Buffer.from(sampleBody(p.route, '{"value":"chunked","note":"n","approved":true}'));
      const head = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n`;
      const size = p.chunkSize as number;
      const parts: string[] = [];
      for (let offset = 0; offset < body.length; offset += size) {
        const piece = body.subarray(offset, offset + size).toString('latin1');
        const hex = piece.length.toString(16);
        const sizeText = p.variant === 'uppercase-hex' ? hex.toUpperCase() : p.variant === 'leading-zeros' ? `000${hex}` : hex;
        parts.push(`${sizeText}${p.variant === 'extensions' ? ';ext="v";x=1' : ''}\r\n${piece}\r\n`);
      }
      if (p.variant === 'bad-size') parts.splice(1, 0, 'zz\r\nab\r\n');
      if (p.variant === 'huge-size') parts.splice(1, 0, 'ffffffffffffffffff\r\n');
      const end = p.variant === 'trailers' ? '0\r\nx-trailer: 1\r\n\r\n' : '0\r\n\r\n';
      return one(Buffer.from(head + parts.join('') + end, 'latin1'));
    }
    case 'badId': {
      const [method, template] = (p.route as string).split(' ') as [string, string];
      const id = p.id as { length?: number; text?: string; encoded?: string; raw?: string };
      const segment =
        id.length !== undefined ? `process:${'a'.repeat(id.length)}` : id.text !== undefined ? percentEncode(id.text) : id.encoded !== undefined ? id.encoded : (id.raw as string);
      const target = template.replace('{id}', segment);
      const body = method === 'POST' ? '{}' : undefined;
      return one({ method, target, headers: [['host', host], ...(body === undefined ? [] : ([['content-type', 'application/json']] as const)), ['connection', 'close']], ...(body === undefined ? {} : { body }) });
    }
    case 'hostileHeader': {
      const { method, path } = fill(p.route, p.target);
      const value = p.value as string;
      const base = `${method} ${path} HTTP/1.1\r\n`;
      const bodyPart = method === 'POST' ? 'content-type: application/json\r\ncontent-length: 2\r\n' : '';
      const tail = `${bodyPart}connection: close\r\n\r\n${method === 'POST' ? '{}' : ''}`;
      const hostLine = `host: ${host}\r\n`;
      const lines: Record<string, string> = {
        nul: `${hostLine}x-fuzz: a\u0000b\r\n`,
        unicode: `${hostLine}x-fuzz: ${value}😀é\r\nidempotency-key: ключ\r\n`,
        'obs-fold': `${hostLine}x-fuzz: a\r\n folded\r\n`,
        'no-colon': `${hostLine}x-fuzz\r\n`,
        'space-before-colon': `${hostLine}x-fuzz : 1\r\n`,
        many: `${hostLine}${Array.from({ length: 2500 }, (_, index) => `x-h${index}: ${index}\r\n`).join('')}`,
        long: `${hostLine}x-fuzz: ${'v'.repeat(15_000)}\r\n`,
        'empty-name': `${hostLine}: value\r\n`,
        'duplicate-host': `${hostLine}host: other.example\r\n`,
        'no-host': '',
        expect: `${hostLine}expect: ${value.replace(/[\r\n]/g, '')}\r\n`,
        'utf8-name': `${hostLine}x-ключ: 1\r\n`,
        control: `${hostLine}x-fuzz: a\u0001\u007fb\r\n`,
      };
      return one(Buffer.from(base + lines[p.variant as string] + tail, 'utf8'));
    }
    case 'sseCursor': {
      const root = resolve(p.target);
      const cursor = typeof p.cursor === 'object' && p.cursor !== null ? (state.resolve((p.cursor as { position: Ref }).position) ?? '0') : String(p.cursor);
      const base = p.route === 'stream' ? `/v1/trees/${percentEncode(root)}/stream` : `/v1/processes/${percentEncode(root)}/events`;
      const query = p.place === 'header' ? '' : `?after=${cursor.includes('%') ? cursor : percentEncode(cursor)}`;
      const header = p.place === 'query' ? '' : `last-event-id: ${cursor}\r\n`;
      const accept = p.route === 'stream' ? 'accept: text/event-stream\r\n' : '';
      return one(Buffer.from(`GET ${base}${query} HTTP/1.1\r\nhost: ${host}\r\n${accept}${header}connection: close\r\n\r\n`, 'utf8'));
    }
    case 'pollution': {
      const { method, path } = fill(p.route, p.target);
      let inner = `{${JSON.stringify(p.key)}:{"polluted":true}}`;
      if (p.key === 'constructor') inner = '{"constructor":{"prototype":{"polluted":true}}}';
      for (let level = 0; level < (p.depth as number); level += 1) inner = `{"level${level}":${inner}}`;
      const body = (p.depth as number) === 0 && p.route === 'POST /v1/processes' ? `{"deployment":"demo.echo","input":{"value":"x"},${inner.slice(1, -1)}}` : sampleBody(p.route, inner);
      const target = p.inQuery === true ? `${path}?${percentEncode(`${p.key}[polluted]`)}=1` : path;
      return one(json(method, target, body, [[p.key as string, 'polluted']]));
    }
    case 'concurrentSignals': {
      const processId = resolve(p.target);
      const wait = state.waits.get(processId);
      const path = `/v1/processes/${percentEncode(processId)}`;
      const exchanges: PlannedExchange[] = [];
      for (let index = 0; index < (p.count as number); index += 1) {
        const addressed = wait !== undefined && index % 2 === 0;
        const deployment = state.processes.find((process) => process.processId === processId)?.deployment;
        const payload = fit((p.payloads as unknown[])[index % (p.payloads as unknown[]).length], deployment, addressed);
        const id = p.sameId === true ? (p.id as string) : `${p.id as string}-${index}`;
        const signal = { id, ...(addressed ? { waitId: wait } : {}), payload };
        const bytes = serialize(json('POST', `${path}/signals`, JSON.stringify({ signals: [signal] })));
        exchanges.push({ bytes, label: label(bytes), acknowledges: { kind: 'signals', processId, signals: [{ id, payload }] } });
      }
      for (const control of p.controls as string[]) {
        const bytes = serialize(json('POST', `${path}/${control}`, '{"reason":"fuzz"}'));
        exchanges.push({ bytes, label: label(bytes) });
      }
      return { exchanges };
    }
    case 'concurrentStarts': {
      const exchanges: PlannedExchange[] = [];
      const key = `fuzz-${p.key as string}`;
      for (let index = 0; index < (p.count as number); index += 1) {
        const value = p.sameBody === true ? (p.value as string) : `${p.value as string}${index}`;
        const bytes = serialize(json('POST', '/v1/processes', JSON.stringify({ deployment: 'demo.echo', input: { value } }), [['idempotency-key', key]]));
        exchanges.push({ bytes, label: label(bytes), acknowledges: { kind: 'start', deployment: 'demo.echo' } });
      }
      return { exchanges, oneProcess: true };
    }
    case 'slowLoris': {
      const { method, path } = fill(p.route, p.target);
      const body = sampleBody(p.route, '{"value":"slow"}');
      if (p.stage === 'head') {
        return { exchanges: [], loris: { head: Buffer.from(`${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n`), drip: Buffer.from('x-slow: '.padEnd(4000, 'z')), intervalMs: p.intervalMs } };
      }
      const framing = p.stage === 'chunked' ? 'transfer-encoding: chunked\r\n' : `content-length: ${body.length + 1000}\r\n`;
      const drip = p.stage === 'chunked' ? `${body.length.toString(16)}\r\n${body}\r\n` : body;
      return {
        exchanges: [],
        loris: { head: Buffer.from(`${method} ${path} HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\n${framing}\r\n`), drip: Buffer.from(drip), intervalMs: p.intervalMs },
      };
    }
    case 'streamFlood': {
      const root = resolve(p.target);
      const exchanges: PlannedExchange[] = [];
      for (let index = 0; index < (p.count as number); index += 1) {
        const bytes = Buffer.from(`GET /v1/trees/${percentEncode(root)}/stream HTTP/1.1\r\nhost: ${host}\r\naccept: text/event-stream\r\nconnection: close\r\n\r\n`);
        exchanges.push({ bytes, label: label(bytes), streamReadMs: p.holdMs });
      }
      return { exchanges };
    }
    case 'pipelined': {
      const { method, path } = fill(p.first, p.target);
      const first = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n${method === 'POST' ? 'content-type: application/json\r\ncontent-length: 2\r\n\r\n{}' : '\r\n'}`;
      const seconds: Record<string, string> = {
        good: `GET /healthz HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`,
        'bad-line': 'GARBAGE\r\n\r\n',
        'bad-json': `POST /v1/processes HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: 3\r\nconnection: close\r\n\r\n{{{`,
        'huge-header': `GET /healthz HTTP/1.1\r\nhost: ${host}\r\nx-big: ${'b'.repeat(70_000)}\r\n\r\n`,
        'bare-lf': `GET /healthz HTTP/1.1\nhost: ${host}\nx-a: 1\rb\n\n`,
      };
      return one(Buffer.from(first + seconds[p.second as string], 'latin1'), { expect: 2 });
    }
    case 'framing': {
      const { method, path } = fill(p.route, p.target);
      const body = sampleBody(p.route, '{"value":"framed"}');
      const h = `host: ${host}\r\ncontent-type: application/json\r\n`;
      const chunk = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
      const variants: Record<string, string> = {
        'short-length': `${method} ${path} HTTP/1.1\r\n${h}content-length: ${Math.floor(body.length / 2)}\r\n\r\n${body}`,
        'cl-and-te': `${method} ${path} HTTP/1.1\r\n${h}content-length: ${body.length}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n${chunk}`,
        'two-lengths': `${method} ${path} HTTP/1.1\r\n${h}content-length: ${body.length}\r\ncontent-length: ${body.length + 1}\r\nconnection: close\r\n\r\n${body}`,
        'te-gzip': `${method} ${path} HTTP/1.1\r\n${h}transfer-encoding: gzip, chunked\r\nconnection: close\r\n\r\n${chunk}`,
        'te-identity': `${method} ${path} HTTP/1.1\r\n${h}transfer-encoding: identity\r\nconnection: close\r\n\r\n${body}`,
        'negative-length': `${method} ${path} HTTP/1.1\r\n${h}content-length: -1\r\nconnection: close\r\n\r\n${body}`,
        http10: `${method} ${path} HTTP/1.0\r\ncontent-type: application/json\r\n\r\n${body}`,
        'absolute-form': `${method} http://${host}${path} HTTP/1.1\r\n${h}content-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
        asterisk: `OPTIONS * HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`,
        'bad-method': `P\u00d8ST ${path} HTTP/1.1\r\n${h}connection: close\r\n\r\n`,
        'bad-version': `${method} ${path} HTTP/9.9\r\n${h}connection: close\r\n\r\n`,
        'tab-in-line': `${method}\t${path}\tHTTP/1.1\r\n${h}connection: close\r\n\r\n`,
        'lf-only': `${method} ${path} HTTP/1.1\n${h.replaceAll('\r\n', '\n')}content-length: ${body.length}\nconnection: close\n\n${body}`,
        'te-chunked-twice': `${method} ${path} HTTP/1.1\r\n${h}transfer-encoding: chunked\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n${chunk}`,
        'length-plus-sign': `${method} ${path} HTTP/1.1\r\n${h}content-length: +${body.length}\r\nconnection: close\r\n\r\n${body}`,
        'huge-length': `${method} ${path} HTTP/1.1\r\n${h}content-length: 99999999999999999999\r\nconnection: close\r\n\r\n${body}`,
      };
      const variant = p.variant as string;
      // The short length leaves the rest of the body as a second (garbage) request on the connection.
      return one(Buffer.from(variants[variant]!, 'latin1'), { ...(variant === 'short-length' ? { expect: 2 } : {}) });
    }
  }
}

function label(bytes: Buffer): string {
  const text = bytes.subarray(0, 600).toString('latin1');
  return bytes.length > 600 ? `${text}… (${bytes.length} bytes)` : text;
}
