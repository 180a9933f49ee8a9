import js from '@eslint/js';
import * as espree from 'espree';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'data/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The attribution engine is called through its interface (src/attribution/index.ts); its
    // routes are the domain's HTTP surface, mounted by the app like every domain's.
    files: ['src/**/*.ts'],
    ignores: ['src/attribution/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '/attribution/(?!index\\.js$|routes\\.js$)', message: "Import the attribution engine from '../attribution/index.js'." }] },
      ],
    },
  },
  {
    // The pixel runs as is in shoppers' browsers: a classic script of ES2017, no build step.
    files: ['src/pixel/pixel.js'],
    languageOptions: { parser: espree, ecmaVersion: 2017, sourceType: 'script', globals: { window: 'readonly', URL: 'readonly' } },
    rules: { '@typescript-eslint/no-unused-vars': ['error', { caughtErrors: 'none' }] },
  },
  {
    // The pages' scripts run as is in browsers: modules of ES2022, no build step.
    files: ['src/pages/*.js'],
    languageOptions: {
      parser: espree,
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: Object.fromEntries(
        ['window', 'document', 'sessionStorage', 'fetch', 'URLSearchParams', 'Intl', 'CSS', 'getComputedStyle', 'addEventListener', 'setTimeout'].map((name) => [name, 'readonly']),
      ),
    },
  },
);
