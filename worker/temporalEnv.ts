// How both worker roles reach Temporal and log: the variables they share. The connection itself
// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_PROFILE, TEMPORAL_TLS_*, TEMPORAL_API_KEY, ...) is
// read by temporal/connectionProfile.ts as Temporal's CLI reads it; the forms are checked here.
import { z } from 'zod';

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
};
