import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Reads a source file; tests swap it to check the checker against a planted violation. */
export type ReadSource = (file: string) => string | undefined;

const fromDisk: ReadSource = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined);

/**
 * Everything `entries` import, transitively: project files (absolute paths) and packages (bare
 * names). Uses the TypeScript compiler's own import scanner, type-only imports included, so a
 * boundary cannot be crossed by an import the scanner misses.
 */
export function reachableImports(entries: string[], read: ReadSource = fromDisk): Set<string> {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = read(file);
    if (source === undefined) continue;
    for (const { fileName: spec } of ts.preProcessFile(source, true, true).importedFiles) {
      if (!spec.startsWith('.')) {
        seen.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
        continue;
      }
      const base = path.resolve(path.dirname(file), spec);
      const resolved = [`${base}.ts`, path.join(base, 'index.ts'), base].find(
        (candidate) => read(candidate) !== undefined,
      );
      if (resolved) queue.push(resolved);
    }
  }
  return seen;
}
