// The fault campaign's checker: pure, run on what the campaign recorded. It holds the fenced
// resources' write logs, the lock service's journaled grants, renewals and releases, the nemesis's
// faults and the sessions' outcomes to what lockwarden claims, and counts each way they fall short.

import type { LeaseKeyEvent } from '../locks/etcdLeaseHistory';
import type { FencedWriteAttempt } from '../locks/fencedResource';
import { LOCK_CALL_TIMEOUT_MS } from '../policy/decisions/leaseKeeping';
import type { JournalEntry } from './journal';
import type { CampaignRecord } from './resources';

/** The faults of a campaign on the cluster's etcd (scripts/cluster.sh). */
const ETCD_FAULT_KINDS = ['etcd-leader-kill', 'etcd-partition', 'etcd-slow'] as const;
/** The faults of a campaign on the cluster's ZooKeeper ensemble. */
const ZOOKEEPER_FAULT_KINDS = ['zk-leader-kill', 'zk-partition'] as const;
/** The faults every campaign on the cluster meets: on Temporal's services and the lock workers' hosts. */
const TEMPORAL_CLUSTER_FAULT_KINDS = ['history-kill', 'frontend-restart', 'host-cut'] as const;
/** The faults of a campaign on the cluster: its lock service's, Temporal's services', its hosts'. */
export const CLUSTER_FAULT_KINDS = [
  ...ETCD_FAULT_KINDS,
  ...ZOOKEEPER_FAULT_KINDS,
  ...TEMPORAL_CLUSTER_FAULT_KINDS,
] as const;
export type ClusterFaultKind = (typeof CLUSTER_FAULT_KINDS)[number];

/** The cluster faults of a campaign whose lock service is the cluster's etcd or its ZooKeeper. */
export function clusterFaultKinds(lockService: 'etcd' | 'zookeeper'): ClusterFaultKind[] {
  return [
    ...(lockService === 'etcd' ? ETCD_FAULT_KINDS : ZOOKEEPER_FAULT_KINDS),
    ...TEMPORAL_CLUSTER_FAULT_KINDS,
  ];
}

/**
 * The kinds of fault the nemesis injects: on processes (pause, kill), on servers (crash and restart)
 * and on the links the campaign owns between the workers and the lock server or Temporal (cut both
 * ways, slowed, connections dropped).
 */
export const FAULT_KIND_NAMES = [
  'pause',
  'kill',
  'lock-server-restart',
  'temporal-restart',
  'lock-partition',
  'lock-latency',
  'lock-drop',
  'temporal-partition',
  'temporal-latency',
  'temporal-drop',
  ...CLUSTER_FAULT_KINDS,
] as const;
export type FaultKind = (typeof FAULT_KIND_NAMES)[number];

/** A fault the nemesis injected, at the host's clock; one that lasts says until when. */
export interface Fault {
  kind: FaultKind;
  at: number;
  detail: string;
  endsAt?: number;
}

/** How one campaign session (a `campaignWrite` workflow) ended, as its caller saw it. */
export type SessionOutcome =
  | 'wrote'
  | 'lease-lost'
  | 'not-acquired'
  | 'write-refused'
  /** The writer stopped: it could not prove its lease at the service before a write. */
  | 'stopped-unproven'
  | 'failed-otherwise'
  | 'lost';

/** Everything the checker reads. */
export interface CampaignRecordings {
  /** Each key's fenced-write attempts, in the resource's commit order. */
  writes: Record<string, FencedWriteAttempt[]>;
  journal: JournalEntry[];
  /** Journal lines that could not be read (`file:line`): reported, since a grant may hide there. */
  unreadableJournalLines: string[];
  /** The application's own rows (campaign_records), per key: what the fenced writes left behind. */
  records: Record<string, Omit<CampaignRecord, 'key'>[]>;
  faults: Fault[];
  /** Outcome of every campaign session the driver started, by workflow id. */
  sessions: Record<string, SessionOutcome>;
  /** Runs per lock-session workflow id (continued runs not counted), from Temporal's visibility. */
  runsPerSessionId: Record<string, number>;
  /**
   * The lock service's own order of lease changes, where its times are not its own (etcd reports
   * the worker's estimates): leases are then judged by that order, exactly, instead of by time.
   * Null for the services whose times come from their own clock.
   */
  serviceOrder: LeaseKeyEvent[] | null;
  /** Worker processes that exited without being told to (a crash is a bug, whatever the faults). */
  workerCrashes: string[];
}

