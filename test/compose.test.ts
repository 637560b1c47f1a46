import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { decisionMode, loadWorkerConfig } from '../worker/config';
import { loadModelWorkerConfig } from '../worker/modelWorkerConfig';

// docker-compose.yml as `docker-compose config` resolves it (Debian's docker-compose; no engine is
// needed to validate and resolve a file): what a user deploys to more than one machine.
const ROOT = path.join(__dirname, '..');
const run = promisify(execFile);

interface Service {
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
    const { stdout } = await run('docker-compose', ['-f', 'docker-compose.yml', 'config'], { cwd: ROOT });
    services = (parse(stdout) as { services: Record<string, Service> }).services;
  });

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
    const urls = workers().map(([, w]) => w.environment!.LOCK_SERVICE_URL);
    expect(urls).toEqual(urls.map(() => 'etcd://etcd-1:2379,etcd-2:2379,etcd-3:2379'));
  });

  it('runs two worker replicas on one task queue, each a valid worker configuration serving /metrics', () => {
    const replicas = workers();
    expect(replicas).toHaveLength(2);
    const configs = replicas.map(([, w]) => loadWorkerConfig(w.environment!));
    expect(new Set(configs.map((c) => c.taskQueue)).size).toBe(1);
    expect(configs.map((c) => c.metrics?.host)).toEqual(['0.0.0.0', '0.0.0.0']);
    // Each replica keeps its own escalation store on the shared volume.
    expect(new Set(configs.map((c) => c.escalationsFile)).size).toBe(2);
  });

  it('runs the model worker apart: no lock setting, no network a lock service is on, the key only there', () => {
    const model = services['model-worker']!;
    const config = loadModelWorkerConfig(model.environment!);
    const lockWorkers = workers().map(([, w]) => w);
    // Sessions send their decisions to the model worker's queue, and hold no model key themselves.
    for (const w of lockWorkers) {
      expect(w.environment!.LOCKWARDEN_MODEL_TASK_QUEUE).toBe(config.taskQueue);
      expect(decisionMode(loadWorkerConfig(w.environment!), !!w.environment!.ANTHROPIC_API_KEY)).toBe(
        'model-worker',
      );
    }
    expect(model.environment).toHaveProperty('ANTHROPIC_API_KEY');
    const lockServices = ['etcd-1', 'etcd-2', 'etcd-3', 'lock-redis', 'lock-postgres'];
    const lockNetworks = new Set(lockServices.flatMap((name) => networksOf(services[name]!)));
    expect(networksOf(model).filter((n) => lockNetworks.has(n))).toEqual([]);
    expect(networksOf(model)).toEqual(networksOf(services['temporal-frontend']!));
  });

  it('has Prometheus scrape every worker replica on its metrics port', () => {
    const mount = services.prometheus!.volumes!.find((v) =>
      v.endsWith(':/etc/prometheus/prometheus.yml:ro'),
    )!;
    const config = parse(fs.readFileSync(mount.split(':')[0]!, 'utf8')) as {
      scrape_configs: { static_configs: { targets: string[] }[] }[];
    };
    const targets = config.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets));
    const expected = workers().map(([name, w]) => `${name}:${w.environment!.METRICS_PORT}`);
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
