import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TEMPORAL_ADDRESS, unique } from './support/temporalFixture';

// lockwarden as a user gets it: `npm pack`, installed into a fresh project outside the repository
// (test/package/, copied to a temporary directory), type-checked there with the README's snippets,
// its workflows bundled, run against the dev server, and driven with the installed `lockctl`.

const ROOT = path.join(__dirname, '..');
const PROJECT_TEMPLATE = path.join(__dirname, 'package');
// An install from scratch takes minutes (it builds better-sqlite3): the project's other packages are
// kept between runs, keyed by what they depend on; lockwarden itself is installed fresh every run.
const INSTALL_CACHE = path.join(os.homedir(), '.cache', 'lockwarden', 'package-test');

/** Runs a command to its end and returns its stdout; a failure carries its output. */
function run(cwd: string, command: string, args: string[], timeout = 300_000): string {
  try {
    return execFileSync(command, args, {
      cwd,
      encoding: 'utf8',
      timeout,
      maxBuffer: 256 * 1024 * 1024, // npm ls --json --long prints megabytes
      env: { ...process.env, TEMPORAL_ADDRESS, npm_config_update_notifier: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

/** Packs the repository (its `prepack` builds dist/) and returns the tarball and npm's figures. */
function pack(into: string): { tarball: string; packedBytes: number; unpackedBytes: number; files: number } {
  const [report] = JSON.parse(run(ROOT, 'npm', ['pack', '--json', '--pack-destination', into])) as {
    filename: string;
    size: number;
    unpackedSize: number;
    entryCount: number;
  }[];
  return {
    tarball: path.join(into, report!.filename),
    packedBytes: report!.size,
    unpackedBytes: report!.unpackedSize,
    files: report!.entryCount,
  };
}

/** A fresh copy of the user's project in `dir`, depending on lockwarden's tarball, installed. */
function installUserProject(dir: string, tarball: string): void {
  fs.cpSync(PROJECT_TEMPLATE, dir, { recursive: true });
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const lockwardenManifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const key = createHash('sha256')
    .update(JSON.stringify([manifest, lockwardenManifest.dependencies, lockwardenManifest.peerDependencies]))
    .digest('hex')
    .slice(0, 16);
  manifest.dependencies.lockwarden = `file:${tarball}`;
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  const cached = path.join(INSTALL_CACHE, key, 'node_modules');
  if (fs.existsSync(cached)) fs.cpSync(cached, path.join(dir, 'node_modules'), { recursive: true });
  run(dir, 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], 600_000);
  if (!fs.existsSync(cached)) {
    fs.mkdirSync(path.dirname(cached), { recursive: true });
    fs.cpSync(path.join(dir, 'node_modules'), cached, { recursive: true });
  }
}

/** The figures docs/operations.md gives for the package, in its table's order (see its package-size block). */
function documentedPackageFigures(): number[] {
  const text = fs.readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');
  const block = /<!-- package-size[^>]*-->([\s\S]*?)<!-- \/package-size -->/.exec(text)?.[1] ?? '';
  return [...block.matchAll(/^\|[^|]+\|\s*([\d,]+)\b[^|]*\|$/gm)].map((m) => Number(m[1]!.replace(/,/g, '')));
}

/** The TypeScript snippets of the README and of docs/ that import the package, each a module of `dir`. */
function writeReadmeSnippets(dir: string): number {
  const docs = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
  const text = [path.join(ROOT, 'README.md'), ...docs.map((f) => path.join(ROOT, 'docs', f))]
    .map((file) => fs.readFileSync(file, 'utf8'))
    .join('\n');
  const snippets = [...text.matchAll(/```ts\n([\s\S]*?)```/g)]
    .map((m) => m[1]!)
    .filter((code) => code.includes("from 'lockwarden/"));
  fs.mkdirSync(dir, { recursive: true });
  snippets.forEach((code, i) => fs.writeFileSync(path.join(dir, `snippet${i + 1}.ts`), code));
  return snippets.length;
}

interface LsNode {
  path?: string;
  dependencies?: Record<string, LsNode>;
}

// The paths of a package and of everything it depends on, leaving Temporal's packages out.
function subtreePaths(node: LsNode): string[] {
  const children = Object.entries(node.dependencies ?? {}).filter(
    ([name]) => !name.startsWith('@temporalio/'),
  );
  return [...(node.path ? [node.path] : []), ...children.flatMap(([, child]) => subtreePaths(child))];
}

function kibOf(paths: string[]): number {
  const out = execFileSync('du', ['-skc', ...paths], { encoding: 'utf8' })
    .trim()
    .split('\n');
  return Number(out[out.length - 1]!.split('\t')[0]);
}

function startWorker(dir: string, taskQueue: string, lockUrl: string): Promise<ChildProcess> {
  const worker = spawn(process.execPath, ['lib/worker.js', taskQueue, lockUrl], {
    cwd: dir,
    env: { ...process.env, TEMPORAL_ADDRESS },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  worker.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    worker.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve(worker);
    });
    worker.once('exit', (code) => reject(new Error(`user worker exited (code ${code}): ${stderr}`)));
  });
}

describe('lockwarden installed from its packed tarball into a project outside the repository', () => {
  it('type-checks the README snippets and a user project, bundles workflow-safe, runs against Temporal, and lockctl works from the install', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-user-'));
    const packed = pack(dir);
    installUserProject(path.join(dir, 'project'), packed.tarball);
    const project = path.join(dir, 'project');

    // Types: the user's own modules and the README's snippets, strict, declarations checked too.
    expect(writeReadmeSnippets(path.join(project, 'src', 'readme'))).toBeGreaterThanOrEqual(4);
    run(project, process.execPath, ['node_modules/typescript/bin/tsc', '-p', '.']);

    // The user's workflows, bundled as a worker bundles them: lockwarden's workflow code is in, and
    // no Node built-in (the bundler refuses those) nor any driver or Node-only library.
    const bundle = JSON.parse(run(project, process.execPath, ['lib/bundleCheck.js'])) as {
      nodeOnly: string[];
      lockwardenModules: string[];
    };
    expect(bundle.nodeOnly).toEqual([]);
    expect(bundle.lockwardenModules).toContain('node_modules/lockwarden/dist/workflows/withLock.js');

    // A missing optional driver is a clear error naming the package to install.
    const missing = run(project, process.execPath, [
      '-e',
      "require('lockwarden/worker').openLockService('redis://127.0.0.1:1').then(() => process.exit(3), (e) => console.log(e.name + ': ' + e.message))",
    ]);
    expect(missing).toContain('MissingDriver: LOCK_SERVICE_URL redis:// needs the "redis" package');
    expect(missing).toContain('npm install redis@^6.3.1');

    // lockwarden/testing: an embedded lock service of its own, gone when disposed.
    const testing = run(project, process.execPath, [
      '-e',
      "const t = require('lockwarden/testing').temporaryLockService(); t.locks.tryAcquire({ key: 'k', requester: 'r', ttlMs: 1000 }).then(async (a) => { console.log(a.granted && a.lease.token); await t.dispose(); console.log(require('fs').existsSync(t.url.slice(7))); })",
    ]);
    expect(testing.trim().split('\n')).toEqual(['1', 'false']);

    // The worker bin runs with Node alone, and refuses a bad configuration by naming the variable,
    // with exit code 2 (a setting that cannot work), as lockctl does for bad input.
    const refused = spawnSync('npx', ['--no-install', 'lockwarden-worker'], {
      cwd: project,
      encoding: 'utf8',
      env: { ...process.env, LOCK_SERVICE_URL: 'ftp://nowhere' },
      timeout: 60_000,
    });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('LOCK_SERVICE_URL must be one of sqlite:<path>');

    // The model worker's bin too, which refuses to start beside a lock-service setting.
    const modelRefused = spawnSync('npx', ['--no-install', 'lockwarden-model-worker'], {
      cwd: project,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, LOCK_SERVICE_URL: 'sqlite:locks.sqlite' },
      timeout: 60_000,
    });
    expect(modelRefused.status).toBe(2);
    expect(modelRefused.stderr).toContain(
      'LOCK_SERVICE_URL: the model worker holds no lock-service or fencing setting',
    );

    // Run it: the user's worker with the plugin, the user's client code, the user's workflow.
    const taskQueue = unique('user-project');
    const key = unique('user-key');
    const worker = await startWorker(project, taskQueue, `sqlite:${path.join(dir, 'locks.sqlite')}`);
    try {
      const lines = run(project, process.execPath, ['lib/main.js', taskQueue, key], 120_000)
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { by: string; token?: string; ok?: boolean; receipt?: string });
      expect(lines.map((l) => l.by)).toEqual(['acquire', 'release', 'withLease', 'withLock']);
      expect(lines.filter((l) => l.token).map((l) => l.token)).toEqual(['1', '2', '3']);
      expect(lines[1]!.ok).toBe(true);
      expect(lines[3]!.receipt).toBe(`exported ${key} under token 3`);

      // The installed bin, with Node alone: the sessions in Temporal, and the key on the lock service.
      const list = run(project, 'npx', ['--no-install', 'lockctl', 'list', '--key', key, '--json']);
      const sessions = JSON.parse(list) as { requester: string; state: string }[];
      expect(sessions.map((s) => s.requester).sort()).toEqual(
        ['script-a', 'script-b', `nightly-${key}`].sort(),
      );
      const status = run(project, 'npx', [
        '--no-install',
        'lockctl',
        '--task-queue',
        taskQueue,
        'status',
        key,
      ]);
      expect(status).toContain('newest token issued: 3');
    } finally {
      worker.kill('SIGTERM');
    }

    // What a user installs: the package itself, with its own dependencies (not Temporal's packages,
    // which it shares with the user's worker as peers), and the whole production tree.
    const tree = JSON.parse(run(project, 'npm', ['ls', '--omit=dev', '--all', '--json', '--long'])) as LsNode;
    const sizes = {
      packedBytes: packed.packedBytes,
      unpackedBytes: packed.unpackedBytes,
      files: packed.files,
      installedKiB: kibOf([path.join(project, 'node_modules', 'lockwarden')]),
      withItsDependenciesKiB: kibOf(subtreePaths(tree.dependencies!.lockwarden!)),
      withTemporalKiB: kibOf(Object.values(tree.dependencies!).flatMap(subtreePaths)),
    };
    fs.mkdirSync(path.join(ROOT, '.data'), { recursive: true });
    fs.writeFileSync(path.join(ROOT, '.data', 'package-size.json'), JSON.stringify(sizes, null, 2));
    expect(sizes.installedKiB).toBeGreaterThan(0);
    // The docs' figures are this test's: each within 10% of what it measured.
    const documented = documentedPackageFigures();
    const measured = [
      sizes.packedBytes,
      sizes.unpackedBytes,
      sizes.files,
      sizes.installedKiB,
      sizes.withItsDependenciesKiB,
      sizes.withTemporalKiB,
    ];
    expect(documented).toHaveLength(measured.length);
    documented.forEach((figure, i) =>
      expect({
        figure,
        measured: measured[i],
        off: Math.abs(figure / measured[i]! - 1) <= 0.1,
      }).toMatchObject({
        off: true,
      }),
    );
    fs.rmSync(dir, { recursive: true, force: true });
  }, 900_000);
});
