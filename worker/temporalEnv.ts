// How both worker roles reach Temporal and log: the variables they share.
import { z } from 'zod';
import { DEFAULT_NAMESPACE, DEFAULT_TEMPORAL_ADDRESS } from '../policy/constants';

/** The variables both worker roles read to reach Temporal and to log. */
export const temporalEnvShape = {
  TEMPORAL_ADDRESS: z
    .string()
    .regex(/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/, 'must be host:port')
    .default(DEFAULT_TEMPORAL_ADDRESS),
  TEMPORAL_NAMESPACE: z.string().min(1).default(DEFAULT_NAMESPACE),
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'silent']).default('info'),
};
