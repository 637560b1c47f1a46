import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { decisionMode, loadWorkerConfig } from '../worker/config';
import { loadModelWorkerConfig } from '../worker/modelWorkerConfig';
import { withSecretFiles } from '../worker/secretFiles';
import { loadTemporalTarget } from '../temporal/connectionProfile';

// docker-compose.yml as `docker-compose config` resolves it (Debian's docker-compose; no engine is
// needed to validate and resolve a file): what a user deploys to more than one machine.
const ROOT = path.join(__dirname, '..');
const run = promisify(execFile);

// Temporal's server renders compose/temporal/lockwarden.yaml with a container's environment.
async function renderTemporalConfig(env: Record<string, string>): Promise<unknown> {
  await run('bash', ['scripts/cluster.sh', 'build'], { cwd: ROOT });
  const version = /TEMPORAL_SERVER_VERSION=([\d.]+)/.exec(
    fs.readFileSync(path.join(ROOT, 'scripts/cluster.sh'), 'utf8'),
  )![1];
  const bin = path.join(
    process.env.LOCKWARDEN_TOOLS_BIN ?? path.join(os.homedir(), '.cache/lockwarden/bin'),
    `temporal-server-v${version}`,
    'server',
  );
  const { stdout } = await run(
    bin,
    ['--root', '/', '--config', 'compose/temporal', '--env', 'lockwarden', 'render-config'],
    {
      cwd: ROOT,
      env: { ...process.env, ...env, TEMPORAL_BIND_IP: '127.0.0.1' },
    },
  );
  // The server logs "Loading config" lines, each starting with a date, before the YAML.
  return parse(
    stdout
      .split('\n')
      .filter((line) => !/^\d{4}\/\d{2}\/\d{2} /.test(line))
      .join('\n'),
  );
}

interface Service {
  depends_on?: unknown;
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  volumes?: string[];
  command?: string[] | string;
  entrypoint?: string[] | string;
  networks?: Record<string, unknown> | string[];
}

// The networks a resolved service is on (`docker-compose config` writes them as a map).
const networksOf = (service: Service): string[] =>
  (Array.isArray(service.networks) ? service.networks : Object.keys(service.networks ?? {})).sort();

