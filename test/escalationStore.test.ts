import fs from 'node:fs';
import pino from 'pino';
import { type EscalationRecord, FileEscalationStore } from '../activities/escalationStore';
import { createMetrics } from '../activities/metrics';
import { createOnCallActivities, DEFAULT_ONCALL } from '../activities/oncallActivities';
import { freshSqlitePath } from '../devkit/tempFiles';

// The escalation store survives what a host does to a file: a worker killed mid-write, a file that
// grows for years, a file that cannot be read. None of them stops a page.
const escalation = (key: string, at: Date, workflowId = `lock/${key}/r`): EscalationRecord => ({
  key,
  requester: 'r',
  workflowId,
  reason: 'budget spent',
  deadlock: false,
  attempts: 3,
  waitedMs: 1_000,
  at: at.toISOString(),
});
const freshFile = () => freshSqlitePath().replace(/\.sqlite$/, '.jsonl');

describe('the escalation file', () => {
  it('skips and counts a line torn by a crash mid-write, and the next record is whole', async () => {
    const file = freshFile();
    const skipped: number[] = [];
    const store = new FileEscalationStore(file, { onSkippedLines: (count) => skipped.push(count) });
    await store.record(escalation('k', new Date()));
    fs.appendFileSync(file, '{"key":"k","requester":"r","workfl'); // the write a SIGKILL cut short
    await store.record(escalation('k', new Date()));
    expect(await store.recentForKey('k', new Date(0))).toBe(2);
    expect(skipped).toEqual([1]);
  });

  it('rotates past its size, keeping the generation before for the review window', async () => {
    const file = freshFile();
    const store = new FileEscalationStore(file, { maxBytes: 1_000 });
    for (let i = 0; i < 30; i++) await store.record(escalation('k', new Date(), `lock/k/r${i}`));
    // Never more than the bound plus one record in the current file, and two files in all.
    expect(fs.statSync(file).size).toBeLessThan(1_000 + 400);
    expect(fs.existsSync(`${file}.1`)).toBe(true);
    expect(fs.existsSync(`${file}.2`)).toBe(false);
    const kept = await store.recordsOf('k');
    expect(kept.length).toBeGreaterThan(2);
    expect(kept.length).toBeLessThan(30);
    expect(kept.at(-1)!.workflowId).toBe('lock/k/r29');
  });
});

describe('paging with a broken store', () => {
  it('pages when the store cannot be read or written, and counts both', async () => {
    const dir = freshFile();
    fs.mkdirSync(dir); // a directory where the file should be: neither readable nor appendable
    const metrics = createMetrics();
    const { notifyOnCall } = createOnCallActivities({
      oncall: DEFAULT_ONCALL,
      escalations: new FileEscalationStore(dir),
      metrics,
      log: pino({ level: 'silent' }),
    });
    const paged = await notifyOnCall({ ...escalation('k', new Date()) });
    expect(paged).toMatchObject({ via: 'log', recentForKey: 1 });
    const problems = await metrics.escalationStoreProblems.get();
    expect(Object.fromEntries(problems.values.map((v) => [v.labels.problem, v.value]))).toEqual({
      unreadable: 1,
      unwritable: 1,
    });
  });
});
