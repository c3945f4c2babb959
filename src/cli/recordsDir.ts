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
  const link = foreignLink(dir);
  if (link) return problem(`goes through ${link.path}, a symbolic link of uid ${link.uid}: only links of this user or root are followed`);
  const folder = foreignFolder(dir);
  if (folder) return problem(`goes through ${folder}`);
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

/**
 * The records folder the CLI uses for `dir` (checked by `recordsDirProblem` first): its real path, every symbolic
 * link on the way followed once, now. Nothing is looked up through the links again, so a link changed while
 * `run` works changes nothing of where its record is. A path not there yet is taken as it is.
 */
export function realRecordsDir(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/**
 * The first symbolic link on the way to `dir` (followed as the kernel would) that belongs to another user than
 * this one and root: such a link could point the records, and what a sweep reads, anywhere its owner likes.
 */
function foreignLink(dir: string): { path: string; uid: number } | undefined {
  const me = process.geteuid?.();
  if (me === undefined) return undefined;
  let todo = path.resolve(dir).split(path.sep).filter(Boolean);
  let at = path.parse(path.resolve(dir)).root;
  for (let links = 0; todo.length > 0 && links <= 40;) {
    const next = path.join(at, todo.shift()!);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(next);
    } catch {
      return undefined; // not there (yet): made as a folder of ours
    }
    if (!st.isSymbolicLink()) {
      at = next;
      continue;
    }
    if (st.uid !== me && st.uid !== 0) return { path: next, uid: st.uid };
    links++;
    const target = fs.readlinkSync(next);
    if (path.isAbsolute(target)) at = path.parse(target).root;
    todo = [...target.split(path.sep).filter(Boolean), ...todo];
  }
  return undefined;
}

/**
 * The first folder on the way to `dir` (its real path) in which someone else than this user and root could move an
 * entry away and put one of theirs in its place: a folder of another user, or one any user can write to without
 * the sticky bit. They could hide the records from the watchdog and the sweeps (their own folder under the old
 * name is not trusted), and a tree would outlive its owner unswept. Says which and why, or undefined.
 */
function foreignFolder(dir: string): string | undefined {
  const me = process.geteuid?.();
  if (me === undefined) return undefined;
  let at = path.resolve(dir);
  while (!fs.existsSync(at) && path.dirname(at) !== at) at = path.dirname(at);
  let real: string;
  try {
    real = fs.realpathSync(at);
  } catch {
    return undefined; // cannot be looked at: the folder's own checks say why
  }
  const holders = [real];
  for (let d = real; path.dirname(d) !== d; d = path.dirname(d)) holders.push(path.dirname(d));
  // The folder itself holds the records: only what holds it (and itself, when it holds a folder still to be made).
  for (const folder of real === path.resolve(dir) ? holders.slice(1) : holders) {
    let st: fs.Stats;
    try {
      st = fs.statSync(folder);
    } catch {
      continue;
    }
    if (st.uid !== me && st.uid !== 0)
      return `${folder}, a folder of uid ${st.uid}: only folders of this user or root are trusted to hold it`;
    if ((st.mode & 0o002) !== 0 && (st.mode & 0o1000) === 0) return `${folder}, which any user can write to (no sticky bit)`;
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
