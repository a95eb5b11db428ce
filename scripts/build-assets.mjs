#!/usr/bin/env node
// Copies the files the compiled server reads at run time next to its JavaScript (`npm run build`):
// tsc emits only .js, and these are found relative to the module that reads them (import.meta.url).
// Usage: node scripts/build-assets.mjs [outDir]   (default dist)
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const outDir = resolve(root, process.argv[2] ?? 'dist');

const assets = [
  // The Lua scripts, loaded once by name (src/store/redis/scripts.ts).
  { from: 'src/store/redis/lua', recursive: true },
  // The scripted model's default conversation (src/server/model/server-model.ts).
  ...readdirSync(join(root, 'src/server/examples'))
    .filter((name) => name.endsWith('.json'))
    .map((name) => ({ from: `src/server/examples/${name}`, recursive: false })),
  // The console's committed bundle (plugins/console/index.ts).
  { from: 'plugins/console/dist', recursive: true },
];

for (const { from, recursive } of assets) {
  const target = join(outDir, from);
  // A directory is replaced whole: a file removed from the source must not linger in the build.
  if (recursive) rmSync(target, { recursive: true, force: true });
  cpSync(join(root, from), target, { recursive });
}
