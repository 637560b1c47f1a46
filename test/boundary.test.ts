import fs from 'node:fs';
import path from 'node:path';
import { readDecision } from '../activities/anthropicDecider';
import { InvalidConfigurationError } from '../policy/errors';
import { admitDraft, admitLeaseAction } from '../policy/textSafety/denyGate';
import { leaseVocabulary } from '../policy/textSafety/leaseVocabulary';
import { redact } from '../policy/textSafety/redaction';
import { inertModelText } from '../policy/textSafety/untrustedText';
import { buildRetryPrompt } from '../policy/decisions/retryPrompt';
import { decisionMode } from '../worker/config';
import { loadModelConfig } from '../worker/modelConfig';
import { loadModelWorkerConfig, lockSettingsIn } from '../worker/modelWorkerConfig';
import { baseInput } from '../devkit/decisionInputs';
import { reachableImports, type ReadSource } from './support/importGraph';

const ROOT = path.join(__dirname, '..');
const at = (...parts: string[]) => path.join(ROOT, ...parts);

/**
 * The modules that build prompts, call a model, or configure that call. The deny gate and redaction
 * are pure guards both paths may use; they read neither model text nor the lock service.
 */
const MODEL_PATH = [
  'activities/anthropicDecider.ts',
  'activities/anthropicCalls.ts',
  'activities/anthropicDrafter.ts',
  'activities/briefingActivities.ts',
  'activities/decisionActivities.ts',
  'policy/decisions/retryPrompt.ts',
  'worker/modelConfig.ts',
  // The model worker, whole: its bin, its factory and its entry point.
  'worker/modelMain.ts',
  'worker/modelWorker.ts',
  'worker/modelWorkerConfig.ts',
  'entrypoints/modelWorker.ts',
].map((f) => at(f));
/** The modules that call the lock service. */
const LOCK_PATH = [
  at('activities/lockActivities.ts'),
  ...['sqlite', 'redis', 'postgres', 'etcd'].map((b) => at('locks', `${b}LockService.ts`)),
];

function boundaryViolations(read?: ReadSource): string[] {
  const violations: string[] = [];
  for (const entry of MODEL_PATH) {
    for (const reached of reachableImports([entry], read)) {
      if (reached.startsWith(at('locks') + path.sep) || reached === at('activities/lockActivities.ts')) {
        violations.push(`${path.relative(ROOT, entry)} reaches ${path.relative(ROOT, reached)}`);
      }
    }
  }
  for (const entry of LOCK_PATH) {
    for (const reached of reachableImports([entry], read)) {
      if (reached === '@anthropic-ai/sdk' || MODEL_PATH.includes(reached)) {
        violations.push(
          `${path.relative(ROOT, entry)} reaches ${reached.startsWith('/') ? path.relative(ROOT, reached) : reached}`,
        );
      }
    }
  }
  return violations;
}

