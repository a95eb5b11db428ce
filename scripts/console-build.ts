/**
 * Builds the browser console (src/console/) into plugins/console/dist/: one minified ES module and one
 * stylesheet, both named by their content hash, and index.html naming them. The bundle is committed
 * (so `npm ci` needs no build step); `--check` rebuilds into a temporary folder and fails when the
 * committed bundle differs (CI runs it beside `openapi:check`).
 *
 *   npm run console:build          rebuild plugins/console/dist/
 *   npm run console:check          fail if plugins/console/dist/ is stale
 */
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const source = 'src/console';
const committed = 'plugins/console/dist';

async function bundle(outdir: string): Promise<void> {
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  const result = await build({
    entryPoints: { console: join(source, 'main.tsx') },
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    outdir,
    metafile: true,
    legalComments: 'eof',
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
  const js = outputs.find((name) => name.endsWith('.js'));
  const css = outputs.find((name) => name.endsWith('.css'));
  if (js === undefined || css === undefined) throw new Error(`the build made ${outputs.join(', ')}: expected one .js and one .css`);
  const page = (await readFile(join(source, 'index.html'), 'utf8')).replace('{{js}}', js).replace('{{css}}', css);
  await writeFile(join(outdir, 'index.html'), page);
}

async function files(dir: string): Promise<Map<string, Buffer>> {
  const names = (await readdir(dir).catch(() => [] as string[])).sort();
  return new Map(await Promise.all(names.map(async (name) => [name, await readFile(join(dir, name))] as const)));
}

async function main(): Promise<void> {
  if (process.argv.includes('--check')) {
    const scratch = await mkdtemp(join(tmpdir(), 'scope-console-'));
    try {
      await bundle(scratch);
      const [fresh, current] = await Promise.all([files(scratch), files(committed)]);
      const stale = [...new Set([...fresh.keys(), ...current.keys()])].filter((name) => !fresh.get(name)?.equals(current.get(name) ?? Buffer.alloc(0)));
      if (stale.length > 0) {
        console.error(`${committed} is stale (${stale.join(', ')}): run npm run console:build and commit the result`);
        process.exitCode = 1;
        return;
      }
      console.log(`${committed} is current`);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
    return;
  }
  await bundle(committed);
  for (const [name, bytes] of await files(committed)) {
    console.log(`${name.padEnd(28)} ${String(bytes.length).padStart(8)} B   gzip ${String(gzipSync(bytes, { level: 9 }).length).padStart(7)} B`);
  }
}

await main();