export const VIOLATION_KINDS = [
  'stale-write-accepted',
  'refusal-without-newer-token',
  'overlapping-leases',
  'grant-unknown-to-service',
  'late-renewal-accepted',
  'renewal-by-non-holder',
  'write-without-journaled-grant',
  'record-of-another-holder',
  'records-differ-from-fenced-writes',
  'token-not-increasing',
  'token-reused',
  'token-fell-after-restart',
  'session-without-outcome',
  'duplicate-session-run',
  'worker-crashed',
  'write-after-deadline',
] as const;
export type ViolationKind = (typeof VIOLATION_KINDS)[number];

export interface CampaignReport {
  writes: {
    attempted: number;
    accepted: number;
    refusedAsStale: number;
    repeatsWithSameToken: number;
    lateButFenced: number;
    /** Accepted after their lease's deadline on the service's clock, by a holder a pause had stopped. */
    afterDeadlinePaused: number;
    /** Accepted after their lease's deadline by a writer that trusts fencing alone (it never proves). */
    afterDeadlineFencingOnly: number;
  };
  leases: {
    granted: number;
    renewals: number;
    keys: number;
    grantsNotJournaled: number;
    restartsCrossed: number;
    /** Renewals accepted after the journaled deadline, within reach of a renewal whose answer was lost. */
    renewalsAfterUnanswered: number;
    /** Grants made before the previous lease's journaled end, after a release whose answer was lost. */
    grantsAfterUnansweredRelease: number;
  };
  journal: { entries: number; unreadableLines: number };
  records: number;
  faults: Record<FaultKind, number>;
  sessions: Record<SessionOutcome, number>;
  violations: Record<ViolationKind, number>;
  /** A few examples of each violation, for a person to start from. */
  examples: Partial<Record<ViolationKind, string[]>>;
}

interface Lease {
  key: string;
  holder: string;
  token: bigint;
  grantedAt: number;
  /** The latest deadline the service gave it (grant or renewal). */
  leaseUntil: number;
  /** The deadline of the grant itself, before any renewal. */
  grantedUntil: number;
  renewals: { at: number; leaseUntil: number }[];
  /** When renewals were sent whose answer no journal holds: the service may have applied them. */
  unanswered: number[];
  /** When releases were sent whose answer no journal holds: the lease may have ended then or later. */
  unansweredReleases: number[];
  releasedAt: number | null;
}

export function checkCampaign(r: CampaignRecordings): CampaignReport {
  const violations = Object.fromEntries(VIOLATION_KINDS.map((k) => [k, 0])) as Record<ViolationKind, number>;
  const examples: CampaignReport['examples'] = {};
  const flag = (kind: ViolationKind, example: string) => {
    violations[kind]++;
    const list = (examples[kind] ??= []);
    if (list.length < 5) list.push(example);
  };

  const leases = leasesOf(r.journal, flag);
  const writes = checkWrites(r.writes, leases, flag);
  // etcd's deadlines are the worker's estimates, in whole seconds: its leases are judged by order.
  if (!r.serviceOrder) Object.assign(writes, checkDeadlines(r.writes, leases, r.faults, flag));
  const { restartsCrossed, renewalsAfterUnanswered, grantsAfterUnansweredRelease } = checkLeases(
    leases,
    r,
    flag,
  );
  if (r.serviceOrder) checkServiceOrder(r.serviceOrder, leases, flag);

  const journaledTokens = new Set([...leases.values()].flat().map((l) => `${l.key}#${l.token}`));
  const writtenTokens = new Set(
    Object.entries(r.writes).flatMap(([key, attempts]) => attempts.map((a) => `${key}#${BigInt(a.token)}`)),
  );
  const notJournaled = [...writtenTokens].filter((t) => !journaledTokens.has(t));
  for (const token of notJournaled)
    flag('write-without-journaled-grant', `${token}: written, but no worker journaled its grant`);
  checkRecords(r, leases, flag);

  const sessions: Record<SessionOutcome, number> = {
    wrote: 0,
    'write-refused': 0,
    'lease-lost': 0,
    'not-acquired': 0,
    'stopped-unproven': 0,
    'failed-otherwise': 0,
    lost: 0,
  };
  for (const [id, outcome] of Object.entries(r.sessions)) {
    sessions[outcome]++;
    if (outcome === 'lost' || outcome === 'failed-otherwise')
      flag('session-without-outcome', `${id}: ${outcome}`);
  }
  for (const [id, runs] of Object.entries(r.runsPerSessionId))
    if (runs !== 1) flag('duplicate-session-run', `${id}: ${runs} runs`);
  for (const crash of r.workerCrashes) flag('worker-crashed', crash);

  const faults = Object.fromEntries(FAULT_KIND_NAMES.map((k) => [k, 0])) as Record<FaultKind, number>;
  for (const fault of r.faults) faults[fault.kind]++;

  return {
    writes,
    leases: {
      granted: [...leases.values()].reduce((n, list) => n + list.length, 0),
      keys: leases.size,
      renewals: [...leases.values()].flat().reduce((n, l) => n + l.renewals.length, 0),
      grantsNotJournaled: notJournaled.length,
      restartsCrossed,
      renewalsAfterUnanswered,
      grantsAfterUnansweredRelease,
    },
    journal: { entries: r.journal.length, unreadableLines: r.unreadableJournalLines.length },
    records: Object.values(r.records).reduce((n, list) => n + list.length, 0),
    faults,
    sessions,
    violations,
    examples,
  };
}

