import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

// compose's alert rules, checked and unit-tested with Debian's promtool: every rule has a case where
// it fires and one where it stays quiet, and a runbook entry in the docs.
const DIR = path.join(__dirname, '..', 'compose', 'prometheus');
const RULES = path.join(DIR, 'lockwarden-alerts.yml');
const TESTS = path.join(DIR, 'lockwarden-alerts.test.yml');
const RUNBOOK = path.join(__dirname, '..', 'docs', 'operations.md');

interface AlertTest {
  alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[];
}

const promtool = (...args: string[]) =>
  execFileSync('promtool', args, { cwd: DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

describe('the alert rules', () => {
  const rules = (
    parse(fs.readFileSync(RULES, 'utf8')) as { groups: { rules: { alert: string }[] }[] }
  ).groups.flatMap((g) => g.rules.map((r) => r.alert));
  const cases = (parse(fs.readFileSync(TESTS, 'utf8')) as { tests: AlertTest[] }).tests.flatMap(
    (t) => t.alert_rule_test ?? [],
  );

  it('pass `promtool check rules`', () => {
    expect(promtool('check', 'rules', RULES)).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it('pass their `promtool test rules` unit tests', () => {
    expect(promtool('test', 'rules', TESTS)).toMatch(/SUCCESS/);
  });

  it.each(rules)('%s has a firing and a quiet case, and a runbook entry', (alert) => {
    const mine = cases.filter((c) => c.alertname === alert);
    expect(mine.some((c) => (c.exp_alerts ?? []).length > 0)).toBe(true);
    expect(mine.some((c) => (c.exp_alerts ?? []).length === 0)).toBe(true);
    expect(fs.readFileSync(RUNBOOK, 'utf8')).toMatch(new RegExp(`^#### ${alert}$`, 'm'));
  });
});
