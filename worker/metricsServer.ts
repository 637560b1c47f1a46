// The worker's `/metrics` endpoint.
import http from 'node:http';
import type { Registry } from 'prom-client';
import { InvalidConfigurationError } from '../policy/errors';

/** Where the worker serves `/metrics`, and which other exporter's text it appends. */
interface MetricsEndpoint {
  port: number;
  host: string;
  /**
   * The Temporal SDK runtime's own Prometheus exporter (worker task slots, polls, workflow and
   * activity counts and latencies), read on each scrape and served with lockwarden's metrics, so one
   * scrape target has both.
   */
  sdkMetricsUrl?: string;
}

/**
 * Serves Prometheus metrics on GET /metrics: lockwarden's registry, then the SDK's exporter. Resolves
 * once it listens; a port in use or not allowed is an InvalidConfiguration naming METRICS_PORT.
 */
export async function serveMetrics(registry: Registry, endpoint: MetricsEndpoint): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    Promise.all([registry.metrics(), readSdkMetrics(endpoint.sdkMetricsUrl)]).then(
      ([own, sdk]) => res.writeHead(200, { 'content-type': registry.contentType }).end(own + sdk),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new InvalidConfigurationError([
          `METRICS_PORT: cannot serve /metrics on ${endpoint.host}:${endpoint.port} (${listenProblem(error)})`,
        ]),
      ),
    );
    server.listen(endpoint.port, endpoint.host, () => resolve());
  });
  return server;
}

/** Why a listen failed, in a few words: the port is taken, not allowed, or the address is not this host's. */
export function listenProblem(error: NodeJS.ErrnoException): string {
  if (error.code === 'EADDRINUSE') return 'the port is in use';
  if (error.code === 'EACCES') return 'not allowed to listen on that port';
  if (error.code === 'EADDRNOTAVAIL') return 'no such address on this host';
  return error.code ?? error.message;
}

// The SDK exporter's text, or a comment saying it could not be read (lockwarden's metrics still serve).
async function readSdkMetrics(url: string | undefined): Promise<string> {
  if (!url) return '';
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) return `# temporal sdk metrics: HTTP ${response.status}\n`;
    return '\n' + (await response.text());
  } catch (error) {
    return `# temporal sdk metrics unavailable: ${error instanceof Error ? error.message : String(error)}\n`;
  }
}
