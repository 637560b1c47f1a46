import type { IncidentEvent } from '../../policy/postmortem/incidentEvents';
import { releaseGatesSchema } from '../../policy/postmortem/releaseGates';

/** The start of the constructed incidents: 02:00 UTC on the day of the billing export. */
export const INCIDENT_T0 = Date.UTC(2026, 11, 2, 2, 0, 0);
const at = (ms: number) => ({ at: INCIDENT_T0 + ms, clock: 'service' as const });

/** Release gates as a reviewer would write them. */
export const GATES = releaseGatesSchema.parse({
  canaryPercent: [1, 10, 50, 100],
  soakMinutes: 30,
  abort: { leaseLostRate: 0.001, staleWriteRefusalsPerHour: 0, p99WaitMs: 2_000 },
  rollback: { deployment: 'lockwarden', previousBuildId: '0.1.0' },
});

/** The billing-export incident as events: A paused past its lease, B took the next token. */
export const PAUSED_PAST_LEASE: IncidentEvent[] = [
  { ...at(0), session: 'replica-a', kind: 'granted', token: '7', leaseUntil: INCIDENT_T0 + 2_000 },
  { ...at(100), session: 'replica-b', kind: 'denied', holder: 'replica-a' },
  { ...at(600), session: 'replica-b', kind: 'denied', holder: 'replica-a' },
  { ...at(2_100), session: 'replica-b', kind: 'granted', token: '8', leaseUntil: INCIDENT_T0 + 32_100 },
  { ...at(2_200), session: 'replica-b', kind: 'write-accepted', token: '8', resource: 'invoices' },
  {
    ...at(5_000),
    session: 'replica-a',
    kind: 'keep-alive-refused',
    token: '7',
    reason: 'the service now holds token 8',
  },
  {
    ...at(5_001),
    session: 'replica-a',
    kind: 'ended',
    status: 'lease-lost',
    reason: 'the service now holds token 8',
  },
  {
    ...at(5_050),
    session: 'replica-a',
    kind: 'write-refused',
    token: '7',
    newestToken: '8',
    resource: 'invoices',
  },
];
