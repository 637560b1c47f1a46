import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

// Node built-ins have no place in the deterministic workflow sandbox.
const nodeBuiltins = builtinModules.flatMap((name) => [name, `node:${name}`]);

export default tseslint.config(
  // test/package/ is a user's project, type-checked only against the installed package (test/package.test.ts).
  { ignores: ['node_modules/', 'dist/', '.data/', 'coverage/', '*.config.js', 'test/package/', 'docs/api/'] },
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['workflows/**/*.ts', 'test/support/driftedWorkflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'workflows are deterministic: no Node built-ins',
          })),
          patterns: [
            {
              group: ['**/activities', '**/activities/*', '**/locks', '**/locks/*'],
              allowTypeImports: true,
              message: 'workflows reach activities and lock services only through proxyActivities',
            },
          ],
        },
      ],
    },
  },
  { files: ['eslint.config.mjs'], ...tseslint.configs.disableTypeChecked },
);
