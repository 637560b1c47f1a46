import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openLockService } from '../../locks/openLockService';
import { SEARCH_ATTRIBUTES } from '../../temporal/searchAttributes';
import { InvalidConfigurationError } from '../../policy/errors';
import { DEFAULT_MAX_CACHED_WORKFLOWS, LOCKWARDEN_VERSION } from '../../policy/constants';
import { parseDeploymentVersion } from '../../policy/deploymentVersion';
import { loadWorkerConfig } from '../../worker/config';
import { withSecretFiles } from '../../worker/secretFiles';

describe('worker configuration', () => {
  it('defaults to the local dev server and the embedded SQLite lock service', () => {
    expect(loadWorkerConfig({})).toMatchObject({
      temporal: { connectionOptions: { address: '127.0.0.1:7233' }, namespace: 'default' },
      taskQueue: 'lockwarden',
      lockServiceUrl: 'sqlite:.data/locks.sqlite',
    });
  });

  it('runs unversioned unless a Worker Deployment is named; the Build ID defaults to the package version', () => {
    expect(loadWorkerConfig({}).deployment).toBeNull();
    expect(loadWorkerConfig({ LOCKWARDEN_DEPLOYMENT: 'lockwarden' }).deployment).toEqual({
      name: 'lockwarden',
      buildId: LOCKWARDEN_VERSION,
    });
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(LOCKWARDEN_VERSION).toBe(pkg.version);
    expect(
      loadWorkerConfig({ LOCKWARDEN_DEPLOYMENT: 'lockwarden', LOCKWARDEN_BUILD_ID: 'canary-7' }).deployment,
    ).toEqual({ name: 'lockwarden', buildId: 'canary-7' });
    // Temporal joins name and Build ID with a colon (a dot in older APIs): the name may hold
    // neither, a Build ID no colon; the variable is named.
    expect(() => loadWorkerConfig({ LOCKWARDEN_DEPLOYMENT: 'lock.warden' })).toThrow(/LOCKWARDEN_DEPLOYMENT/);
    expect(() =>
      loadWorkerConfig({ LOCKWARDEN_DEPLOYMENT: 'lockwarden', LOCKWARDEN_BUILD_ID: 'a:b' }),
    ).toThrow(/LOCKWARDEN_BUILD_ID/);
    expect(
      loadWorkerConfig({ LOCKWARDEN_DEPLOYMENT: 'lockwarden', LOCKWARDEN_BUILD_ID: '0.2.1' }).deployment,
    ).toEqual({ name: 'lockwarden', buildId: '0.2.1' });
    expect(parseDeploymentVersion('lockwarden:0.2.0')).toEqual({
      ok: true,
      version: { deploymentName: 'lockwarden', buildId: '0.2.0' },
    });
    expect(parseDeploymentVersion('lockwarden')).toMatchObject({ ok: false });
    expect(() =>
      loadWorkerConfig({ LOCKWARDEN_DEPLOYMENT: 'lockwarden', LOCKWARDEN_BUILD_ID: '0.2 .0' }),
    ).toThrow(/LOCKWARDEN_BUILD_ID/);
  });

  it('bounds the workflow cache by default; 0 turns it off, and 1, which the SDK refuses, is named', () => {
    expect(loadWorkerConfig({}).maxCachedWorkflows).toBe(DEFAULT_MAX_CACHED_WORKFLOWS);
    expect(loadWorkerConfig({ LOCKWARDEN_MAX_CACHED_WORKFLOWS: '0' }).maxCachedWorkflows).toBe(0);
    expect(loadWorkerConfig({ LOCKWARDEN_MAX_CACHED_WORKFLOWS: '5000' }).maxCachedWorkflows).toBe(5_000);
    for (const bad of ['1', '-3', 'many'])
      expect(() => loadWorkerConfig({ LOCKWARDEN_MAX_CACHED_WORKFLOWS: bad })).toThrow(
        /LOCKWARDEN_MAX_CACHED_WORKFLOWS/,
      );
  });

  it('names every invalid variable at once', () => {
    const load = () =>
      loadWorkerConfig({ TEMPORAL_ADDRESS: 'nowhere', LOG_LEVEL: 'loud', LOCK_MAX_TTL_MS: '-1' });
    expect(load).toThrow(InvalidConfigurationError);
    expect(load).toThrow(/TEMPORAL_ADDRESS: must be host:port.*LOG_LEVEL.*LOCK_MAX_TTL_MS/);
  });

  it.each(['mysql://db', 'etcd://no-port', 'redis:/missing-slash', ''])(
    'refuses the lock service URL %j, saying which forms it accepts',
    async (url) => {
      await expect(openLockService(url)).rejects.toThrow(InvalidConfigurationError);
      await expect(openLockService(url)).rejects.toThrow(
        /LOCK_SERVICE_URL must be one of sqlite:<path>, redis\[s\]:\/\//,
      );
    },
  );

  it('registers on the dev server exactly the search attributes the workflows upsert', () => {
    const listed = fs
      .readFileSync(path.join(__dirname, '..', '..', 'scripts', 'search-attributes.txt'), 'utf8')
      .split('\n')
      .filter((line) => line && !line.startsWith('#'));
    const typeNames: Record<string, string> = { KEYWORD: 'Keyword', BOOL: 'Bool', DATETIME: 'Datetime' };
    const defined = Object.values(SEARCH_ATTRIBUTES).map((k) => `${k.name}=${typeNames[k.type]}`);
    expect(listed.sort()).toEqual(defined.sort());
  });

  it('gives the compose deployment the same Temporal dynamic config as the dev servers', () => {
    const root = path.join(__dirname, '..', '..');
    const devServer = fs
      .readFileSync(path.join(root, 'scripts', 'dev-server-settings.txt'), 'utf8')
      .split('\n')
      .filter((line) => line && !line.startsWith('#'));
    // `key:` then `  - value: v` in the YAML file, as `key=v` (a quoted string as the CLI flag writes it).
    const compose = [
      ...fs
        .readFileSync(path.join(root, 'compose', 'temporal-dynamic-config.yaml'), 'utf8')
        .matchAll(/^(\S+):\n\s+- value: (.+)$/gm),
    ].map(([, key, value]) => `${key}=${value!.replace(/^'(.*)'$/, '"$1"')}`);
    expect(compose.sort()).toEqual(devServer.sort());
    // Compose's Temporal services and the cluster script's read that same file.
    expect(fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8')).toContain(
      './compose/temporal-dynamic-config.yaml:/etc/lockwarden/temporal-dynamic-config.yaml',
    );
    expect(fs.readFileSync(path.join(root, 'scripts', 'cluster.sh'), 'utf8')).toContain(
      'TEMPORAL_DYNAMIC_CONFIG="$root/compose/temporal-dynamic-config.yaml"',
    );
  });
});

