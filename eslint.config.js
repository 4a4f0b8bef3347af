import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The import patterns no file under lambdas/ may use, plus the given layer's own. */
function boundaries(...own) {
  return [
    {
      group: ['aws-cdk-lib', 'aws-cdk-lib/*', 'constructs', '**/lib/*', '**/bin/*'],
      message: 'The functions never load the CDK or the stack definition (lib/, bin/): it would ship in every bundle.',
    },
    ...own,
  ];
}

export default tseslint.config(
  // The BullMQ peer has its own packages and typecheck (npm run bench:peer:install).
  {
    ignores: [
      'node_modules/**',
      'cdk.out/**',
      '.local/**',
      'coverage/**',
      'console/dist/**',
      'bench/peers/bullmq.ts',
      'bench/peers/node_modules/**',
      'clients/dist/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      'no-console': ['error', { allow: ['warn', 'error'] }],
    },
  },
  // Import boundaries (docs/architecture.md, "Layers"): the functions never load the CDK, the
  // domain stays plain TypeScript with nothing above it, and targets reach no table or queue.
  {
    files: ['lambdas/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: boundaries() }] },
  },
  {
    files: ['lambdas/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: boundaries({
            group: ['../*', '!../core', '../core/config', '@aws-sdk/*'],
            message: 'domain/ is plain TypeScript: it imports only itself, core/ (errors, ids) and libraries without I/O.',
          }),
        },
      ],
    },
  },
  {
    files: ['lambdas/targets/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: boundaries({
            group: ['../store', '../store/*'],
            message: "targets/ call the outside world; they do not read or write the scheduler's tables and queues.",
          }),
        },
      ],
    },
  },
  {
    files: ['scripts/**/*.mjs'],
    languageOptions: { globals: { console: 'readonly', process: 'readonly' } },
  },
  {
    files: ['scripts/**', 'bench/**', 'bin/**', 'examples/**', 'test/deploy/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // Tests read JSON responses loosely; production code keeps the strict rules.
    files: ['test/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // bin/*.js: the CLI's shim for `npx scheduler` (the CLI itself is TypeScript, type-checked).
    files: ['eslint.config.js', 'scripts/**/*.mjs', 'bin/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
