import fs from 'node:fs';
import path from 'node:path';

import { execFileSync } from 'node:child_process';

// The README's and docs/'s figures come from runs whose output the repository keeps: a placeholder
// left where a table belongs, a cell that says a run is still going, or a results file named but not
// committed is a page that tells the reader something nobody measured. The README stays a front door
// (at most 250 lines) whose Layout table is the tree's, and whose links reach every page of docs/.

const root = path.join(__dirname, '..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
const docPages = fs
  .readdirSync(path.join(root, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .sort();
/** The README and every page of docs/, by path. */
const pages: [string, string][] = [
  ['README.md', readme],
  ...docPages.map((f): [string, string] => [
    `docs/${f}`,
    fs.readFileSync(path.join(root, 'docs', f), 'utf8'),
  ]),
];

/** The README's lines outside fenced code blocks, with their line numbers. */
function proseLines(text: string): { line: number; text: string }[] {
  let inCode = false;
  return text.split('\n').flatMap((line, i) => {
    if (line.trimStart().startsWith('```')) {
      inCode = !inCode;
      return [];
    }
    return inCode ? [] : [{ line: i + 1, text: line }];
  });
}

/** Lines that are only an upper-case placeholder (`FIGURES_TABLE`, `TODO`), or a cell that says a run is unfinished. */
function unfilledLines(text: string, file = 'README.md'): string[] {
  return proseLines(text)
    .filter(
      ({ text: line }) =>
        /^\s*[A-Z][A-Z0-9_]{2,}\s*$/.test(line) ||
        (line.trimStart().startsWith('|') &&
          /\|\s*(running|tbd|todo|interim|pending|n\/a yet)\s*\|/i.test(line)),
    )
    .map(({ line, text: l }) => `${file}:${line}: ${l.trim()}`);
}

/** Files under bench/results/ the text names (a pattern such as `<S>` stands for any seed). */
function namedResults(text: string): string[] {
  return [
    ...new Set([...text.matchAll(/bench\/results\/([\w.<>-]+\.(?:md|svg|txt|json))/g)].map((m) => m[1]!)),
  ];
}

function existsInResults(name: string): boolean {
  const dir = path.join(root, 'bench', 'results');
  if (!name.includes('<')) return fs.existsSync(path.join(dir, name));
  const pattern = new RegExp(`^${name.replace(/[.]/g, '\\.').replace(/<[^>]+>/g, '[^/]+')}$`);
  return fs.readdirSync(dir).some((file) => pattern.test(file));
}

/** The paths the README's Layout table names in its first column (`x/`), in order. */
function layoutPaths(text: string): string[] {
  const at = text.indexOf('## Layout');
  const table = at < 0 ? '' : text.slice(at).split('\n## ')[0]!;
  return [...table.matchAll(/^\| `([^`]+)`/gm)].map((m) => m[1]!);
}

/** The repository's top-level folders, as git tracks them. */
function trackedFolders(): string[] {
  const files = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n');
  return [...new Set(files.filter((f) => f.includes('/')).map((f) => `${f.split('/')[0]}/`))].sort();
}

/** The docs/ pages a text links to, as `docs/x.md`. */
function linkedPages(text: string): string[] {
  return [...new Set([...text.matchAll(/\]\((docs\/[\w.-]+\.md)(?:#[\w-]*)?\)/g)].map((m) => m[1]!))].sort();
}

describe('the README and docs/ are filled in', () => {
  it('have no placeholder line and no table cell of an unfinished run', () => {
    expect(pages.flatMap(([file, text]) => unfilledLines(text, file))).toEqual([]);
  });

  it('name only results files that bench/results/ holds', () => {
    const named = pages.flatMap(([, text]) => namedResults(text));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((name) => !existsInResults(name))).toEqual([]);
  });
});

describe('the README is a front door', () => {
  it('is at most 250 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
  });

  it("has a Layout table of exactly the repository's top-level folders", () => {
    expect([...layoutPaths(readme)].sort()).toEqual(trackedFolders());
  });

  it('links every page of docs/, and only pages that exist', () => {
    expect(linkedPages(readme)).toEqual(docPages.map((f) => `docs/${f}`));
  });
});

describe('the checks find what they look for', () => {
  it('finds what it looks for', () => {
    const planted = [
      '## Reliability',
      'FIGURES_TABLE',
      '| sqlite | running | – |',
      '```sh',
      'SOME_ENV_VAR',
      '```',
      'See `bench/results/never-run.md` and `bench/results/campaign-etcd-seed<S>.txt`.',
    ].join('\n');
    expect(unfilledLines(planted)).toEqual([
      'README.md:2: FIGURES_TABLE',
      'README.md:3: | sqlite | running | – |',
    ]);
    expect(namedResults(planted)).toEqual(['never-run.md', 'campaign-etcd-seed<S>.txt']);
    expect(existsInResults('never-run.md')).toBe(false);
    expect(existsInResults('campaign-etcd-seed<S>.txt')).toBe(true);
    const layout =
      '## Layout\n\n| path | holds |\n| --- | --- |\n| `a/` | x |\n| `b/` | y |\n\n## Next\n| `c/` | z |';
    expect(layoutPaths(layout)).toEqual(['a/', 'b/']);
    expect(linkedPages('[x](docs/a.md) [y](docs/b.md#part) [z](other.md)')).toEqual([
      'docs/a.md',
      'docs/b.md',
    ]);
  });
});