describe('secrets from files', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lw-secret-'));
  const write = (name: string, text: string) => {
    fs.writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };

  it('reads LOCK_SERVICE_URL_FILE and ANTHROPIC_API_KEY_FILE, dropping the trailing newline', () => {
    const env = withSecretFiles({
      LOCK_SERVICE_URL_FILE: write('url', 'rediss://lockwarden:s3cret@redis:6380\n'),
      ANTHROPIC_API_KEY_FILE: write('key', 'sk-ant-from-file\n'),
    });
    expect(loadWorkerConfig(env).lockServiceUrl).toBe('rediss://lockwarden:s3cret@redis:6380');
    expect(env.ANTHROPIC_API_KEY).toBe('sk-ant-from-file');
    expect(env).not.toHaveProperty('LOCK_SERVICE_URL_FILE');
  });

  it('names a file that cannot be read, an empty one, and one set beside its variable, never the contents', () => {
    expect(() => withSecretFiles({ LOCK_SERVICE_URL_FILE: path.join(dir, 'missing') })).toThrow(
      /LOCK_SERVICE_URL_FILE: cannot read .*missing \(ENOENT\)/,
    );
    expect(() => withSecretFiles({ ANTHROPIC_API_KEY_FILE: write('empty', '\n') })).toThrow(
      /ANTHROPIC_API_KEY_FILE: .*empty is empty/,
    );
    const both = () =>
      withSecretFiles({
        LOCK_SERVICE_URL: 'sqlite:x',
        LOCK_SERVICE_URL_FILE: write('u2', 'postgres://a:pw@h/db'),
      });
    expect(both).toThrow(/LOCK_SERVICE_URL_FILE: set beside LOCK_SERVICE_URL/);
    expect(both).not.toThrow(/pw@/);
  });
});
