/**
 * The CLI's records folder: where it is by default, and whether a given path can hold records, checked before
 * anything is spawned (a tree that runs unrecorded cannot be swept after a crash).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { makeFolders } from '../proc';

export function defaultRecordsDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (env.AGENT_TREES_RECORDS) return env.AGENT_TREES_RECORDS;
  const home = os.homedir();
  if (platform === 'win32') return path.join(env.LOCALAPPDATA ?? path.join(home, 'AppData', 'Local'), 'agent-trees', 'owned-trees');
  if (platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'agent-trees', 'owned-trees');
  return path.join(env.XDG_STATE_HOME || path.join(home, '.local', 'state'), 'agent-trees', 'owned-trees');
}

/**
 * What is wrong with `dir` as a records folder, or undefined when it will do. For writing, a missing folder is
 * created (0700) and the folder must take a new file; for reading, a missing folder simply holds no records.
 */
export function recordsDirProblem(dir: string, forWriting: boolean): string | undefined {
  const problem = (what: string) => `records folder ${dir} ${what}`;
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') return problem(`cannot be read: ${(e as Error).message}`);
    const link = symlinkTarget(dir);
    if (link !== undefined) return problem(`is a symlink to ${link}, which does not exist`);
    if (!forWriting) return undefined;
    try {
      makeFolders(dir);
    } catch (e) {
      return problem(`cannot be created: ${(e as Error).message}`);
    }
    st = fs.statSync(dir);
  }
  if (!st.isDirectory()) return problem('is not a folder');
  if (!forWriting) return undefined;
  const probe = path.join(dir, `.agent-trees-probe-${process.pid}.tmp`);
  try {
    fs.closeSync(fs.openSync(probe, fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY, 0o600));
    fs.rmSync(probe, { force: true });
  } catch (e) {
    return problem(`is not writable: ${(e as Error).message}`);
  }
  return undefined;
}

function symlinkTarget(p: string): string | undefined {
  try {
    return fs.lstatSync(p).isSymbolicLink() ? fs.readlinkSync(p) : undefined;
  } catch {
    return undefined;
  }
}
