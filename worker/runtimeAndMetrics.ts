// The start of both worker roles' processes: the SDK's runtime, and `/metrics` when configured.
import type http from 'node:http';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { Registry } from 'prom-client';
import { InvalidConfigurationError } from '../policy/errors';
import { serveMetrics } from './metricsServer';
import type { MetricsEndpointConfig } from './temporalEnv';

/**
 * Installs the SDK's runtime (its log level from LOG_LEVEL; its Prometheus exporter on loopback at
 * the SDK port when metrics are on) and serves `/metrics` with `registry` and the SDK's text. Either
 * port taken is an InvalidConfiguration naming its variable, not a stack trace.
 */
export async function startRuntimeAndMetrics(
  logLevel: string,
  metrics: MetricsEndpointConfig | null,
  registry: Registry,
): Promise<http.Server | null> {
  const sdkAddress = metrics ? `127.0.0.1:${metrics.sdkPort}` : null;
  try {
    Runtime.install({
      logger: new DefaultLogger(logLevel === 'silent' ? 'ERROR' : 'WARN'),
      ...(sdkAddress ? { telemetryOptions: { metrics: { prometheus: { bindAddress: sdkAddress } } } } : {}),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (!sdkAddress || !/metrics exporter|address/i.test(message)) throw error;
    throw new InvalidConfigurationError([
      `LOCKWARDEN_SDK_METRICS_PORT: the SDK's exporter cannot listen on ${sdkAddress} (${message}); ` +
        'it is METRICS_PORT + 1 unless set',
    ]);
  }
  if (!metrics) return null;
  return serveMetrics(registry, { ...metrics, sdkMetricsUrl: `http://${sdkAddress}/metrics` });
}
