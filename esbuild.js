// Bundles the extension and the CLI. `--production` minifies and drops source maps; `--watch` rebuilds on change.
const esbuild = require('esbuild');
const path = require('path');

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

/** Bundles being built now: the watch prints one started/finished pair for all entries, not one per entry. */
let building = 0;

/** Prints build start/end and errors in the format the problem matcher of .vscode/tasks.json reads. */
const problemMatcherPlugin = {
  name: 'esbuild-problem-matcher',
  setup(build) {
    build.onStart(() => {
      if (watch && building++ === 0) console.log('[watch] build started');
    });
    build.onEnd((result) => {
      for (const { text, location } of result.errors) {
        console.error(`✘ [ERROR] ${text}`);
        if (location) console.error(`    ${location.file}:${location.line}:${location.column + 1}:`); // esbuild counts columns from 0
      }
      if (watch && --building === 0) console.log('[watch] build finished');
    });
  },
};

/**
 * One namespace object per external module (Node's built-ins, `vscode`) for the whole bundle. esbuild gives each
 * `import * as fs from 'fs'` a copy of the module's every property (a getter each): 22 copies of `fs` in the CLI,
 * 19 of the `vscode` API in the extension, some 15 ms of each start. Imported through one `export *` module
 * instead, each is copied once.
 */
const SHARED = 'shared-external';
const sharedExternals = {
  name: 'shared-externals',
  setup(build) {
    const filter = /^(vscode|fs|path|os|crypto|child_process|util|net|url|events|worker_threads|readline|tty|stream)$/;
    build.onResolve({ filter }, (args) =>
      args.namespace === SHARED ? { path: args.path, external: true } : { path: args.path, namespace: SHARED },
    );
    build.onLoad({ filter: /.*/, namespace: SHARED }, (args) => ({ contents: `export * from '${args.path}';`, loader: 'js' }));
  },
};

const common = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  minify: production,
  sourcemap: !production,
  sourcesContent: false,
  logLevel: 'silent',
  // ps-list is ESM and reads import.meta.url at load time; bundled to CommonJS that would be undefined.
  define: { 'import.meta.url': 'importMetaUrl' },
  banner: { js: "const importMetaUrl = require('url').pathToFileURL(__filename).href;" },
  plugins: [problemMatcherPlugin, sharedExternals],
};

/**
 * The extension's bundle takes the core (src/proc) and the agents' layer (src/agents) from dist/cli.js, so one copy of
 * each ships: what it imports from them, src/cli/bundle.ts must export, and the build fails when it does not.
 */
const SRC = path.join(__dirname, 'src');
const CLI_BUNDLE = path.join(SRC, 'cli', 'bundle.ts');
const coreFromCli = {
  name: 'core-from-cli',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/(proc|agents\/\w+)$/ }, (args) => {
      if (path.relative(SRC, args.resolveDir) !== 'extension') return undefined;
      const module = args.path.slice(3);
      if (!require('fs').readFileSync(CLI_BUNDLE, 'utf8').includes(`export * from '../${module}';`))
        return { errors: [{ text: `src/cli/bundle.ts does not export '../${module}', which ${args.importer} imports` }] };
      return { path: './cli.js', external: true };
    });
  },
};

const entries = [
  {
    entryPoints: ['src/extension/extension.ts'],
    outfile: 'dist/extension.js',
    external: ['vscode', '@lydell/node-pty'],
    plugins: [...common.plugins, coreFromCli],
    // When the bundle started loading, for the activation time the extension reports (API `timings`).
    banner: { js: common.banner.js + 'globalThis.__agentTreesLoadStart = performance.now();' },
  },
  {
    entryPoints: ['src/cli/bundle.ts'],
    outfile: 'dist/cli.js',
    external: ['@lydell/node-pty'],
    // In a function: run from standard input, Node evaluates the script in the global scope, where a top-level
    // `var crypto` would collide with the global of that name.
    banner: { js: '#!/usr/bin/env node\n(function () {\n' + common.banner.js },
    footer: { js: '})();' },
  },
];

/** ps-list's Windows listing runs an .exe it looks for in `<bundle dir>/vendor/`; ship it beside the bundle. */
function copyPsListVendor() {
  const fs = require('fs');
  const from = path.join(__dirname, 'node_modules', 'ps-list', 'vendor');
  const to = path.join(__dirname, 'dist', 'vendor');
  if (!fs.existsSync(from)) return;
  fs.mkdirSync(to, { recursive: true });
  for (const name of fs.readdirSync(from)) fs.copyFileSync(path.join(from, name), path.join(to, name));
}

/**
 * @lydell/node-pty (agents' pseudo-terminals) is a native module: not bundled, but shipped beside the bundles in
 * dist/node_modules, where `require` from dist/ finds it first: its JavaScript, and the prebuilt binary package
 * of each platform installed (npm installs the one of this machine; .vscodeignore* pick what a package ships).
 * Without it the extension and the CLI say so and run agents on pipes.
 */
function copyNodePty() {
  const fs = require('fs');
  const scope = path.join(__dirname, 'node_modules', '@lydell');
  const to = path.join(__dirname, 'dist', 'node_modules', '@lydell');
  fs.rmSync(to, { recursive: true, force: true });
  if (!fs.existsSync(path.join(scope, 'node-pty'))) return;
  const copy = (from, dest, keep) => {
    for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
      const src = path.join(from, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'worker' && entry.name !== 'shared') copy(src, path.join(dest, entry.name), keep);
      } else if (keep(entry.name)) {
        fs.mkdirSync(dest, { recursive: true });
        fs.copyFileSync(src, path.join(dest, entry.name));
        fs.chmodSync(path.join(dest, entry.name), fs.statSync(src).mode);
      }
    }
  };
  // Its Windows files stay out: on Windows agents run on pipes and the module is never loaded.
  const posix = (name) => /\.js$|^package\.json$|^LICENSE$/.test(name) && !/^(windows|conpty|conout)/.test(name);
  copy(path.join(scope, 'node-pty'), path.join(to, 'node-pty'), posix);
  for (const name of fs.readdirSync(scope).filter((n) => n.startsWith('node-pty-'))) {
    copy(path.join(scope, name), path.join(to, name), (file) => /\.node$|^spawn-helper$|^package\.json$/.test(file));
  }
}

async function main() {
  copyPsListVendor();
  copyNodePty();
  const contexts = await Promise.all(
    entries
      .filter((e) => require('fs').existsSync(path.join(__dirname, e.entryPoints[0])))
      .map((entry) => esbuild.context({ ...common, ...entry })),
  );
  if (watch) {
    await Promise.all(contexts.map((c) => c.watch()));
    return;
  }
  await Promise.all(contexts.map((c) => c.rebuild()));
  await Promise.all(contexts.map((c) => c.dispose()));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
