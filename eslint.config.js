// ESLint (flat config) with typescript-eslint; formatting is Prettier's alone
// (eslint-config-prettier turns off the rules it would fight). `npm run lint` runs both.
import comments from '@eslint-community/eslint-plugin-eslint-comments/configs';
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'dist-*/',
      'dist.*/',
      '.data/',
      'coverage/',
      'test-results/',
      'bench/results/',
      'src/generated/',
      'src/client/api.schema.ts',
    ],
  },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  js.configs.recommended,
  comments.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A promise nobody awaits loses its error; `void` says it is meant.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // class-validator and class-transformer key their metadata by class, typed `Function` in their API.
    files: ['src/common/validation.fast-path.ts', 'src/common/verbatim.ts'],
    rules: { '@typescript-eslint/no-unsafe-function-type': 'off' },
  },
  {
    // Plain ES modules: the dashboard runs in the browser, bench and scripts in Node.
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: ['src/dashboard/assets/**/*.js', 'src/portal/assets/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    // Every exception names its reason: `// eslint-disable-next-line rule -- why`.
    rules: {
      '@eslint-community/eslint-comments/require-description': 'error',
      // A file-wide disable (with its reason) may sit below the imports.
      '@eslint-community/eslint-comments/disable-enable-pair': 'off',
    },
  },
  prettier,
);
