import fs from 'node:fs';
import path from 'node:path';

// The README's figures come from runs whose output the repository keeps: a placeholder left where a
// table belongs, a cell that says a run is still going, or a results file named but not committed
// is a README that tells the reader something nobody measured.

const root = path.join(__dirname, '..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');

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
function unfilledLines(text: string): string[] {
  return proseLines(text)
    .filter(
      ({ text: line }) =>
        /^\s*[A-Z][A-Z0-9_]{2,}\s*$/.test(line) ||
        (line.trimStart().startsWith('|') &&
          /\|\s*(running|tbd|todo|interim|pending|n\/a yet)\s*\|/i.test(line)),
    )
    .map(({ line, text: l }) => `README.md:${line}: ${l.trim()}`);
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

describe('the README is filled in', () => {
  it('has no placeholder line and no table cell of an unfinished run', () => {
    expect(unfilledLines(readme)).toEqual([]);
  });

  it('names only results files that bench/results/ holds', () => {
    const named = namedResults(readme);
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((name) => !existsInResults(name))).toEqual([]);
  });

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
  });
});
