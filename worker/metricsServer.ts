import http from 'node:http';
import type { Registry } from 'prom-client';

/** Serves Prometheus metrics on GET /metrics (loopback by default), for the starvation monitor's counters. */
export function serveMetrics(registry: Registry, port: number, host = '127.0.0.1'): http.Server {
  return http
    .createServer((req, res) => {
      if (req.method !== 'GET' || req.url !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      registry.metrics().then(
        (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
        () => res.writeHead(500).end(),
      );
    })
    .listen(port, host);
}
