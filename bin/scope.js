#!/usr/bin/env node
// The `scope` command: runs src/app/cli.ts through tsx's ESM loader (no build step needed).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/app/cli.ts');
await main(process.argv.slice(2));
