// How both worker roles reach Temporal and log: the variables they share. The connection itself
// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_PROFILE, TEMPORAL_TLS_*, TEMPORAL_API_KEY, ...) is
// read by temporal/connectionProfile.ts as Temporal's CLI reads it; the forms are checked here.
import { z } from 'zod';
import { InvalidConfigurationError } from '../policy/errors';

/** The variables both worker roles read to reach Temporal and to log. */
export const temporalEnvShape = {
  TEMPORAL_ADDRESS: z
    .string()
    .regex(/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/, 'must be host:port')
    .optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).optional(),
  TEMPORAL_PROFILE: z.string().min(1).optional(),
  TEMPORAL_CONFIG_FILE: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'silent']).default('info'),
  // Where `/metrics` is served, lockwarden's and the SDK's; absent, no metrics endpoint.
  METRICS_PORT: z.coerce.number().int().min(1).max(65_535).optional(),
  METRICS_HOST: z.union([z.ipv4(), z.ipv6(), z.literal('localhost')]).default('127.0.0.1'),
  LOCKWARDEN_SDK_METRICS_PORT: z.coerce.number().int().min(1).max(65_535).optional(),
};

/** Where a worker serves `/metrics`: its own port, and the SDK exporter's on loopback beside it. */
export interface MetricsEndpointConfig {
  port: number;
  host: string;
  sdkPort: number;
}

/** The metrics endpoint the shared variables configure, or null when METRICS_PORT is unset. */
export function metricsEndpointOf(c: {
  METRICS_PORT?: number;
  METRICS_HOST: string;
  LOCKWARDEN_SDK_METRICS_PORT?: number;
}): MetricsEndpointConfig | null {
  if (!c.METRICS_PORT) return null;
  // The SDK's exporter listens on loopback beside it; /metrics serves its text too.
  const sdkPort = c.LOCKWARDEN_SDK_METRICS_PORT ?? c.METRICS_PORT + 1;
  if (sdkPort > 65_535)
    throw new InvalidConfigurationError([
      `METRICS_PORT: ${c.METRICS_PORT} leaves no port for the SDK's exporter (METRICS_PORT + 1); ` +
        'set LOCKWARDEN_SDK_METRICS_PORT (1 to 65535), or a METRICS_PORT below 65535',
    ]);
  if (sdkPort === c.METRICS_PORT)
    throw new InvalidConfigurationError([
      `LOCKWARDEN_SDK_METRICS_PORT: ${sdkPort} is METRICS_PORT; the SDK's exporter needs a port of its own`,
    ]);
  return { port: c.METRICS_PORT, host: c.METRICS_HOST, sdkPort };
}
