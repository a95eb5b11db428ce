import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** What the architecture tests scan: the repository's TypeScript sources and their import specifiers. */

export const repoRoot = resolve(dirname(new URL(import.meta.url).pathname), '../..');

/** Every `.ts` file under `dir`, nested folders included. */
export function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** The specifiers a file imports: `import … from`, `export … from`, a bare `import '…'` and a literal `import('…')`. */
export function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const forms = /(?:^|\n)\s*(?:import|export)[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
  return [...text.matchAll(forms)].map((match) => (match[1] ?? match[2] ?? match[3]) as string);
}
