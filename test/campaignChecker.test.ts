import { type CampaignRecordings, checkCampaign } from '../campaign/checker';
import type { LeaseKeyEvent } from '../locks/etcdLeaseHistory';
import type { FencedWriteAttempt } from '../locks/fencedResource';

// The fault campaign's checker on recordings made up to break each claim once: it must find every
// violation it exists to find, and nothing in a clean run.

const write = (token: number, at: number, accepted = true, newest = token): FencedWriteAttempt => ({
  resource: 'k',
  token: String(token),
  accepted,
  newestToken: String(newest),
  at,
});
const grant = (token: number, grantedAt: number, holder = `h${token}`, ttl = 3_000) => ({
  op: 'grant' as const,
  key: 'k',
  holder,
  token: String(token),
  grantedAt,
  leaseUntil: grantedAt + ttl,
});
const release = (token: number, at: number, holder = `h${token}`) => ({
  op: 'release' as const,
  key: 'k',
  holder,
  token: String(token),
  at,
});

// The application's rows an honest run leaves for `writes`: one per accepted write, by its holder.
const recordsOf = (writes: CampaignRecordings['writes']): CampaignRecordings['records'] =>
  Object.fromEntries(
    Object.entries(writes).map(([key, attempts]) => [
      key,
      attempts.filter((a) => a.accepted).map((a, seq) => ({ token: a.token, holder: `h${a.token}`, seq })),
    ]),
  );
// `r` with its fenced writes replaced, and the rows those writes leave.
const withWrites = (r: CampaignRecordings, writes: CampaignRecordings['writes']): CampaignRecordings => ({
  ...r,
  writes,
  records: recordsOf(writes),
});
const renew = (token: number, at: number, leaseUntil: number, holder = `h${token}`) => ({
  op: 'renew' as const,
  key: 'k',
  holder,
  token: String(token),
  leaseUntil,
  at,
});

function clean(): CampaignRecordings {
  const writes = {
    k: [write(1, 100), write(1, 150), write(2, 1_100), write(1, 1_200, false, 2), write(3, 2_100)],
  };
  return {
    writes,
    records: recordsOf(writes),
    unreadableJournalLines: [],
    journal: [
      grant(1, 0),
      renew(1, 500, 3_500),
      release(1, 1_000),
      grant(2, 1_000),
      release(2, 2_000),
      grant(3, 2_050),
      release(3, 3_000),
    ],
    faults: [{ kind: 'lock-server-restart', at: 1_050, detail: 'crash' }],
    sessions: { s1: 'wrote', s2: 'wrote', s3: 'lease-lost' },
    runsPerSessionId: { 'lock/k/h1': 1, 'lock/k/h2': 1, 'lock/k/h3': 1 },
    serviceOrder: null,
    workerCrashes: [],
  };
}

const violationsOf = (r: CampaignRecordings) =>
  Object.fromEntries(Object.entries(checkCampaign(r).violations).filter(([, n]) => n > 0));

