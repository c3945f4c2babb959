/**
 * What tests run as another user (OTHER_UID, through setpriv). The checkout may sit where that user cannot enter
 * (root's home is a private folder, mode 0700), so nothing it runs comes from there: the bundles (dist/) are copied,
 * once per run, into a folder of the system's temp folder it can read, and a script is bundled there from the sources
 * with all it imports. Its processes start in that folder too. The folder goes when the run ends.
 */
import * as esbuild from 'esbuild';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CLI, REPO } from './repo';

/** An ordinary user for the tests that need one (root runs the suite). */
export const OTHER_UID = 12345;

let readable: string | undefined;

/** This run's folder for the other user: world-readable, under the system's temp folder. */
export function readableDir(): string {
  if (readable) return readable;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-other-user-'));
  fs.chmodSync(dir, 0o755);
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  fs.cpSync(path.dirname(CLI), path.join(dir, 'dist'), { recursive: true });
  readable = dir;
  return dir;
}

/** The bundled CLI, as the other user can run it. */
export function cliForOtherUser(): string {
  return path.join(readableDir(), 'dist', path.basename(CLI));
}

/**
 * `source` (JavaScript that may `require('./src/...')` by the repository's paths) bundled with everything it imports
 * into one file the other user can run; returns its path.
 */
export function scriptForOtherUser(name: string, source: string): string {
  const file = path.join(readableDir(), `${name}.js`);
  esbuild.buildSync({
    stdin: { contents: source, resolveDir: REPO, sourcefile: `${name}.js`, loader: 'js' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    external: ['@lydell/node-pty'],
    outfile: file,
    logLevel: 'error',
  });
  void esbuild.stop(); // its service process would outlive the run
  fs.chmodSync(file, 0o644);
  return file;
}

/** `setpriv` arguments that run the rest as the other user (its uid and gid, no supplementary groups). */
export const AS_OTHER_USER = [`--reuid=${OTHER_UID}`, `--regid=${OTHER_UID}`, '--clear-groups'];
