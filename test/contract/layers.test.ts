import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

// shared/ is the lowest folder: nothing in it imports from the folders built on it.

const ROOT = resolve(import.meta.dirname, '../..');
const UPPER = ['api', 'workers', 'migrations', 'scripts', 'cli', 'bench', 'test'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

test('no file of shared/ imports from api/, workers/, migrations/, scripts/ or the others above it', () => {
  const upward: string[] = [];
  for (const file of sources(join(ROOT, 'shared'))) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
      const specifier = match[1]!;
      if (!specifier.startsWith('.')) continue;
      const target = relative(ROOT, resolve(file, '..', specifier));
      if (UPPER.some((top) => target === top || target.startsWith(`${top}/`))) upward.push(`${relative(ROOT, file)} imports ${target}`);
    }
  }
  assert.deepEqual(upward, []);
});
