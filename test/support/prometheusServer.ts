// Debian's Prometheus, run by a test: scraping the targets it is given every second, with lockwarden's
// alert rules loaded, and answering PromQL queries over its HTTP API.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../devkit/freePort';
import { waitFor } from './waitFor';

const ALERT_RULES = path.join(__dirname, '..', '..', 'compose', 'prometheus', 'lockwarden-alerts.yml');

/** One answer of Prometheus's instant query API: the series it returned. */
export interface PromSeries {
  metric: Record<string, string>;
  value: [number, string];
}

/** A Prometheus of its own, scraping `targets` (job name → host:port list) every second. */
export class PrometheusServer {
  private process: ChildProcess | undefined;
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lockwarden-prometheus-'));
  private port = 0;

  constructor(private readonly targets: Record<string, string[]>) {}

  async start(): Promise<void> {
    this.port = await freePort();
    fs.copyFileSync(ALERT_RULES, path.join(this.dir, 'lockwarden-alerts.yml'));
    const config = {
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: [path.join(this.dir, 'lockwarden-alerts.yml')],
      scrape_configs: Object.entries(this.targets).map(([job, targets]) => ({
        job_name: job,
        static_configs: [{ targets }],
      })),
    };
    fs.writeFileSync(path.join(this.dir, 'prometheus.yml'), stringify(config));
    this.process = spawn(
      'prometheus',
      [
        `--config.file=${path.join(this.dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(this.dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${this.port}`,
        '--log.level=warn',
      ],
      { stdio: 'ignore' },
    );
    await waitFor('Prometheus answering', async () => (await fetch(`${this.url}/-/ready`)).ok, 30_000);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** An instant query's series (an error answer throws with Prometheus's words). */
  async query(expr: string): Promise<PromSeries[]> {
    const response = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await response.json()) as {
      status: string;
      error?: string;
      data?: { result: PromSeries[] };
    };
    if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
    return body.data!.result;
  }

  /** The loaded alerting rules, each with its health as Prometheus judged it. */
  async rules(): Promise<{ name: string; health: string }[]> {
    const response = await fetch(`${this.url}/api/v1/rules?type=alert`);
    const body = (await response.json()) as {
      data: { groups: { rules: { name: string; health: string }[] }[] };
    };
    return body.data.groups.flatMap((g) => g.rules);
  }

  async stop(): Promise<void> {
    const running = this.process;
    if (running && running.exitCode === null) {
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
