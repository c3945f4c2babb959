/**
 * Whose a process of an extension host is: the extension whose install folder holds the file it runs
 * (`/proc/<pid>/exe`), else the first path in its command line that lies in one (a script run by a shared Node or
 * Python), else VS Code's own (its application folder), else "other". Pure string logic over folders the caller
 * gives (the extension reads them from `vscode.extensions.all`; a sweep from the record): never a name.
 */

/** An install folder and whose it is: an extension's id, or `vscode` for VS Code's own application folder. */
export interface InstallFolder {
  id: string;
  folder: string;
}

/** VS Code's own processes (its application folder holds what they run). */
export const VSCODE_ID = 'vscode';
/** Processes no install folder accounts for. */
export const OTHER_ID = 'other';

/** What attribution reads of a process: the file it runs, where known, and its command line (arguments joined by spaces). */
export interface AttributedProcess {
  exe?: string;
  command: string;
}

/** Whether `file` is `folder` or lies under it. */
function inFolder(file: string, folder: string): boolean {
  const dir = folder.endsWith('/') ? folder.slice(0, -1) : folder;
  return dir.length > 0 && (file === dir || file.startsWith(dir + '/'));
}

/** The deepest of `folders` holding `file` (folders may nest: a stand-in inside a repository). */
function deepestHolding(file: string, folders: InstallFolder[]): InstallFolder | undefined {
  let best: InstallFolder | undefined;
  for (const f of folders) if (inFolder(file, f.folder) && (!best || f.folder.length > best.folder.length)) best = f;
  return best;
}

/**
 * Where in `command` the first argument lying in `folder` starts, or -1: an occurrence of `<folder>/` at the start
 * of an argument (the line's start, after a space, or after `=` as in `--require=<path>`).
 */
function firstArgumentIn(command: string, folder: string): number {
  const dir = (folder.endsWith('/') ? folder.slice(0, -1) : folder) + '/';
  if (dir === '/') return -1;
  for (let at = command.indexOf(dir); at >= 0; at = command.indexOf(dir, at + 1)) {
    if (at === 0 || command[at - 1] === ' ' || command[at - 1] === '=') return at;
  }
  return -1;
}

/** The folder holding the first path of the command line that lies in one of `folders` (the deepest at one place). */
function firstInCommand(command: string, folders: InstallFolder[]): InstallFolder | undefined {
  let best: InstallFolder | undefined;
  let bestAt = Infinity;
  for (const f of folders) {
    const at = firstArgumentIn(command, f.folder);
    if (at < 0) continue;
    if (at < bestAt || (at === bestAt && best && f.folder.length > best.folder.length)) {
      best = f;
      bestAt = at;
    }
  }
  return best;
}

/**
 * Whose `p` is: the extension of the deepest folder holding its executable; else of the first command-line path
 * in a folder; else `vscode` when its executable or a path of its command line is in VS Code's application folder
 * (`appRoot`); else `other`.
 */
export function attribute(p: AttributedProcess, folders: InstallFolder[], appRoot?: string): string {
  const byExe = p.exe ? deepestHolding(p.exe, folders) : undefined;
  if (byExe) return byExe.id;
  const byArgument = firstInCommand(p.command, folders);
  if (byArgument) return byArgument.id;
  if (appRoot && ((p.exe && inFolder(p.exe, appRoot)) || firstArgumentIn(p.command, appRoot) >= 0)) return VSCODE_ID;
  return OTHER_ID;
}
