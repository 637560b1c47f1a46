import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { freshSqlitePath } from '../devkit/tempFiles';

const run = promisify(execFile);

describe('embedded SQLite lock service shared by processes', () => {
  it('keeps two processes contending on the file at once from ever holding the key together', async () => {
    const file = freshSqlitePath();
    const script = path.join(__dirname, 'support', 'contendFromProcess.ts');
    // Both start contending at the same moment, whenever each process got going.
    const startAt = String(Date.now() + 5_000);
    const contend = (name: string) =>
      run(process.execPath, ['--import', 'tsx', script, file, 'shared', name, '150', startAt], {
        cwd: path.join(__dirname, '..'),
      });
    const outputs = await Promise.all([contend('p1'), contend('p2')]);
    type Line = { token: string; grantedAt: number; releasedAt: number } | { deniedBy: string | null };
    const lines = outputs.map(({ stdout }) =>
      stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Line),
    );
    const holds = lines.map((list) => list.filter((l) => 'token' in l));
    expect(holds[0]!.length).toBeGreaterThan(0);
    expect(holds[1]!.length).toBeGreaterThan(0);
    // They competed: each was turned away at least once while the other process held the key.
    const deniedBy = lines.map((list) => list.flatMap((l) => ('deniedBy' in l ? [l.deniedBy ?? ''] : [])));
    expect(deniedBy[0]!.some((holder) => holder.startsWith('p2-'))).toBe(true);
    expect(deniedBy[1]!.some((holder) => holder.startsWith('p1-'))).toBe(true);
    const all = holds.flat().sort((a, b) => Number(BigInt(a.token) - BigInt(b.token)));
    expect(new Set(all.map((h) => h.token)).size).toBe(all.length);
    for (let i = 1; i < all.length; i++) {
      expect(all[i]!.grantedAt).toBeGreaterThanOrEqual(all[i - 1]!.releasedAt);
    }
  });
});