describe('the compose deployment', () => {
  let services: Record<string, Service>;
  beforeAll(async () => {
    // What a user runs first: certificates, passwords and the lock service URL, none of them shipped.
    await run('bash', ['scripts/compose-secrets.sh'], { cwd: ROOT });
    const { stdout } = await run('docker-compose', ['-f', 'docker-compose.yml', 'config'], { cwd: ROOT });
    services = (parse(stdout) as { services: Record<string, Service> }).services;
  });

  // A container's environment as the host sees it: its mounted certificates and secrets at their paths here.
  const onHost = (env: Record<string, string>): Record<string, string> =>
    Object.fromEntries(
      Object.entries(env).map(([name, value]) => [
        name,
        value
          .replaceAll('/etc/lockwarden/certs', path.join(ROOT, 'compose/certs'))
          .replace(/^\/run\/secrets\/(.+)$/, (_, secret: string) =>
            path.join(ROOT, 'compose/secrets', secret),
          ),
      ]),
    );
  const workerConfig = (env: Record<string, string>) => loadWorkerConfig(withSecretFiles(onHost(env)));

  it('runs etcd as a three-member Raft cluster that every worker reaches through all members', () => {
    const members = ['etcd-1', 'etcd-2', 'etcd-3'];
    for (const name of members) {
      const env = services[name]!.environment!;
      expect(env.ETCD_NAME).toBe(name);
      expect(env.ETCD_INITIAL_CLUSTER!.split(',').sort()).toEqual(
        members.map((m) => `${m}=http://${m}:2380`),
      );
      expect(env.ETCD_INITIAL_ADVERTISE_PEER_URLS).toBe(`http://${name}:2380`);
    }
    const urls = workers().map(([, w]) => workerConfig(w.environment!).lockServiceUrl);
    for (const url of urls)
      expect(url).toMatch(
        /^etcds:\/\/lockwarden:[0-9a-f]{48}@etcd-1:2379,etcd-2:2379,etcd-3:2379\?sslrootcert=/,
      );
  });

  it('runs etcd with client TLS, client certificates and RBAC: a role on lockwarden/ only', () => {
    for (const name of ['etcd-1', 'etcd-2', 'etcd-3']) {
      const env = services[name]!.environment!;
      expect(env.ETCD_LISTEN_CLIENT_URLS).toBe('https://0.0.0.0:2379');
      expect(env.ETCD_ADVERTISE_CLIENT_URLS).toBe(`https://${name}:2379`);
      expect(env.ETCD_CLIENT_CERT_AUTH).toBe('true');
      for (const file of [env.ETCD_CERT_FILE, env.ETCD_KEY_FILE, env.ETCD_TRUSTED_CA_FILE])
        expect(fs.existsSync(onHost({ file: file! }).file!)).toBe(true);
    }
    const setup = [services['etcd-setup']!.command].flat().join(' ');
    expect(setup).toContain('role grant-permission lockwarden --prefix=true readwrite lockwarden/');
    expect(setup).toContain('user grant-role lockwarden lockwarden');
    expect(setup).toMatch(/auth enable\s*$/);
    for (const [, worker] of workers())
      expect(worker.depends_on).toMatchObject({
        'etcd-setup': { condition: 'service_completed_successfully' },
      });
  });

  it('ships no password: each comes from a secret file or the environment, and none is a default', () => {
    const raw = fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    // A literal after a password's name, other than a secret's path or a variable that must be set.
    const literal = /^\s*[A-Z_]*(PASSWORD|PWD)[A-Z_]*:\s*(?!\/run\/secrets\/|\$\{[A-Z_]+:\?)\S+/gm;
    expect(raw.match(literal)).toBeNull();
    expect(raw).not.toMatch(/redis:\/\/|postgres:\/\/\w+:\w+@/);
    for (const [name, service] of Object.entries(services))
      for (const [variable, value] of Object.entries(service.environment ?? {}))
        if (/PASSWORD|PWD/.test(variable) && !variable.endsWith('_FILE'))
          expect({ name, variable, value }).not.toMatchObject({
            value: expect.stringMatching(/^(temporal|lockwarden|postgres|password)?$/),
          });
    expect(services['lock-redis']!.command).toEqual(
      expect.arrayContaining(['--aclfile', '--tls-port', '--port']),
    );
    // The default user has a password nobody is given (not "off": see docs/lock-services.md, Redis's AOF).
    const acl = fs.readFileSync(path.join(ROOT, 'compose/secrets/redis-users.acl'), 'utf8');
    expect(acl).toMatch(/^user default on >[0-9a-f]{48} /m);
    expect(acl).not.toMatch(/nopass/);
  });

  it("serves Temporal's frontend over TLS, a client certificate required, and every client presents one", async () => {
    const frontend = services['temporal-frontend']!.environment!;
    const rendered = await renderTemporalConfig(onHost(frontend));
    expect(rendered).toMatchObject({
      global: {
        tls: {
          frontend: { server: { requireClientAuth: true, certFile: onHost(frontend).TEMPORAL_TLS_CERT } },
        },
      },
    });
    const clients = [...workers().map(([, w]) => w), services['model-worker']!];
    for (const client of clients) {
      const config = loadTemporalTarget({ env: onHost(client.environment!) });
      expect(config.summary).toMatchObject({
        tls: true,
        clientCertificate: true,
        address: 'temporal-frontend:7233',
      });
    }
    expect([services['temporal-setup-search-attributes']!.command].flat().join(' ')).toContain(
      '--tls-cert-path',
    );
    expect(services['temporal-ui']!.environment).toHaveProperty('TEMPORAL_TLS_CERT');
  });

  it('builds the image in stages on a supported Node LTS, shipping dist/ and production dependencies, as non-root', () => {
    const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    const node = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(dockerfile);
    // Even majors are LTS; 20 left support on 2026-04-30.
    expect(Number(node?.[1]) % 2 === 0 && Number(node?.[1]) >= 22).toBe(true);
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages.length).toBeGreaterThanOrEqual(3);
    for (const stage of stages) expect(stage).toMatch(/^\$\{NODE_IMAGE\}/);
    const final = stages.at(-1)!;
    expect(final).toMatch(/^USER node$/m);
    expect(final).not.toMatch(/apt-get|npm (ci|install)|COPY \. /);
    expect(final).toMatch(/COPY --from=install \/app\/node_modules/);
    expect(final).toMatch(/^CMD \["node", "node_modules\/lockwarden\/dist\/worker\/main\.js"\]$/m);
    expect(dockerfile).toMatch(/npm install --omit=dev/);
    // The drivers at the versions the suites test.
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    for (const driver of ['etcd3', 'pg', 'redis'])
      expect(dockerfile).toContain(`${driver}@${pkg.devDependencies[driver]}`);
    expect(JSON.stringify(services)).not.toContain('tsx');
  });

  it('runs two worker replicas on one task queue, each a valid worker configuration serving /metrics', () => {
    const replicas = workers();
    expect(replicas).toHaveLength(2);
    const configs = replicas.map(([, w]) => workerConfig(w.environment!));
    expect(new Set(configs.map((c) => c.taskQueue)).size).toBe(1);
    expect(configs.map((c) => c.metrics?.host)).toEqual(['0.0.0.0', '0.0.0.0']);
    // Each replica keeps its own escalation store on the shared volume.
    expect(new Set(configs.map((c) => c.escalationsFile)).size).toBe(2);
  });

  it('runs the model worker apart: no lock setting, no network a lock service is on, the key only there', () => {
    const model = services['model-worker']!;
    const config = loadModelWorkerConfig(onHost(model.environment!));
    const lockWorkers = workers().map(([, w]) => w);
    // Sessions send their decisions to the model worker's queue, and hold no model key themselves.
    for (const w of lockWorkers) {
      expect(w.environment!.LOCKWARDEN_MODEL_TASK_QUEUE).toBe(config.taskQueue);
      expect(decisionMode(workerConfig(w.environment!), !!w.environment!.ANTHROPIC_API_KEY)).toBe(
        'model-worker',
      );
    }
    expect(model.environment).toHaveProperty('ANTHROPIC_API_KEY');
    const lockServices = ['etcd-1', 'etcd-2', 'etcd-3', 'lock-redis', 'lock-postgres'];
    const lockNetworks = new Set(lockServices.flatMap((name) => networksOf(services[name]!)));
    expect(networksOf(model).filter((n) => lockNetworks.has(n))).toEqual([]);
    expect(networksOf(model)).toEqual(networksOf(services['temporal-frontend']!));
  });

  it('has Prometheus scrape every worker replica and the model worker on their metrics ports', () => {
    const mount = services.prometheus!.volumes!.find((v) =>
      v.endsWith(':/etc/prometheus/prometheus.yml:ro'),
    )!;
    const config = parse(fs.readFileSync(mount.split(':')[0]!, 'utf8')) as {
      scrape_configs: { static_configs: { targets: string[] }[] }[];
    };
    const targets = config.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets));
    const expected = [...workers(), ['model-worker', services['model-worker']!] as const].map(
      ([name, w]) => `${name}:${w.environment!.METRICS_PORT}`,
    );
    expect(targets.sort()).toEqual(expected.sort());
  });

  it('registers every search attribute the sessions upsert, and gives Temporal the dispatch settings', () => {
    const setup = [services['temporal-setup-search-attributes']!.command].flat().join(' ');
    const registered = fs
      .readFileSync(path.join(ROOT, 'scripts', 'search-attributes.txt'), 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.split('=')[0]!);
    expect(registered).toHaveLength(5);
    for (const name of registered) expect(setup).toContain(name);
    // The file each Temporal service is told to read is the one the dispatch settings are mounted at.
    for (const [, service] of temporalServices()) {
      const mount = service.volumes!.find((v) => v.includes('compose/temporal-dynamic-config.yaml'));
      expect(mount?.split(':')[1]).toBe(service.environment!.TEMPORAL_DYNAMIC_CONFIG);
    }
  });

  it("runs Temporal's services from the config files and at the addresses scripts/cluster.sh uses", () => {
    const script = fs.readFileSync(path.join(ROOT, 'scripts', 'cluster.sh'), 'utf8');
    const addressIn = (name: string) => new RegExp(`\\[${name}\\]=([0-9.]+)`).exec(script)?.[1];
    const seen = temporalServices().map(([name, service]) => {
      const hostName = name.replace(/^temporal-/, '');
      const entrypoint = [service.entrypoint].flat().join(' ');
      expect(entrypoint).toContain('--config /etc/lockwarden/temporal --env lockwarden');
      expect(service.volumes).toContain(`${ROOT}/compose/temporal:/etc/lockwarden/temporal:ro`);
      const ip = (service.networks as Record<string, { ipv4_address?: string }>).temporal?.ipv4_address;
      expect(service.environment!.TEMPORAL_BIND_IP).toBe(ip);
      expect(ip).toBe(addressIn(hostName));
      return [hostName.replace(/-\d$/, ''), [service.command].flat().join(' ')];
    });
    expect(seen.map(([host, command]) => `${host}: ${command}`).sort()).toEqual([
      'frontend: --service frontend',
      'history: --service history',
      'history: --service history',
      'matching: --service matching',
      'worker: --service worker',
    ]);
    expect(services['temporal-ui']!.volumes).toContain(
      `${ROOT}/compose/temporal-ui:/etc/lockwarden/temporal-ui:ro`,
    );
  });

  const workers = () => Object.entries(services).filter(([name]) => /^worker-\d+$/.test(name));
  const temporalServices = () =>
    Object.entries(services).filter(([name]) =>
      /^temporal-(frontend|history-\d|matching|worker)$/.test(name),
    );
});