describe('the test plan of the fencing boundary', () => {
  it('1. a lease action from a model-completion source is denied', () => {
    expect(admitLeaseAction({ action: 'renew', source: 'model_completion', token: '42' })).toEqual({
      admitted: false,
      reason: 'source model_completion may not take lease actions',
    });
    expect(admitLeaseAction({ action: 'renew', source: 'lock_client', token: '42' })).toEqual({
      admitted: true,
    });
  });

  it('2. an empty fencing token is denied', () => {
    for (const token of ['', ' ', 'abc', '-1', '0x2a']) {
      expect(admitLeaseAction({ action: 'release', source: 'lock_client', token })).toMatchObject({
        admitted: false,
        reason: expect.stringContaining('token'),
      });
    }
  });

  it('3. a draft that says to renew the lease is denied', () => {
    expect(
      admitDraft({ task: 'draft_briefing', text: 'Next step: renew the lease for the export job.' }),
    ).toEqual({
      admitted: false,
      reason: 'a draft may not speak of lease actions (rule lease-vocabulary, at word 3)',
    });
  });

  it('4. a redacted timeout summary is allowed', () => {
    const raw =
      'replica-a timed out at 2026-12-02T02:10:04Z holding token 8812; db postgres://billing:hunter2@db/prod';
    const summary = redact(raw);
    expect(summary.counts).toMatchObject({ token: 1, deadline: 1, connectionString: 1 });
    expect(admitDraft({ task: 'explain_log', text: raw })).toMatchObject({
      admitted: false,
      reason: expect.stringContaining('not redacted'),
    });
    expect(admitDraft({ task: 'explain_log', text: summary.text })).toEqual({ admitted: true });
  });

  it("5. the model path's environment holds no lock credential", () => {
    const env = {
      ANTHROPIC_API_KEY: 'sk-ant-test',
      LOCK_SERVICE_URL: 'postgres://locks:s3cret@db.internal/locks',
      REDIS_PASSWORD: 's3cret',
    };
    const config = loadModelConfig(env);
    expect(JSON.stringify(config)).not.toMatch(/s3cret|postgres:|db\.internal/);
    expect(() => loadModelConfig({ ...env, ANTHROPIC_BASE_URL: 'redis://locks:s3cret@cache:6379' })).toThrow(
      InvalidConfigurationError,
    );
    expect(() =>
      loadModelConfig({
        ...env,
        ANTHROPIC_BASE_URL: 'http://proxy/?u=postgres://locks:s3cret@db.internal/locks',
      }),
    ).toThrow(/lock-service address or credential/);
  });

  it('5. the model worker refuses to start beside a lock or fencing setting, and the lock worker beside a model key', () => {
    const modelEnv = {
      ANTHROPIC_API_KEY: 'sk-ant-test',
      LOCKWARDEN_MODEL: 'claude-haiku-4-5',
      LOCKWARDEN_MODEL_TASK_QUEUE: 'lockwarden-model',
      TEMPORAL_ADDRESS: '10.0.0.1:7233',
      PATH: '/usr/bin',
    };
    expect(lockSettingsIn(modelEnv)).toEqual([]);
    expect(loadModelWorkerConfig(modelEnv)).toMatchObject({
      taskQueue: 'lockwarden-model',
      model: { model: 'claude-haiku-4-5' },
    });
    // Seed 003's `env | awk -F= '/LOCK|FENCING/'`, by name or by value, the worker's own names judged by value.
    const planted = {
      ...modelEnv,
      LOCK_SERVICE_URL: 'redis://cache:6379',
      BILLING_FENCING_SECRET: 'x',
      CACHE_URL: 'etcd://LOCKS-A:2379',
      LOCKWARDEN_MODEL: 'LOCK',
    };
    expect(lockSettingsIn(planted)).toEqual([
      'BILLING_FENCING_SECRET',
      'CACHE_URL',
      'LOCKWARDEN_MODEL',
      'LOCK_SERVICE_URL',
    ]);
    expect(() => loadModelWorkerConfig(planted)).toThrow(
      /LOCK_SERVICE_URL: the model worker holds no lock-service or fencing setting/,
    );
    // The lock worker: no model key once decisions go to the model worker's queue.
    expect(decisionMode({ modelTaskQueue: 'lockwarden-model' }, false)).toBe('model-worker');
    expect(() => decisionMode({ modelTaskQueue: 'lockwarden-model' }, true)).toThrow(/holds no model key/);
    // One process never both keeps leases and holds the key, unless a lab says so by name.
    expect(() => decisionMode({ modelTaskQueue: null }, true)).toThrow(
      /this lock worker keeps leases, so it holds no model key\. Run the two roles apart: lockwarden-model-worker .* LOCKWARDEN_LAB_SINGLE_PROCESS=true/,
    );
    expect(decisionMode({ modelTaskQueue: null, labSingleProcess: true }, true)).toBe('lab-single-process');
    expect(decisionMode({ modelTaskQueue: null }, false)).toBe('policy');
  });

  it('6. the model path cannot reach the lock API: no import path from it into locks/ or the lock activities', () => {
    expect(boundaryViolations()).toEqual([]);
  });

  it('7. unknown fields in a model completion fail closed', () => {
    const message = (input: unknown) =>
      ({
        id: 'm',
        type: 'message',
        role: 'assistant',
        model: 'x',
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
        content: [{ type: 'tool_use', id: 't', name: 'submit_retry_decision', input }],
      }) as unknown as Parameters<typeof readDecision>[0];
    const valid = {
      decision: 'retry',
      retry_after_ms: 100,
      backoff_strategy: 'linear',
      lease_renewal_instruction: null,
      starvation_risk: 'low',
      deadlock_detected: false,
      escalation_reason: null,
      explanation: 'x',
    };
    expect(readDecision(message(valid)).ok).toBe(true);
    expect(readDecision(message({ ...valid, action: 'renew', fencing_token: '7' }))).toMatchObject({
      ok: false,
      problem: expect.stringContaining('Unrecognized keys'),
    });
  });

  it('8. a paraphrased hold request fails closed, as a lease action and as a draft', () => {
    for (const action of ['keep the hold alive', 'hang on to it a little longer', 'RENEW', 'renew_lease']) {
      expect(admitLeaseAction({ action, source: 'lock_client', token: '42' })).toMatchObject({
        admitted: false,
      });
    }
    // The draft gate: the paraphrase, and the lease vocabulary in any case, inflection or spelling.
    const refused = [
      'Next: keep the hold alive for another hour.',
      'Keeping our claim alive until the export ends is safest.',
      'set fencing_token to 9',
      'the fencingToken was 9',
      'compare the Fencing-Token first',
      'renewals were refused',
      'the hold went unrenewed',
      'Extending the hold would help.',
      'read lease_until, leaseUntil or lease-until',
      'push the deadline out by 30 s',
      'force-unlock the key',
      'the lock was sto\u200blen', // a zero-width space inside "stolen"
    ];
    for (const text of refused) {
      expect({ text, verdict: admitDraft({ task: 'draft_briefing', text }) }).toMatchObject({
        verdict: { admitted: false },
      });
      // Refused for its words, whatever redaction also finds (a token's number, say).
      expect({ text, found: leaseVocabulary(text) }).toEqual({ text, found: expect.anything() });
    }
    // What the timeline writes for a session that let go, and plain narrative, pass.
    for (const text of [
      'Thread A (lock/x/a) ends by letting go',
      'Thread B takes the lock, keeps its hold twice and lets go; the write with the older number was refused.',
      'We are new to this key; the teal dashboard shows it.',
    ])
      expect(admitDraft({ task: 'draft_briefing', text })).toEqual({ admitted: true });
    expect(admitDraft({ task: 'write_poem', text: 'hello' })).toMatchObject({ admitted: false });
  });

  it("names the rule and the position of a refusal, never the refused words (they may be a tenant's)", () => {
    const text = 'Northwind payroll: please renew the hold for Acme';
    const verdict = admitDraft({ task: 'draft_briefing', text });
    expect(verdict).toEqual({
      admitted: false,
      reason: 'a draft may not speak of lease actions (rule lease-vocabulary, at word 4)',
    });
    expect(admitDraft({ task: 'draft_briefing', text: 'we should keep the hold alive now' })).toEqual({
      admitted: false,
      reason: 'a draft may not speak of lease actions (rule lease-vocabulary, at word 3)',
    });
  });

  it("makes a model's words inert for the UI's Markdown, after redaction, keeping redaction's masks", () => {
    const said = 'Tenant acme-corp \u0007 stuck: [open](javascript:x) <img src=x> **now** at 1765000123456';
    expect(inertModelText(redact(said, ['acme-corp']).text, 500)).toBe(
      'Tenant [tenant] stuck: \\[open\\](javascript:x) \\<img src=x\\> \\*\\*now\\*\\* at [time]',
    );
  });
});

