/**
 * `npm run postman`: writes `postman/collection.json` from `openapi.yaml`.
 *
 * 1. The reference folders: `openapi-to-postmanv2`'s `convertV2` (the v1 `convert` ignores
 *    `parametersResolution`), one folder per OpenAPI tag, requests filled from the document's examples,
 *    `{{baseUrl}}` (default `http://127.0.0.1:3000`). Offline: nothing is fetched.
 * 2. A walk of demo.approval that newman runs against a live server (`npm run postman:run`, and CI):
 *    start → read the wait from `/v1/waits` (retried until the wait opens) → answer it → the result → the
 *    finished tree's events and its (finite) SSE stream, each request with tests.
 *
 * The converter mints random ids and fakes values with `Math.random`: ids are replaced by ids derived
 * from each item's place in the collection and the faker runs on a seeded generator, so regenerating
 * from the same document gives the same file (`--check` relies on it).
 *
 * `--check` fails (exit 1) when the file on disk differs from what would be written.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const specPath = join(root, 'openapi.yaml');
const outputPath = join(root, 'postman', 'collection.json');

/** The folder `postman:run` executes. */
export const walkFolder = 'Walk: demo.approval';

interface Item {
  name: string;
  id?: string;
  item?: Item[];
  [key: string]: unknown;
}

interface Collection {
  info: Record<string, unknown>;
  item: Item[];
  variable?: { key: string; value: string; type?: string }[];
  [key: string]: unknown;
}

/**
 * A seeded generator (mulberry32) standing in for `Math.random` while the converter loads and runs:
 * its schema faker invents enum picks and numbers where the document has no example, and it keeps the
 * `Math.random` it found at load time. `reset()` before each conversion makes the output a function of
 * the document alone.
 */
const seeded = {
  state: 0,
  reset(): void {
    this.state = 0x5c09e;
  },
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  },
};

async function convert(spec: string): Promise<Collection> {
  const random = Math.random;
  Math.random = () => seeded.next();
  try {
    const { default: Converter } = await import('openapi-to-postmanv2');
    seeded.reset();
    return await convertWithConverter(Converter, spec);
  } finally {
    Math.random = random;
  }
}

function convertWithConverter(Converter: typeof import('openapi-to-postmanv2').default, spec: string): Promise<Collection> {
  return new Promise((resolve, reject) => {
    Converter.convertV2(
      { type: 'string', data: spec },
      {
        folderStrategy: 'Tags',
        parametersResolution: 'Example',
        requestNameSource: 'Fallback',
        enableOptionalParameters: false,
        includeAuthInfoInExample: false,
      },
      (error, result) => {
        if (error !== null) reject(new Error(`openapi-to-postmanv2: ${error.message}`));
        else if (result?.result !== true || result.output?.[0] === undefined) reject(new Error(`openapi-to-postmanv2: ${result?.reason ?? 'no collection'}`));
        else resolve(result.output[0].data as Collection);
      },
    );
  });
}

/** A script as Postman stores it: the source split into lines. */
function script(listen: 'prerequest' | 'test', source: string): { listen: string; script: { type: string; exec: string[] } } {
  return { listen, script: { type: 'text/javascript', exec: source.trim().split('\n') } };
}

function jsonRequest(method: string, path: string, body?: unknown): Record<string, unknown> {
  const url = `{{baseUrl}}${path}`;
  const [raw, query] = url.split('?');
  const request: Record<string, unknown> = {
    method,
    header: [
      { key: 'Accept', value: 'application/json' },
      ...(body === undefined ? [] : [{ key: 'Content-Type', value: 'application/json' }]),
    ],
    url: {
      raw: url,
      host: ['{{baseUrl}}'],
      path: (raw as string).replace('{{baseUrl}}/', '').split('/'),
      ...(query === undefined ? {} : { query: query.split('&').map((pair) => ({ key: pair.split('=')[0], value: pair.split('=')[1] ?? '' })) }),
    },
  };
  if (body !== undefined) request.body = { mode: 'raw', raw: JSON.stringify(body, null, 2), options: { raw: { language: 'json' } } };
  return request;
}

/**
 * The walk. Variables live on the collection (`processId`, `waitId`, `waitPolls`); every request checks
 * its status and the parts of the body the next step relies on.
 */
