import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import { parseArguments } from '../../src/app/cli.js';

const launcher = new URL('../../bin/scope.js', import.meta.url).pathname;

test('arguments: serve, --no-demos, --help; anything else is a usage error', () => {
  assert.deepEqual(parseArguments(['serve']), { command: 'serve', demos: undefined });
  assert.deepEqual(parseArguments(['serve', '--no-demos']), { command: 'serve', demos: false });
  assert.deepEqual(parseArguments(['--help']), { command: 'help', demos: undefined });
  assert.ok('error' in parseArguments([]));
  assert.ok('error' in parseArguments(['serve', '--demos=maybe']));
  assert.ok('error' in parseArguments(['start']));
});

interface Launched {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves with the first stdout line matching `pattern`. */
  line(pattern: RegExp): Promise<string>;
  exit(): Promise<number | null>;
}

function launch(args: string[], env: Record<string, string>): Launched {
  const child = spawn(process.execPath, [launcher, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  const scan = (): void => {
    for (const line of text.split('\n')) {
      for (const waiter of [...waiters]) {
        if (waiter.pattern.test(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
    scan();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
    scan();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => text,
    line: (pattern) =>
      new Promise<string>((resolve, reject) => {
        waiters.push({ pattern, resolve });
        scan();
        void exited.then(() => reject(new Error(`exited before printing ${pattern}:\n${text}`)));
      }),
    exit: () => exited,
  };
}

test('scope serve: listens, serves the demos, and shuts down gracefully on SIGTERM', async () => {
  const server = launch(['serve'], { PORT: '0', SCOPE_LOG_LEVEL: 'info', SCOPE_SHUTDOWN_MS: '2000' });
  try {
    const listening = await server.line(/scope listening on/);
    const url = (JSON.parse(listening) as { url: string }).url;
    const deployments = (await (await fetch(`${url}/v1/deployments`)).json()) as { items: { name: string }[] };
    assert.ok(deployments.items.some((deployment) => deployment.name === 'demo.echo'));
    const started = await fetch(`${url}/v1/processes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ deployment: 'demo.echo', input: { value: 'cli' } }),
    });
    assert.equal(started.status, 201);
    server.child.kill('SIGTERM');
    assert.equal(await server.exit(), 0);
    assert.match(server.output(), /"msg":"shut down"/);
  } finally {
    server.child.kill('SIGKILL');
  }
});

test('scope serve: twelve sleeps at once raise no listener-leak warning on the shutdown signal a deployments module is given', async () => {
  // The fixture's sleeps link to the `shutdown` signal `scope serve` hands a SCOPE_DEPLOYMENTS module.
  const server = launch(['serve', '--no-demos'], { PORT: '0', SCOPE_LOG_LEVEL: 'info', SCOPE_SHUTDOWN_MS: '2000', SCOPE_DEPLOYMENTS: 'test/fixtures/never-sleep-deployments.ts' });
  try {
    const url = (JSON.parse(await server.line(/scope listening on/)) as { url: string }).url;
    const ids = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const started = await fetch(`${url}/v1/processes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ deployment: 'demo.sleep', input: { ms: 600_000 } }) });
        assert.equal(started.status, 201);
        return ((await started.json()) as { processId: string }).processId;
      }),
    );
    // Each sleep links its abort to that signal once its effect is dispatched.
    for (const id of ids) {
      for (;;) {
        const effects = (await (await fetch(`${url}/v1/processes/${encodeURIComponent(id)}/effects`)).json()) as { items: unknown[] };
        if (effects.items.length > 0) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    server.child.kill('SIGTERM');
    assert.equal(await server.exit(), 0);
    assert.doesNotMatch(server.output(), /MaxListenersExceededWarning/);
  } finally {
    server.child.kill('SIGKILL');
  }
});

test('scope serve --no-demos registers no deployments', async () => {
  const server = launch(['serve', '--no-demos'], { PORT: '0', SCOPE_LOG_LEVEL: 'info' });
  try {
    const url = (JSON.parse(await server.line(/scope listening on/)) as { url: string }).url;
    const deployments = (await (await fetch(`${url}/v1/deployments`)).json()) as { items: unknown[] };
    assert.deepEqual(deployments.items, []);
    server.child.kill('SIGINT');
    assert.equal(await server.exit(), 0);
  } finally {
    server.child.kill('SIGKILL');
  }
});

test('scope serve with a bad configuration exits 2 and names every bad variable', async () => {
  const server = launch(['serve'], { PORT: 'eighty', SCOPE_DEMOS: 'perhaps' });
  assert.equal(await server.exit(), 2);
  assert.match(server.output(), /PORT="eighty"/);
  assert.match(server.output(), /SCOPE_DEMOS="perhaps"/);
  const usage = launch(['frobnicate'], {});
  assert.equal(await usage.exit(), 2);
  assert.match(usage.output(), /usage: scope serve/);
});
