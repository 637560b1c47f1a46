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
    for (const target of directImports(file, read)) {
      if (target.startsWith('/')) queue.push(target);
      else seen.add(target);
    }
  }
  return seen;
}

/**
 * What one file imports directly: project files (absolute paths) and packages (bare names), type-only
 * imports included.
 */
export function directImports(file: string, read: ReadSource = fromDisk): string[] {
  const source = read(file);
  if (source === undefined) return [];
  const targets: string[] = [];
  for (const { fileName: spec } of ts.preProcessFile(source, true, true).importedFiles) {
    if (!spec.startsWith('.')) {
      targets.push(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
      continue;
    }
    const base = path.resolve(path.dirname(file), spec);
    const resolved = [`${base}.ts`, path.join(base, 'index.ts'), base].find(
      (candidate) => read(candidate) !== undefined,
    );
    if (resolved) targets.push(resolved);
  }
  return targets;
}

/** The import cycles among `files` (each as the files in order, its first file repeated last). */
export function importCycles(files: string[], read: ReadSource = fromDisk): string[][] {
  const within = new Set(files);
  const cycles: string[][] = [];
  const done = new Set<string>();
  const walk = (file: string, trail: string[]) => {
    const at = trail.indexOf(file);
    if (at >= 0) {
      cycles.push([...trail.slice(at), file]);
      return;
    }
    if (done.has(file)) return;
    for (const next of directImports(file, read)) if (within.has(next)) walk(next, [...trail, file]);
    done.add(file);
  };
  for (const file of [...files].sort()) walk(file, []);
  return cycles;
}