function approvalWalk(): Item {
  const item = (name: string, request: Record<string, unknown>, tests: string, prerequest?: string): Item => ({
    name,
    request,
    event: [...(prerequest === undefined ? [] : [script('prerequest', prerequest)]), script('test', tests)],
  });
  return {
    name: walkFolder,
    description:
      'Start demo.approval, read its wait from the inbox, answer it, and read the result, the events and the finished stream. ' +
      'Run it with `npm run postman:run` against a server started with the demo deployments (the default).',
    item: [
      item(
        'Start demo.approval',
        jsonRequest('POST', '/v1/processes', { deployment: 'demo.approval', input: { subject: 'newman walk' } }),
        `
pm.test('201 Created with a Location', () => {
  pm.response.to.have.status(201);
  pm.expect(pm.response.headers.get('Location')).to.match(/^\\/v1\\/processes\\//);
});
const started = pm.response.json();
pm.test('a demo.approval process', () => {
  pm.expect(started.processId).to.be.a('string');
  pm.expect(started.deployment).to.equal('demo.approval');
});
pm.collectionVariables.set('processId', started.processId);
pm.collectionVariables.set('waitPolls', '0');
`,
      ),
      item(
        'Read the wait from /v1/waits',
        jsonRequest('GET', '/v1/waits'),
        `
pm.test('200 with the inbox', () => {
  pm.response.to.have.status(200);
  pm.expect(pm.response.json().items).to.be.an('array');
});
const processId = pm.collectionVariables.get('processId');
const wait = pm.response.json().items.find((entry) => entry.processId === processId);
const polls = Number(pm.collectionVariables.get('waitPolls')) + 1;
pm.collectionVariables.set('waitPolls', String(polls));
if (wait === undefined && polls < 100) {
  // The first step commits after the start returns: ask again shortly.
  pm.execution.setNextRequest(pm.info.requestName);
} else {
  pm.test('the process waits for an external answer', () => {
    pm.expect(wait, 'a wait of ' + processId + ' after ' + polls + ' polls').to.be.an('object');
    pm.expect(wait.waitKind).to.equal('external');
    pm.expect(wait.deployment).to.equal('demo.approval');
    pm.expect(wait.rootId).to.equal(processId);
  });
  pm.collectionVariables.set('waitId', wait.waitId);
}
`,
        `
if (Number(pm.collectionVariables.get('waitPolls')) > 0) setTimeout(() => {}, 100);
`,
      ),
      item(
        'Answer the wait',
        jsonRequest('POST', '/v1/processes/{{processId}}/signals', {
          signals: [{ id: 'newman-answer', waitId: '{{waitId}}', payload: { approved: true, comment: 'approved by newman' } }],
        }),
        `
pm.test('200, accepted', () => {
  pm.response.to.have.status(200);
  pm.expect(pm.response.json().accepted).to.equal(true);
});
`,
      ),
      item(
        'Await the result',
        jsonRequest('GET', '/v1/processes/{{processId}}/result?waitMs=10000'),
        `
pm.test('200 with the terminal result', () => {
  pm.response.to.have.status(200);
});
const result = pm.response.json();
pm.test('completed with the answer', () => {
  pm.expect(result.processId).to.equal(pm.collectionVariables.get('processId'));
  pm.expect(result.status).to.equal('completed');
  pm.expect(result.output.subject).to.equal('newman walk');
  pm.expect(result.output.approved).to.equal(true);
  pm.expect(result.output.comment).to.equal('approved by newman');
  pm.expect(result.output.notes).to.eql([]);
});
`,
      ),
      item(
        'Page through the events',
        jsonRequest('GET', '/v1/processes/{{processId}}/events?limit=1000'),
        `
pm.test('200 with the tree log, started to finished', () => {
  pm.response.to.have.status(200);
  const types = pm.response.json().items.map((entry) => entry.type);
  pm.expect(types[0]).to.equal('agent.process.started');
  pm.expect(types).to.include('agent.signal.accepted');
  pm.expect(types).to.include('agent.process.finished');
});
`,
      ),
      item(
        'Read the finished stream (SSE)',
        {
          method: 'GET',
          header: [{ key: 'Accept', value: 'text/event-stream' }],
          url: { raw: '{{baseUrl}}/v1/trees/{{processId}}/stream', host: ['{{baseUrl}}'], path: ['v1', 'trees', '{{processId}}', 'stream'] },
        },
        `
pm.test('an event stream that ends with scope.stream.end', () => {
  pm.response.to.have.status(200);
  pm.expect(pm.response.headers.get('Content-Type')).to.match(/^text\\/event-stream/);
  const text = pm.response.text();
  pm.expect(text).to.include('id: ');
  pm.expect(text).to.include('event: agent.process.finished');
  pm.expect(text.trimEnd().split('\\n\\n').pop()).to.match(/^event: scope\\.stream\\.end\\ndata: /);
});
`,
      ),
    ],
  };
}

/** Replaces every `id` (and `_postman_id`) by a digest of the item's place, so the output is stable. */
function stableIds(value: unknown, path: string): void {
  if (Array.isArray(value)) {
    value.forEach((entry, index) => stableIds(entry, `${path}/${index}`));
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  const record = value as Record<string, unknown>;
  const here = typeof record.name === 'string' ? `${path}/${record.name}` : path;
  for (const key of Object.keys(record)) {
    if ((key === 'id' || key === '_postman_id') && typeof record[key] === 'string') {
      const hex = createHash('sha256').update(`${here}#${key}`).digest('hex');
      record[key] = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
    } else {
      stableIds(record[key], `${here}/${key}`);
    }
  }
}

export async function buildCollection(spec: string): Promise<Collection> {
  const collection = await convert(spec);
  collection.item = [approvalWalk(), ...collection.item];
  collection.variable = [
    // The spec's server is relative (`/`: the docs page calls the server that served it); a collection
    // imported into Postman needs an absolute one, the default address of `npm start`.
    { key: 'baseUrl', value: 'http://127.0.0.1:3000' },
    // The API key for a server with SCOPE_AUTH=keys (empty: the embedded default, auth off).
    { key: 'bearerToken', value: '' },
    { key: 'processId', value: '' },
    { key: 'waitId', value: '' },
    { key: 'waitPolls', value: '0' },
  ];
  stableIds(collection, '');
  return collection;
}

async function main(args: readonly string[]): Promise<void> {
  const collection = await buildCollection(readFileSync(specPath, 'utf8'));
  const text = `${JSON.stringify(collection, null, 2)}\n`;
  if (args.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(outputPath, 'utf8');
    } catch {
      // missing: stale
    }
    if (current !== text) {
      console.error('postman/collection.json is stale: run `npm run postman`');
      process.exit(1);
    }
    console.log('postman/collection.json is up to date');
    return;
  }
  mkdirSync(dirname(outputPath), { recursive: true });
  writeFileSync(outputPath, text);
  const requests = (items: readonly Item[]): number => items.reduce((count, entry) => count + (entry.item === undefined ? 1 : requests(entry.item)), 0);
  console.log(`wrote postman/collection.json: ${collection.item.length} folders, ${requests(collection.item)} requests`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  await main(process.argv.slice(2));
}
