#!/usr/bin/env node
// The `scope` command: runs src/server/cli.ts through tsx's ESM loader (no build step needed).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/server/cli.ts');
await main(process.argv.slice(2));
