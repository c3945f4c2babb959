/**
 * The `agent-trees` launcher the window's terminals find on their PATH. Pure Node (no `vscode`): unit-tested by
 * running what it writes.
 */
import * as fs from 'fs';
import * as path from 'path';
import { SIGHUP_IGNORED_VARIABLE } from '../proc';

/** What the launcher runs, and for which platform. */
export interface CliLauncherTarget {
  /** The editor's Node (Electron's, which runs as Node with ELECTRON_RUN_AS_NODE=1). */
  execPath: string;
  /** The bundled CLI (`dist/cli.js`). */
  cliScript: string;
  /** Default: this process's. */
  platform?: NodeJS.Platform;
  /** Whether `execPath` is Electron; default: whether this process runs in it. */
  electron?: boolean;
}

/**
 * Writes `agent-trees` (and `agent-trees.cmd` on Windows) into `dir`: a launcher that runs the bundled CLI with
 * the editor's own Node. Rewritten only when it changes (a new version, another editor). Returns `dir`.
 */
export function writeCliLauncher(dir: string, target: CliLauncherTarget): string {
  const { execPath, cliScript, platform = process.platform, electron = !!process.versions.electron } = target;
  fs.mkdirSync(dir, { recursive: true });
  const asNode = electron ? 'ELECTRON_RUN_AS_NODE=1 ' : '';
  const [name, text, mode] =
    platform === 'win32'
      ? [
          'agent-trees.cmd',
          `@echo off\r\nsetlocal\r\n${electron ? 'set ELECTRON_RUN_AS_NODE=1\r\n' : ''}"${execPath}" "${cliScript}" %*\r\n`,
          0o644,
        ]
      : [
          'agent-trees',
          `#!/bin/sh\n# Written by the Agent Trees extension: its command line, run with the editor's own Node.\n` +
            `${SIGHUP_CHECK}\n${asNode}exec ${shellQuote(execPath)} ${shellQuote(cliScript)} "$@"\n`,
          0o755,
        ];
  const file = path.join(dir, name);
  let current: string | undefined;
  try {
    current = fs.readFileSync(file, 'utf8');
  } catch {
    current = undefined;
  }
  if (current !== text) {
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, text, { mode });
    fs.renameSync(tmp, file);
  }
  return dir;
}

/**
 * The launcher tells the command line when it was started with SIGHUP ignored (`nohup`, `trap '' HUP`): Node
 * resets an inherited SIG_IGN at its start. Bit 0 of SigIgn in /proc/self/status is SIGHUP (Linux).
 */
const SIGHUP_CHECK =
  `if [ -r /proc/$$/status ]; then while read -r k v; do [ "$k" = SigIgn: ] && case $v in *[13579bdfBDF]) ` +
  `export ${SIGHUP_IGNORED_VARIABLE}=ignore;; esac; done < /proc/$$/status; fi`;

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
