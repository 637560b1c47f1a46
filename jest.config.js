/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' } }] },
  // Starts (or reuses) the Temporal dev server the workflow tests connect to.
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  testTimeout: 60_000,
  // Two cores: one jest worker per core; workflow tests each run their own Temporal worker.
  maxWorkers: 2,
};
