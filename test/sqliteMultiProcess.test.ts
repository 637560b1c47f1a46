import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { freshSqlitePath } from './support/tempFiles';

const run = promisify(execFile);

describe('embedded SQLite lock service shared by processes', () => {
  it('keeps two processes sharing the file from ever holding the key at once', async () => {
    const file = freshSqlitePath();
    const script = path.join(__dirname, 'support', 'contendFromProcess.ts');
    const contend = (name: string) =>
      run(process.execPath, ['--import', 'tsx', script, file, 'shared', name, '150'], {
        cwd: path.join(__dirname, '..'),
      });
    const outputs = await Promise.all([contend('p1'), contend('p2')]);
    const holds = outputs.map(({ stdout }) =>
      stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { token: string; grantedAt: number; releasedAt: number }),
    );
    expect(holds[0]!.length).toBeGreaterThan(0);
    expect(holds[1]!.length).toBeGreaterThan(0);
    const all = holds.flat().sort((a, b) => Number(BigInt(a.token) - BigInt(b.token)));
    expect(new Set(all.map((h) => h.token)).size).toBe(all.length);
    for (let i = 1; i < all.length; i++) {
      expect(all[i]!.grantedAt).toBeGreaterThanOrEqual(all[i - 1]!.releasedAt);
    }
  });
});
