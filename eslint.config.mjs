// ESLint (flat config): typescript-eslint's recommended rules on the TypeScript sources, tests and bench, and
// ESLint's recommended rules on the Node scripts. Formatting is Prettier's job (`npm run format`), not ESLint's.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'out/**',
      'node_modules/**',
      '.tools/**',
      '.vscode-test/**',
      'bench/results/**',
      // The real agents' files that test/fixtures/extensions/standIns.js links into the stand-ins.
      'test/fixtures/extensions/*/bin/**',
      'test/fixtures/extensions/*/resources/**',
    ],
  },
  js.configs.recommended,
  // `catch {}` is how the code says "gone, or not ours to read"; everything else empty is a mistake.
  { rules: { 'no-empty': ['error', { allowEmptyCatch: true }] } },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommended],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // `import x = require('x')` is how the bench loads tree-kill, a CommonJS module with `export =`.
      '@typescript-eslint/no-require-imports': ['error', { allow: ['^tree-kill$'] }],
    },
  },
  // Type-aware rules for the product: a promise nobody awaits must say what happens when it fails, and no promise
  // goes where a plain value is expected (an async listener whose rejection nobody would see).
  {
    files: ['src/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  // In the extension `void` does not count as handling either: background work goes through inBackground(), which
  // logs a failure with what was being done. VS Code's own Thenables are not Promises and stay unchecked: a
  // notification or a context key settles when the window answers or goes, and there is nothing to do if it fails
  // (state the extension keeps, workspaceState, goes through inBackground() all the same).
  { files: ['src/extension/**/*.ts'], rules: { '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: false }] } },
  {
    // One job per function: past 60 lines of code, a function of the core, the CLI or the agents says why
    // (`eslint-disable-next-line max-lines-per-function -- <why>`); past 4 parameters, it takes an options object.
    files: ['src/proc/**/*.ts', 'src/cli/**/*.ts', 'src/agents/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true, IIFEs: true }],
      'max-params': ['error', 4],
    },
  },
  // A skip in the unit and system runs says why, and in CI a missing environment fails the test instead: through
  // test/support/environment.ts (requireEnvironment, skipBecause), never a bare this.skip().
  {
    files: ['test/unit/**/*.ts', 'test/system/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.object.type='ThisExpression'][callee.property.name='skip']",
          message:
            'Skip through test/support/environment.ts (requireEnvironment or skipBecause): it says why, and CI fails a test whose environment is missing.',
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  { files: ['**/*.mjs'], languageOptions: { sourceType: 'module' } },
  // Mocha spec files run by the unit tests as fixtures.
  { files: ['test/fixtures/**/*.spec.js'], languageOptions: { globals: { ...globals.node, ...globals.mocha } } },
  {
    // Functions that hostLib.js hands to the browser run in the page (document, location, MutationObserver).
    files: ['scripts/host/**/*.js'],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
);
