/**
 * Extension figures: the production bundle's size (`node esbuild.js --production`) and the .vsix size
 * (`npm run package`), both built in a temporary copy of the working tree so the repository's own dist/ and
 * agent-trees.vsix are left as they are. Activation time in the real host comes from outside (see
 * readActivation).
 */
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync } from 'child_process';
import { log, REPO, tmpDir, nowNs, msSince } from './lib';

export interface ExtensionResults {
  bundle?: { extensionJs: number; cliJs?: number; buildMs: number };
  bundleError?: string;
  vsix?: { bytes: number; files: { name: string; bytes: number; unpacked: number }[]; buildMs: number; via: string };
  /** Why `npm run package` failed, when it did (the .vsix is then built by the fallback, if that works). */
  vsixError?: string;
  activation: ActivationFigure;
}

export interface ActivationFigure {
  /** ms, or undefined when not measured. */
  ms?: number;
  source: string;
}

/** Where the real-host activation figure is read from (env var first, then a file). */
export const ACTIVATION_ENV = 'AGENT_TREES_ACTIVATION_MS';
export const ACTIVATION_FILE_ENV = 'AGENT_TREES_ACTIVATION_FILE';
export const ACTIVATION_DEFAULT_FILE = path.join('bench', 'results', 'activation-real-host.json');

/**
 * HOOK for scripts/host/: activation time measured inside the real extension host. Read from
 * $AGENT_TREES_ACTIVATION_MS (a number of ms), else from the JSON file $AGENT_TREES_ACTIVATION_FILE or
 * bench/results/activation-real-host.json: `{"activationMs": 12.3, "source": "..."}`. Not measured otherwise.
 */
export function readActivation(): ActivationFigure {
  const fromEnv = process.env[ACTIVATION_ENV];
  if (fromEnv !== undefined && fromEnv !== '') {
    const ms = Number(fromEnv);
    if (Number.isFinite(ms)) return { ms, source: `$${ACTIVATION_ENV}` };
    return { source: `not measured ($${ACTIVATION_ENV}="${fromEnv}" is not a number)` };
  }
  const file = path.resolve(REPO, process.env[ACTIVATION_FILE_ENV] || ACTIVATION_DEFAULT_FILE);
  if (!fs.existsSync(file)) return { source: `not measured (no $${ACTIVATION_ENV}, no ${path.relative(REPO, file)})` };
  try {
    const data = JSON.parse(fs.readFileSync(file, 'utf8')) as { activationMs?: unknown; source?: unknown };
    if (typeof data.activationMs === 'number' && Number.isFinite(data.activationMs)) {
      return { ms: data.activationMs, source: `${path.relative(REPO, file)}${typeof data.source === 'string' ? ` (${data.source})` : ''}` };
    }
    return { source: `not measured (${path.relative(REPO, file)} has no numeric activationMs)` };
  } catch (e) {
    return { source: `not measured (${path.relative(REPO, file)}: ${(e as Error).message})` };
  }
}

/** A copy of the working tree (tracked and untracked-but-not-ignored files) with node_modules linked in. */
function copyWorkingTree(): string {
  const dir = tmpDir('agent-trees-bench-pkg-');
  const list = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: REPO,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  for (const rel of new Set(list.split('\0').filter(Boolean))) {
    if (rel.startsWith('bench/results/')) continue;
    const from = path.join(REPO, rel);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(from);
    } catch {
      continue; // deleted in the working tree
    }
    if (!st.isFile()) continue;
    const to = path.join(dir, rel);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.copyFileSync(from, to);
    fs.chmodSync(to, st.mode & 0o777);
  }
  fs.symlinkSync(path.join(REPO, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

function sizeOf(file: string): number | undefined {
  try {
    return fs.statSync(file).size;
  } catch {
    return undefined;
  }
}

/** File names and sizes inside a zip, from its central directory. */
function zipListing(file: string): { name: string; bytes: number; unpacked: number }[] {
  const data = fs.readFileSync(file);
  const eocd = data.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) return [];
  const count = data.readUInt16LE(eocd + 10);
  let at = data.readUInt32LE(eocd + 16);
  const out: { name: string; bytes: number; unpacked: number }[] = [];
  for (let i = 0; i < count && data.readUInt32LE(at) === 0x02014b50; i++) {
    const compressed = data.readUInt32LE(at + 20);
    const unpacked = data.readUInt32LE(at + 24);
    const nameLen = data.readUInt16LE(at + 28);
    const extraLen = data.readUInt16LE(at + 30);
    const commentLen = data.readUInt16LE(at + 32);
    out.push({ name: data.toString('utf8', at + 46, at + 46 + nameLen), bytes: compressed, unpacked });
    at += 46 + nameLen + extraLen + commentLen;
  }
  return out.sort((a, b) => b.bytes - a.bytes);
}

export function runExtension(measured?: ActivationFigure): ExtensionResults {
  const activation = measured ?? readActivation();
  const results: ExtensionResults = { activation };
  let dir: string;
  try {
    dir = copyWorkingTree();
  } catch (e) {
    return { ...results, bundleError: `could not copy the working tree: ${(e as Error).message}` };
  }
  log(`extension: production bundle in ${dir}`);
  try {
    const t0 = nowNs();
    execFileSync(process.execPath, ['esbuild.js', '--production'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 });
    const buildMs = msSince(t0);
    const extensionJs = sizeOf(path.join(dir, 'dist', 'extension.js'));
    if (extensionJs === undefined) throw new Error('dist/extension.js was not written');
    results.bundle = {
      extensionJs,
      cliJs: sizeOf(path.join(dir, 'dist', 'cli.js')),
      buildMs,
    };
  } catch (e) {
    results.bundleError = firstLines(e);
  }
  log('extension: npm run package');
  const vsix = path.join(dir, 'agent-trees.vsix');
  const pack = (file: string, args: string[], via: string) => {
    const t0 = nowNs();
    execFileSync(file, args, {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 300_000,
      env: { ...process.env, npm_config_update_notifier: 'false' },
    });
    const buildMs = msSince(t0);
    const bytes = sizeOf(vsix);
    if (bytes === undefined) throw new Error('agent-trees.vsix was not written');
    results.vsix = { bytes, files: zipListing(vsix), buildMs, via };
  };
  try {
    pack('npm', ['run', '--silent', 'package'], '`npm run package`');
  } catch (e) {
    results.vsixError = firstLines(e);
    // Still measure the size: the same package with the README's relative links made absolute, the usual
    // reason vsce refuses (no GitHub/GitLab repository URL to resolve them against).
    log('extension: npm run package failed; measuring the .vsix with vsce --baseContentUrl/--baseImagesUrl');
    try {
      const base = 'https://example.invalid/agent-trees';
      pack(
        path.join(dir, 'node_modules', '.bin', 'vsce'),
        ['package', '--no-dependencies', '--baseContentUrl', base, '--baseImagesUrl', base, '--out', 'agent-trees.vsix'],
        '`vsce package --no-dependencies --baseContentUrl … --baseImagesUrl …` (npm run package failed)',
      );
    } catch (e2) {
      results.vsixError += ` || fallback failed too: ${firstLines(e2)}`;
    }
  }
  return results;
}

function firstLines(e: unknown): string {
  const err = e as { message?: string; stderr?: Buffer | string; stdout?: Buffer | string };
  const text = `${err.stderr ?? ''}\n${err.stdout ?? ''}`.trim() || err.message || String(e);
  return text.split('\n').filter(Boolean).slice(0, 4).join(' | ').slice(0, 400);
}