// Each key's leases in token order, one per token; a token granted to two holders is a violation.
function leasesOf(
  journal: JournalEntry[],
  flag: (k: ViolationKind, e: string) => void,
): Map<string, Lease[]> {
  const byToken = new Map<string, Lease>();
  // Grants first: the workers' journals are read one file after another, so a release journaled by
  // one worker may come before the grant another journaled.
  const ordered = [
    ...journal.filter((e) => e.op === 'grant'),
    ...journal.filter((e) => e.op === 'renew' || e.op === 'release'),
  ];
  const answered = new Set(
    journal.flatMap((e) =>
      (e.op === 'renew' || e.op === 'renew-refused' || e.op === 'release' || e.op === 'release-refused') &&
      e.id
        ? [e.id]
        : [],
    ),
  );
  const unanswered = journal.flatMap((e) =>
    (e.op === 'renew-sent' || e.op === 'release-sent') && !answered.has(e.id) ? [e] : [],
  );
  for (const entry of ordered) {
    const id = `${entry.key}#${entry.token}`;
    const known = byToken.get(id);
    if (known && known.holder !== entry.holder) {
      if (entry.op === 'grant')
        flag(
          'token-reused',
          `${entry.key}: token ${entry.token} held by ${known.holder} and ${entry.holder}`,
        );
      else
        flag(
          `renewal-by-non-holder`,
          `${entry.key}: token ${entry.token} of ${known.holder}: ${entry.op} by ${entry.holder} accepted`,
        );
      continue;
    }
    if (entry.op === 'grant') {
      if (!known)
        byToken.set(id, {
          key: entry.key,
          holder: entry.holder,
          token: BigInt(entry.token),
          grantedAt: entry.grantedAt,
          leaseUntil: entry.leaseUntil,
          grantedUntil: entry.leaseUntil,
          renewals: [],
          unanswered: [],
          unansweredReleases: [],
          releasedAt: null,
        });
      else known.leaseUntil = Math.max(known.leaseUntil, entry.leaseUntil);
    } else if (known && entry.op === 'renew') {
      known.renewals.push({ at: entry.at, leaseUntil: entry.leaseUntil });
      known.leaseUntil = Math.max(known.leaseUntil, entry.leaseUntil);
    } else if (known && entry.op === 'release') known.releasedAt = entry.at;
  }
  for (const sent of unanswered) {
    const lease = byToken.get(`${sent.key}#${sent.token}`);
    (sent.op === 'renew-sent' ? lease?.unanswered : lease?.unansweredReleases)?.push(sent.at);
  }
  const byKey = new Map<string, Lease[]>();
  for (const lease of byToken.values()) byKey.set(lease.key, [...(byKey.get(lease.key) ?? []), lease]);
  for (const list of byKey.values()) list.sort((a, b) => (a.token < b.token ? -1 : 1));
  return byKey;
}

