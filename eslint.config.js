// @ts-check
/**
 * `npm run lint` (first half; dependency-cruiser is the second): typescript-eslint with type
 * information over the server, its tests and tools, the browser SDK and the web pages. Each folder
 * is checked against the tsconfig.json nearest to it (projectService): the root one for src, test,
 * bench and scripts, packages/web-sdk/tsconfig.json and web/tsconfig.json for browser code.
 *
 * The type-aware rules are picked one by one from typescript-eslint's recommended-type-checked set,
 * keeping those that find real faults here without a flood of noise. Left out on purpose:
 * - the no-unsafe-* family and no-explicit-any: nearly a thousand reports, 95 % of them tests reading
 *   JSON bodies typed `any`; the 20 in src/ are the migrations' `Kysely<any>`, one view and the
 *   demo's API proxy.
 * - require-await: flags async methods that implement a Promise-returning interface and Fastify's
 *   async plugins; "fixing" them would turn rejected promises into synchronous throws.
 * - unbound-method: its reports here are Kysely's destructured expression builder and static
 *   methods that do not use `this`.
 * - triple-slash-reference: the web SDK references its ambient build constants on purpose.
 */
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [js.configs.recommended, tseslint.configs.base, tseslint.configs.eslintRecommended],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The three this file exists for: every promise is awaited, returned or handed to a catch.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/it return promises the runner itself awaits.
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],

      // From recommended-type-checked: each catches a real fault class with little or no noise here.
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-array-delete': 'error',
      '@typescript-eslint/no-base-to-string': 'error',
      '@typescript-eslint/no-duplicate-type-constituents': 'error',
      '@typescript-eslint/no-for-in-array': 'error',
      '@typescript-eslint/no-implied-eval': 'error',
      '@typescript-eslint/no-redundant-type-constituents': 'error',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      'no-unused-vars': 'off', // the TypeScript-aware version below understands types and overloads
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/only-throw-error': 'error',
      // An AbortSignal's reason is `any` by type and is passed on as it is.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      '@typescript-eslint/restrict-plus-operands': 'error',
      '@typescript-eslint/restrict-template-expressions': 'error',
      '@typescript-eslint/return-await': ['error', 'error-handling-correctness-only'],
    },
  },
);
