import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { FileEscalationStore } from '../../activities/escalationStore';
import type { SqliteLockService } from '../../locks/sqliteLockService';
import { freshSqlitePath } from '../../devkit/tempFiles';
import { connectTestEnv, freshSqliteLockService, installQuietRuntime } from '../../devkit/temporal';

// What benchmarks share with the tests lives in devkit/; the suites import it from here as well.
export * from '../../devkit/temporal';
export { unique } from '../../devkit/tempFiles';

installQuietRuntime();

/** What a describe block of session tests shares: set by the hooks {@link sessionFixture} installs. */
export interface SessionFixture {
  env: TestWorkflowEnvironment;
  /** A fresh SQLite lock service for each test. */
  locks: SqliteLockService;
  /** A fresh escalation store for each test. */
  escalations: FileEscalationStore;
}

/**
 * Installs the hooks most session tests share: the dev server's environment for the block, and a
 * fresh lock service and escalation store for each test. Read the fields inside tests and hooks.
 */
export function sessionFixture(): SessionFixture {
  const fixture = {} as SessionFixture;
  beforeAll(async () => {
    fixture.env = await connectTestEnv();
  });
  afterAll(() => fixture.env?.teardown());
  beforeEach(() => {
    fixture.locks = freshSqliteLockService();
    fixture.escalations = new FileEscalationStore(freshSqlitePath().replace(/\.sqlite$/, '.jsonl'));
  });
  afterEach(() => fixture.locks.close());
  return fixture;
}