// Tokens keep rising across every lock-server restart; where the service's times are its own, tokens
// also rise with grant time and no lease starts before the previous one ended.
function checkLeases(
  byKey: Map<string, Lease[]>,
  r: CampaignRecordings,
  flag: (k: ViolationKind, e: string) => void,
): { restartsCrossed: number } & LostAnswers {
  let restartsCrossed = 0;
  const lost: LostAnswers = { renewalsAfterUnanswered: 0, grantsAfterUnansweredRelease: 0 };
  const restarts = r.faults
    .filter((f) => ['lock-server-restart', 'etcd-leader-kill', 'zk-leader-kill'].includes(f.kind))
    .map((f) => f.at);
  for (const [key, leases] of byKey) {
    if (!r.serviceOrder) {
      const excused = checkLeaseTimes(key, leases, flag);
      lost.renewalsAfterUnanswered += excused.renewalsAfterUnanswered;
      lost.grantsAfterUnansweredRelease += excused.grantsAfterUnansweredRelease;
    }
    for (const at of restarts) {
      const before = leases.filter((l) => l.grantedAt < at);
      const after = leases.filter((l) => l.grantedAt >= at);
      if (!before.length || !after.length) continue;
      restartsCrossed++;
      const newestBefore = before.reduce((m, l) => (l.token > m ? l.token : m), 0n);
      const oldestAfter = after.reduce((m, l) => (l.token < m ? l.token : m), after[0]!.token);
      if (oldestAfter <= newestBefore)
        flag(
          'token-fell-after-restart',
          `${key}: token ${oldestAfter} granted after a restart that followed token ${newestBefore}`,
        );
    }
  }
  return { restartsCrossed, ...lost };
}

// One key's leases (in token order) on the service's clock: tokens rise with grant time, no renewal
// is accepted after the deadline it would extend, and in the order the service granted them each
// lease starts after the one before it ended. A renewal whose answer was lost may have been applied:
// sent by the deadline, it may have landed as late as the deadline (or its call's bound) and moved
// the deadline a lease's length on; a renewal accepted within that reach is counted, not flagged.
function checkLeaseTimes(
  key: string,
  leases: Lease[],
  flag: (k: ViolationKind, e: string) => void,
): LostAnswers {
  const lost: LostAnswers = { renewalsAfterUnanswered: 0, grantsAfterUnansweredRelease: 0 };
  for (const lease of leases) {
    const ttl = lease.grantedUntil - lease.grantedAt;
    let deadline = lease.grantedUntil;
    for (const renewal of [...lease.renewals].sort((a, b) => a.at - b.at)) {
      if (renewal.at > deadline) {
        const reach = lease.unanswered
          .filter((sentAt) => sentAt <= deadline)
          .map((sentAt) => Math.min(deadline, sentAt + LOCK_CALL_TIMEOUT_MS) + ttl);
        if (reach.some((until) => renewal.at <= until)) lost.renewalsAfterUnanswered++;
        else
          flag(
            'late-renewal-accepted',
            `${key}: token ${lease.token} renewed at ${renewal.at}, ${renewal.at - deadline} ms after its deadline`,
          );
      }
      deadline = Math.max(deadline, renewal.leaseUntil);
    }
  }
  for (let i = 1; i < leases.length; i++) {
    const [previous, next] = [leases[i - 1]!, leases[i]!];
    if (next.grantedAt < previous.grantedAt)
      flag('token-not-increasing', `${key}: token ${next.token} granted before token ${previous.token}`);
  }
  const byTime = [...leases].sort((a, b) => a.grantedAt - b.grantedAt);
  for (let i = 1; i < byTime.length; i++) {
    const [previous, next] = [byTime[i - 1]!, byTime[i]!];
    const previousEnd = Math.min(previous.releasedAt ?? Number.POSITIVE_INFINITY, previous.leaseUntil);
    // A release sent before the next grant, whose answer was lost, may have ended the lease in time.
    if (
      next.grantedAt < previousEnd &&
      previous.unansweredReleases.some((sentAt) => sentAt <= next.grantedAt)
    )
      lost.grantsAfterUnansweredRelease++;
    else if (next.grantedAt < previousEnd)
      flag(
        'overlapping-leases',
        `${key}: token ${next.token} granted at ${next.grantedAt}, ${previousEnd - next.grantedAt} ms before token ${previous.token} ended`,
      );
  }
  return lost;
}

