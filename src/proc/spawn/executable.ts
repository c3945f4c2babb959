/**
 * The executable a spawn runs, found before anything is spawned, and the command line cmd.exe gets on Windows.
 */
import * as fs from 'fs';
import * as path from 'path';
import { SpawnError } from './spawnError';

/**
 * Finds the executable the way the OS will (PATH, and PATHEXT on Windows), so a missing one is reported before
 * anything is spawned: through a cgroup launcher the OS error would come from inside the tree instead.
 */
export function resolveExecutable(command: string, env: NodeJS.ProcessEnv, cwd: string): string {
  if (!command) throw new SpawnError('no command given', 'EINVAL');
  const isWindows = process.platform === 'win32';
  const exts = isWindows ? (env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM').split(';').filter(Boolean) : [''];
  const candidates = (base: string) => (isWindows && path.extname(base) ? [base, ...exts.map((e) => base + e)] : exts.map((e) => base + e));
  const executable = (file: string): 'ok' | 'missing' | 'not-executable' => {
    try {
      const st = fs.statSync(file);
      if (!st.isFile()) return 'missing';
      if (!isWindows) fs.accessSync(file, fs.constants.X_OK);
      return 'ok';
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'EACCES' ? 'not-executable' : 'missing';
    }
  };
  const hasSeparator = command.includes('/') || (isWindows && command.includes('\\'));
  if (hasSeparator) {
    const full = path.resolve(cwd, command);
    for (const c of candidates(full)) {
      const r = executable(c);
      if (r === 'ok') return c;
      if (r === 'not-executable') throw new SpawnError(`${command}: permission denied (not executable)`, 'EACCES');
    }
    throw new SpawnError(`${command}: no such file`, 'ENOENT');
  }
  const dirs = (env.PATH ?? env.Path ?? '').split(path.delimiter).filter(Boolean);
  let denied = false;
  for (const dir of dirs) {
    for (const c of candidates(path.resolve(cwd, dir, command))) {
      const r = executable(c);
      if (r === 'ok') return c;
      if (r === 'not-executable') denied = true;
    }
  }
  if (denied) throw new SpawnError(`${command}: permission denied (found on PATH, not executable)`, 'EACCES');
  throw new SpawnError(`${command}: command not found on PATH`, 'ENOENT');
}

/**
 * `cmd.exe /d /s /c LINE` on Windows (a typed command line, see resolveDefinition): the arguments as Node's own
 * `shell: true` passes them, verbatim with the line in one pair of quotes, which `/s` strips. Quoted the usual
 * way instead, the line's own quotes would reach cmd.exe as \" (which it does not know), and `agent "a b"` would
 * get `"a` and `b"`. Undefined for anything else.
 */
export function cmdLine(
  file: string,
  args: readonly string[],
  platform: NodeJS.Platform = process.platform,
): { args: string[] } | undefined {
  if (platform !== 'win32' || !/(^|[\\/])cmd(\.exe)?$/i.test(file)) return undefined;
  if (args.length !== 4 || args[0].toLowerCase() !== '/d' || args[1].toLowerCase() !== '/s' || args[2].toLowerCase() !== '/c')
    return undefined;
  return { args: ['/d', '/s', '/c', `"${args[3]}"`] };
}