describe("the fault campaign's checker", () => {
  it('finds nothing wrong in a clean run, and counts what happened', () => {
    const report = checkCampaign(clean());
    expect(violationsOf(clean())).toEqual({});
    expect(report.writes).toEqual({
      attempted: 5,
      accepted: 4,
      refusedAsStale: 1,
      repeatsWithSameToken: 1,
      lateButFenced: 0,
      afterDeadlinePaused: 0,
      afterDeadlineFencingOnly: 0,
    });
    expect(report.leases).toMatchObject({ granted: 3, keys: 1, grantsNotJournaled: 0, restartsCrossed: 1 });
    expect(report.sessions).toMatchObject({ wrote: 2, 'lease-lost': 1, lost: 0 });
    expect(report.faults['lock-server-restart']).toBe(1);
  });

  it('finds a stale write the resource accepted', () => {
    const r = clean();
    const planted = withWrites(r, { k: [...r.writes.k!, write(2, 2_200)] });
    expect(violationsOf(planted)).toEqual({ 'stale-write-accepted': 1 });
  });

  it('finds a refusal that names no newer token', () => {
    const r = clean();
    r.writes.k!.push(write(3, 2_300, false, 3));
    expect(violationsOf(r)).toEqual({ 'refusal-without-newer-token': 1 });
  });

  it('finds two leases of one key that overlap on the service clock', () => {
    const r = clean();
    r.journal = [grant(1, 0), grant(2, 2_000), release(2, 2_500)];
    expect(violationsOf(withWrites(r, {}))).toEqual({ 'overlapping-leases': 1 });

    // Token 1's release was sent at 1,900 and its answer lost (its worker killed between the
    // service's commit and the journal's append): the lease may have ended before 2,000. Counted.
    const sentRelease = {
      op: 'release-sent' as const,
      id: 'w-9',
      key: 'k',
      holder: 'h1',
      token: '1',
      at: 1_900,
    };
    const lost = withWrites({ ...r, journal: [...r.journal, sentRelease] }, {});
    expect(violationsOf(lost)).toEqual({});
    expect(checkCampaign(lost).leases.grantsAfterUnansweredRelease).toBe(1);
    // Sent after the next grant, it cannot explain it.
    const late = withWrites({ ...r, journal: [...r.journal, { ...sentRelease, at: 2_100 }] }, {});
    expect(violationsOf(late)).toEqual({ 'overlapping-leases': 1 });
    // Answered as refused, it ended nothing.
    const refused = withWrites(
      {
        ...r,
        journal: [...r.journal, sentRelease, { op: 'release-refused' as const, id: 'w-9', at: 1_950 }],
      },
      {},
    );
    expect(violationsOf(refused)).toEqual({ 'overlapping-leases': 1 });
  });

  describe("judged by the service's own order (etcd's revisions)", () => {
    const event = (
      op: LeaseKeyEvent['op'],
      revision: number,
      holder: string | null = null,
    ): LeaseKeyEvent => ({
      key: 'k',
      op,
      revision: String(revision),
      holder,
    });
    // Tokens 10, 20, 30 are the revisions of their creates; each lease key was deleted before the
    // next was written. The journaled times are a paused worker's estimates: they overlap by 400 ms.
    const exact = (): CampaignRecordings => ({
      ...withWrites(clean(), {}),
      journal: [grant(10, 0), grant(20, 2_600), release(20, 4_000), grant(30, 4_050)],
      serviceOrder: [
        event('create', 10, 'h10'),
        event('delete', 15),
        event('create', 20, 'h20'),
        event('delete', 25),
        event('create', 30, 'h30'),
      ],
    });

    it('finds nothing wrong when each lease key was deleted before the next was written, whatever the estimated times', () => {
      expect(violationsOf(exact())).toEqual({});
      // The same grants judged by their estimated times would overlap.
      expect(violationsOf({ ...exact(), serviceOrder: null })).toEqual({ 'overlapping-leases': 1 });
    });

    it('finds a lease written while the one before it was still live', () => {
      const r = exact();
      r.serviceOrder = r.serviceOrder!.filter((e) => e.revision !== '15');
      expect(violationsOf(r)).toEqual({ 'overlapping-leases': 1 });
    });

    it('finds a live lease written over by another holder', () => {
      const r = exact();
      r.serviceOrder!.push({ key: 'k', op: 'overwrite', revision: '31', holder: 'intruder' });
      expect(violationsOf(r)).toEqual({ 'overlapping-leases': 1 });
    });

    it('finds a journaled grant the service never made, or made to another holder', () => {
      const missing = exact();
      missing.serviceOrder = missing.serviceOrder!.filter((e) => e.revision !== '30');
      expect(violationsOf(missing)).toEqual({ 'grant-unknown-to-service': 1 });
      const other = exact();
      other.serviceOrder = other.serviceOrder!.map((e) => (e.revision === '20' ? { ...e, holder: 'h9' } : e));
      expect(violationsOf(other)).toEqual({ 'grant-unknown-to-service': 1 });
    });
  });

  it('matches a release to its grant whichever worker journaled either, in whatever order the journals are read', () => {
    const r = clean();
    // Worker 2's journal (the release of token 1) is read before worker 1's (its grant).
    r.journal = [release(1, 1_000), grant(2, 1_500), release(2, 2_000), grant(1, 0)];
    expect(violationsOf(withWrites(r, {}))).toEqual({});
  });

  it('finds a token issued twice, and tokens that fell across a restart', () => {
    const reused = clean();
    reused.journal.push(grant(3, 2_050, 'someone-else'));
    expect(violationsOf(reused)).toEqual({ 'token-reused': 1 });

    const fell = withWrites(clean(), {});
    fell.journal = [grant(5, 0), release(5, 500), grant(4, 2_000), release(4, 2_500)];
    expect(violationsOf(fell)).toEqual({ 'token-not-increasing': 1, 'token-fell-after-restart': 1 });
  });

  it('counts a write accepted after a newer token was granted as late but fenced, not a violation', () => {
    const r = clean();
    r.journal = [grant(1, 0, 'h1', 500), grant(2, 600), release(2, 1_500)];
    // The holder of token 1 was stopped (SIGSTOP) across its deadline, and wrote when it went on.
    r.faults = [{ kind: 'pause', at: 300, endsAt: 650, detail: 'SIGSTOP worker 0' }];
    const late = withWrites(r, { k: [write(1, 700), write(2, 800)] });
    expect(violationsOf(late)).toEqual({});
    expect(checkCampaign(late).writes).toMatchObject({ lateButFenced: 1, afterDeadlinePaused: 1 });
  });

  it('finds a write after its deadline by a holder no pause stopped (one that could not prove its lease)', () => {
    const r = clean();
    r.journal = [grant(1, 0, 'h1', 500), renew(1, 300, 900), release(1, 1_000)];
    // Within the renewed deadline: fine. Past it, with nothing that stopped the holder: a violation.
    r.faults = [{ kind: 'lock-partition', at: 400, endsAt: 5_000, detail: 'cut' }];
    const ok = withWrites(r, { k: [write(1, 850)] });
    expect(violationsOf(ok)).toEqual({});
    const late = withWrites(r, { k: [write(1, 850), write(1, 1_400)] });
    expect(violationsOf(late)).toEqual({ 'write-after-deadline': 1 });
    // A writer that trusts fencing alone is held to fencing only: its late write is counted.
    const fencingOnly = withWrites(
      { ...r, journal: [grant(1, 0, 'f1', 500), renew(1, 300, 900, 'f1'), release(1, 1_000, 'f1')] },
      { k: [write(1, 1_400)] },
    );
    fencingOnly.records = { k: [{ token: '1', holder: 'f1', seq: 0 }] };
    expect(violationsOf(fencingOnly)).toEqual({});
    expect(checkCampaign(fencingOnly).writes.afterDeadlineFencingOnly).toBe(1);
    // etcd's deadlines are estimates: its leases are judged by the service's order instead.
    expect(checkCampaign({ ...late, serviceOrder: [] }).violations['write-after-deadline']).toBe(0);
  });

  it('finds sessions without an outcome, a session id run twice and a worker that crashed', () => {
    const r = clean();
    r.sessions.s4 = 'lost';
    r.sessions.s5 = 'failed-otherwise';
    r.runsPerSessionId['lock/k/h2'] = 2;
    r.workerCrashes = ['worker 1 exited by itself: code 1'];
    expect(violationsOf(r)).toEqual({
      'session-without-outcome': 2,
      'duplicate-session-run': 1,
      'worker-crashed': 1,
    });
  });

  it('finds a write under a token whose grant no worker journaled', () => {
    const r = clean();
    const planted = withWrites(r, { k: [...r.writes.k!, write(9, 5_000)] });
    expect(violationsOf(planted)).toEqual({ 'write-without-journaled-grant': 1 });
    expect(checkCampaign(planted).leases.grantsNotJournaled).toBe(1);
  });

  it('finds a renewal the service accepted after the deadline it extended (a paused holder renewing late)', () => {
    const r = clean();
    // Token 2 was granted at 1,000 until 4,000; its holder, paused, renews at 4,200.
    r.journal.push(renew(2, 4_200, 7_200));
    expect(violationsOf(r)).toEqual({ 'late-renewal-accepted': 1 });
    // A renewal within the deadline, then one within the deadline that renewal gave, is fine.
    const inTime = clean();
    inTime.journal.push(renew(2, 3_900, 6_900), renew(2, 6_800, 9_800));
    expect(violationsOf(inTime)).toEqual({});
  });

  it('counts, and does not flag, a late-looking renewal a renewal with a lost answer may have made timely', () => {
    const sent = (token: number, at: number, id: string) => ({
      op: 'renew-sent' as const,
      id,
      key: 'k',
      holder: `h${token}`,
      token: String(token),
      at,
    });
    // Token 2 runs until 4,000. A renewal sent at 3,500 lost its answer (a dropped connection); the
    // retry at 4,700 is accepted: the lost one may have moved the deadline to as late as 7,000.
    const lost = clean();
    lost.journal.push(sent(2, 3_500, 'w-1'), sent(2, 4_690, 'w-2'), { ...renew(2, 4_700, 7_700), id: 'w-2' });
    expect(violationsOf(lost)).toEqual({});
    expect(checkCampaign(lost).leases.renewalsAfterUnanswered).toBe(1);
    // Its answer journaled: nothing was lost, and the retry is late.
    const answered = clean();
    answered.journal.push(
      sent(2, 3_500, 'w-1'),
      { ...renew(2, 3_510, 4_010), id: 'w-1' },
      renew(2, 4_700, 7_700),
    );
    expect(violationsOf(answered)).toEqual({ 'late-renewal-accepted': 1 });
    // Sent after the deadline: it could not have kept the lease.
    const tooLate = clean();
    tooLate.journal.push(sent(2, 4_100, 'w-1'), renew(2, 4_700, 7_700));
    expect(violationsOf(tooLate)).toEqual({ 'late-renewal-accepted': 1 });
    // Beyond the reach of the lost one (deadline 4,000 + a 3,000 lease).
    const beyond = clean();
    beyond.journal.push(sent(2, 3_500, 'w-1'), renew(2, 7_100, 10_100));
    expect(violationsOf(beyond)).toEqual({ 'late-renewal-accepted': 1 });
  });

  it('finds a renewal accepted from a client that does not hold the lease', () => {
    const r = clean();
    r.journal.push(renew(2, 1_500, 4_500, 'intruder'));
    expect(violationsOf(r)).toEqual({ 'renewal-by-non-holder': 1 });
  });

  it('finds a token that fell across a lock-server restart, alone (service order says it was issued in order)', () => {
    const r = withWrites(clean(), {});
    r.faults = [{ kind: 'lock-server-restart', at: 1_000, detail: 'crash' }];
    // The journal's times put token 50 before the restart and token 40 after it; the service's own
    // order (token 40 written, deleted, then token 50) has nothing out of order.
    r.journal = [grant(50, 0), release(50, 500), grant(40, 2_000), release(40, 2_500)];
    r.serviceOrder = [
      { key: 'k', op: 'create', revision: '40', holder: 'h40' },
      { key: 'k', op: 'delete', revision: '45', holder: null },
      { key: 'k', op: 'create', revision: '50', holder: 'h50' },
    ];
    expect(violationsOf(r)).toEqual({ 'token-fell-after-restart': 1 });
  });

  it("holds the application's rows to the fenced-write log: a row under another's lease, a row too many", () => {
    const r = clean();
    r.records.k!.push({ token: '2', holder: 'h3', seq: 9 });
    expect(violationsOf(r)).toEqual({
      'record-of-another-holder': 1,
      'records-differ-from-fenced-writes': 1,
    });
    const lost = clean();
    lost.records.k = lost.records.k!.slice(1);
    expect(violationsOf(lost)).toEqual({ 'records-differ-from-fenced-writes': 1 });
  });
});