/** What the checker excused because an answer was lost: counted in the report, never flagged. */
interface LostAnswers {
  /** Renewals accepted after the journaled deadline, within reach of a renewal whose answer was lost. */
  renewalsAfterUnanswered: number;
  /** Grants made before the previous lease's journaled end, after a release whose answer was lost. */
  grantsAfterUnansweredRelease: number;
}

// The same claims judged exactly, by the service's own order of changes (etcd's revisions): per key a
// lease is written only after the one before it was deleted, a live lease is never written over by
// another holder, and every grant a worker journaled is a write the service made, to that holder,
// at the token's revision. Tokens are revisions, so they rise in service order by construction.
function checkServiceOrder(
  history: LeaseKeyEvent[],
  byKey: Map<string, Lease[]>,
  flag: (k: ViolationKind, e: string) => void,
): void {
  const created = new Map<string, string>(); // key#token -> holder
  const live = new Map<string, { token: string; holder: string }>();
  const ordered = [...history].sort((a, b) => (BigInt(a.revision) < BigInt(b.revision) ? -1 : 1));
  for (const event of ordered) {
    const current = live.get(event.key);
    if (event.op === 'delete') {
      live.delete(event.key);
      continue;
    }
    if (event.op === 'create' && current)
      flag(
        'overlapping-leases',
        `${event.key}: ${event.holder} written at revision ${event.revision} while token ${current.token} of ${current.holder} was live`,
      );
    if (event.op === 'overwrite' && current?.holder !== event.holder)
      flag(
        'overlapping-leases',
        `${event.key}: ${event.holder} written over ${current ? `token ${current.token} of ${current.holder}` : 'no lease'} at revision ${event.revision}`,
      );
    if (event.op === 'create') {
      created.set(`${event.key}#${event.revision}`, event.holder!);
      live.set(event.key, { token: event.revision, holder: event.holder! });
    }
  }
  for (const [key, leases] of byKey)
    for (const lease of leases) {
      const holder = created.get(`${key}#${lease.token}`);
      if (holder !== lease.holder)
        flag(
          'grant-unknown-to-service',
          `${key}: token ${lease.token} journaled for ${lease.holder}, ${holder ? `written for ${holder}` : 'never written'} in the service's history`,
        );
    }
}

// The application's rows hold the fenced-write log to account: each row names the holder of the lease
// its token belongs to, and each key's rows under a token number exactly the
// records its accepted writes carried (a refused write leaves none).
function checkRecords(
  r: CampaignRecordings,
  leases: Map<string, Lease[]>,
  flag: (k: ViolationKind, e: string) => void,
): void {
  for (const [key, rows] of Object.entries(r.records)) {
    const holders = new Map((leases.get(key) ?? []).map((l) => [l.token, l.holder]));
    const rowsPerToken = new Map<bigint, number>();
    for (const row of rows) {
      const token = BigInt(row.token);
      rowsPerToken.set(token, (rowsPerToken.get(token) ?? 0) + 1);
      // A row under a token nobody journaled is already a write-without-journaled-grant.
      const holder = holders.get(token);
      if (holder !== undefined && holder !== row.holder)
        flag(
          'record-of-another-holder',
          `${key}: record ${row.seq} of ${row.holder} under token ${token}, which is ${holder}'s`,
        );
    }
    const acceptedPerToken = new Map<bigint, number>();
    for (const attempt of r.writes[key] ?? [])
      if (attempt.accepted) {
        const token = BigInt(attempt.token);
        acceptedPerToken.set(token, (acceptedPerToken.get(token) ?? 0) + 1);
      }
    for (const token of new Set([...rowsPerToken.keys(), ...acceptedPerToken.keys()])) {
      const [stored, accepted] = [rowsPerToken.get(token) ?? 0, acceptedPerToken.get(token) ?? 0];
      if (stored !== accepted)
        flag(
          'records-differ-from-fenced-writes',
          `${key}: token ${token} has ${stored} record(s) but ${accepted} accepted write(s)`,
        );
    }
  }
}