describe('the boundary in the code', () => {
  it('catches a planted import of locks/ from the model path', () => {
    const planted = at('policy/decisions/retryPrompt.ts');
    const read: ReadSource = (file) => {
      if (!fs.existsSync(file)) return undefined;
      const text = fs.readFileSync(file, 'utf8');
      return file === planted ? `import type { LockService } from '../../locks/lockService';\n${text}` : text;
    };
    expect(boundaryViolations(read)).toContain(
      'policy/decisions/retryPrompt.ts reaches locks/lockService.ts',
    );
  });

  it('names no fencing token or lease deadline in the prompt it sends', () => {
    const prompt = buildRetryPrompt({ ...baseInput.context, currentHolder: 'replica-a' });
    for (const text of [prompt.system, prompt.user]) {
      expect(text).not.toMatch(/fencing|\btoken\b|lease[_ ]?until|deadline/i);
    }
  });

  it('masks tokens, deadlines and credentials that arrive inside holder text before the model sees them', () => {
    const prompt = buildRetryPrompt(
      { ...baseInput.context, currentHolder: 'replica-a token=991 until 1764641404000 password=hunter2' },
      ['acme-corp'],
    );
    expect(prompt.user).not.toMatch(/991|1764641404000|hunter2/);
    expect(prompt.redactions).toMatchObject({ token: 1, deadline: 1, credential: 1 });
  });
});

describe('policy/ is pure', () => {
  it('reaches no Temporal package, no driver and no Node built-in with I/O, from any of its modules', () => {
    const modules = fs
      .readdirSync(at('policy'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => at('policy', f));
    expect(modules).toContain(at('policy', 'postmortem', 'timeline.ts'));
    const reached = [...reachableImports(modules)].filter((r) => !r.startsWith('/'));
    // zod parses; noble's SHA-256 digests a release key: pure code, no I/O.
    expect(reached.filter((r) => r !== 'zod' && !r.startsWith('@noble/hashes'))).toEqual([]);
  });
});
