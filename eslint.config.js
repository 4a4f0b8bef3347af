import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // The BullMQ peer has its own packages and typecheck (npm run bench:peer:install).
  { ignores: ['node_modules/**', 'cdk.out/**', '.local/**', 'coverage/**', 'bench/peers/bullmq.ts', 'bench/peers/node_modules/**', 'clients/dist/**'] },
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