// Per key, in commit order: an accepted token never below one accepted before it; a refusal names a
// newer token. An accepted write whose token had already been superseded by a newer grant (which had
// not written yet) is late but fenced: allowed, and counted.
/**
 * No lease is used after its deadline on the service's clock by a live holder that proves its lease
 * before each write: a writer that cannot prove it (the service out of reach, the deadline too near)
 * stops. An accepted write after the deadline its lease had then (grant or latest renewal) is counted
 * when a pause stopped the whole worker across that deadline (no process can act while stopped:
 * fencing is what protects then), and is a violation otherwise. Writers that trust fencing alone are
 * held to fencing only (`stale-write-accepted`); their writes after a deadline are counted.
 */
function checkDeadlines(
  writes: Record<string, FencedWriteAttempt[]>,
  leases: Map<string, Lease[]>,
  faults: Fault[],
  flag: (k: ViolationKind, e: string) => void,
): { afterDeadlinePaused: number; afterDeadlineFencingOnly: number } {
  const pauses = faults.filter((f) => f.kind === 'pause');
  const counts = { afterDeadlinePaused: 0, afterDeadlineFencingOnly: 0 };
  for (const [key, attempts] of Object.entries(writes)) {
    const byToken = new Map((leases.get(key) ?? []).map((l) => [l.token, l]));
    for (const attempt of attempts) {
      const lease = byToken.get(BigInt(attempt.token));
      if (!attempt.accepted || !lease) continue;
      const deadline = [
        lease.grantedUntil,
        ...lease.renewals.filter((r) => r.at <= attempt.at).map((r) => r.leaseUntil),
      ].reduce((a, b) => Math.max(a, b));
      if (attempt.at <= deadline + DEADLINE_SLACK_MS) continue;
      if (trustsFencingAlone(lease.holder)) counts.afterDeadlineFencingOnly++;
      else if (pauses.some((p) => p.at <= deadline && (p.endsAt ?? p.at) >= deadline - PROOF_MARGIN_MS))
        counts.afterDeadlinePaused++;
      else
        flag(
          'write-after-deadline',
          `${key}: token ${attempt.token} wrote ${attempt.at - deadline} ms after its deadline, no pause across it`,
        );
    }
  }
  return counts;
}

/**
 * The campaign's writers, by name: half prove their lease at the service before each write (`p…`),
 * half trust the resource's fencing alone (`f…`), so that both protections are exercised.
 */
export const campaignWriter = (n: number) => ({ holder: `${n % 2 ? 'f' : 'p'}${n}`, proves: n % 2 === 0 });
export const trustsFencingAlone = (holder: string) => holder.startsWith('f');

/** How near its deadline a campaign writer still writes (campaignWorker.ts): it stops with less left. */
export const PROOF_MARGIN_MS = 1_000;
/** The writes' and the leases' clocks are two servers' on one host: a few ms apart. */
const DEADLINE_SLACK_MS = 50;

function checkWrites(
  writes: Record<string, FencedWriteAttempt[]>,
  leases: Map<string, Lease[]>,
  flag: (k: ViolationKind, e: string) => void,
): CampaignReport['writes'] {
  const figures = {
    attempted: 0,
    accepted: 0,
    refusedAsStale: 0,
    repeatsWithSameToken: 0,
    lateButFenced: 0,
    afterDeadlinePaused: 0,
    afterDeadlineFencingOnly: 0,
  };
  for (const [key, attempts] of Object.entries(writes)) {
    let newest: bigint | null = null;
    const grants = leases.get(key) ?? [];
    for (const attempt of attempts) {
      figures.attempted++;
      const token = BigInt(attempt.token);
      if (!attempt.accepted) {
        figures.refusedAsStale++;
        if (!(BigInt(attempt.newestToken) > token))
          flag('refusal-without-newer-token', `${key}: token ${token} refused naming ${attempt.newestToken}`);
        continue;
      }
      figures.accepted++;
      if (newest !== null && token < newest)
        flag('stale-write-accepted', `${key}: token ${token} accepted after token ${newest}`);
      if (newest !== null && token === newest) figures.repeatsWithSameToken++;
      if (grants.some((g) => g.token > token && g.grantedAt < attempt.at)) figures.lateButFenced++;
      if (newest === null || token > newest) newest = token;
    }
  }
  return figures;
}
