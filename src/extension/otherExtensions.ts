/**
 * Other extensions' processes: everything this extension host started that is not Agent Trees' own (Claude
 * Code's `claude` and its MCP servers, Codex's app-server, language servers), found by the core's host rules
 * (src/proc/hostChildren), attributed to the extension whose install folder holds what each runs, shown in the
 * view, and recorded so that nothing of it outlives the host: the watchdog, or any sweep, ends what is left once
 * the host is gone (`agentTrees.otherExtensions.mode`: "end"), but the kept extensions'. While the host lives,
 * nothing of theirs is ended unless the user asks.
 *
 * The mark: at activation, `AGENT_TREES_HOST=<host pid>:<start key>` is put in this host's own environment, so
 * every process the host starts from then on inherits it (terminals do not: the pty host starts them). `env -i`,
 * or an extension that gives its child an environment of its own, defeats it: such a process is found only while
 * its parent chain leads to the host, and by what was seen of it before.
 */
import * as fs from 'fs';
import * as vscode from 'vscode';
import {
  attribute,
  endHostProcesses,
  endHostSubtrees,
  HOST_MARK_VARIABLE,
  hostMark,
  HostProcessesRecord,
  HostProcessPlace,
  HostQuery,
  InstallFolder,
  KillReport,
  liveHostTarget,
  MemberInfo,
  placeHostProcesses,
  processCore,
  ProcessIdentity,
  processKey,
  recordedHostProcesses,
  TreeOwner,
  VSCODE_ID,
} from '../proc';
import { otherExtensionsInput, OtherExtensionInput } from './otherExtensionsInput';
import type { Settings } from './settings';

export interface OtherExtensionsDeps {
  owner: TreeOwner;
  settings: () => Settings;
  log: vscode.LogOutputChannel;
  /** Agent Trees itself: its own processes (the CLI it runs) are never another extension's. */
  self: { id: string; folder: string };
}

/** What the last look found: the host's processes and whose each is. */
interface Look {
  takenAt: number;
  members: MemberInfo[];
  places: Map<string, HostProcessPlace>;
}

/** The extensions' folders, as given and as the file system resolves them (the kernel names executables resolved). */
function installFolders(): InstallFolder[] {
  const out: InstallFolder[] = [];
  for (const e of vscode.extensions.all) {
    out.push({ id: e.id, folder: e.extensionPath });
    try {
      const real = fs.realpathSync(e.extensionPath);
      if (real !== e.extensionPath) out.push({ id: e.id, folder: real });
    } catch {
      /* a folder that cannot be resolved is matched as given */
    }
  }
  return out;
}

export class OtherExtensions implements vscode.Disposable {
  /** This host's mark, or undefined where processes cannot be proven this way (not Linux, no start key). */
  readonly mark: string | undefined;
  private readonly host: ProcessIdentity | undefined;
  /**
   * Resolved when first needed (a look that attributes a process), not in activation: resolving every extension's
   * folder, built-in ones included, was a sixth of activate() here.
   */
  private resolvedFolders: InstallFolder[] | undefined;
  /** Whose each process seen is (by key), kept while it runs: it stays its extension's after its parent exited. */
  private remembered = new Map<string, string>();
  private last: Look | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Whether what the view shows of other extensions changed (an extension's processes came or went). */
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.changed];
  private shownSignature = '';
  /** This host's window went to a newer host (the takeover): what was left is ended, and nothing is recorded any more. */
  private handedOver = false;

  constructor(private readonly deps: OtherExtensionsDeps) {
    const me = process.platform === 'linux' ? processCore().table.read(process.pid) : undefined;
    this.host = me && me.startKey > 0 ? { pid: me.pid, startKey: me.startKey } : undefined;
    this.mark = this.host && hostMark(this.host);
    this.disposables.push(vscode.extensions.onDidChange(() => (this.resolvedFolders = undefined)));
    this.applyMark();
    // The record, and the watchdog its first write starts, right after activation rather than in it (a third of
    // activate() here): the mark is in this host's environment from now on, so what starts meanwhile carries it.
    const first = setImmediate(() => this.apply());
    this.disposables.push({ dispose: () => clearImmediate(first) });
  }

  /** Puts the mark in this host's environment, or takes it out ("off"). */
  private applyMark(): void {
    if (this.enabled) process.env[HOST_MARK_VARIABLE] = this.mark;
    else delete process.env[HOST_MARK_VARIABLE];
  }

  private get mode(): Settings['otherExtensionsMode'] {
    return this.deps.settings().otherExtensionsMode;
  }

  /** Whether other extensions' processes are tracked and shown (`agentTrees.otherExtensions.mode` is not "off"). */
  get enabled(): boolean {
    return this.mark !== undefined && this.mode !== 'off';
  }

  /**
   * Puts the mark in this host's environment (or takes it out, "off"), and what the record names in line with the
   * settings: call at activation and whenever they change.
   */
  apply(): void {
    this.applyMark();
    if (!this.enabled) {
      this.last = undefined;
      this.remembered.clear();
    }
    this.record();
    this.fireIfShownChanged();
  }

  /** What the next look asks for (undefined: nothing, "off"). */
  query(): HostQuery | undefined {
    if (!this.enabled || !this.host || !this.mark) return undefined;
    const { owner } = this.deps;
    const exclude = owner.list().map((t) => `${t.record.rootPid}:${t.record.rootStartTicks}`);
    const watchdog = owner.watchdogPid;
    const w = watchdog === undefined ? undefined : owner.core.table.read(watchdog);
    if (w) exclude.push(processKey(w));
    return { host: this.host, mark: this.mark, seen: [...this.remembered.keys()], exclude };
  }

  /** Takes in a look's answer: whose each process is, what the view shows, and what the record names. */
  observe(found: { members: MemberInfo[] } | undefined, takenAt: number): void {
    if (!found || !this.enabled || !this.host) return;
    const places = placeHostProcesses(found.members, this.host.pid, this.remembered, (top) =>
      attribute({ exe: top.exe, command: top.command }, (this.resolvedFolders ??= installFolders()), vscode.env.appRoot),
    );
    this.remembered = new Map([...places].map(([key, place]) => [key, place.extensionId]));
    this.last = { takenAt, members: found.members, places };
    this.record();
    this.fireIfShownChanged();
  }

  /** The view's section: one entry per extension with processes, in the order shown; undefined when "off". */
  viewInput(): OtherExtensionInput[] | undefined {
    if (!this.enabled) return undefined;
    if (!this.last) return [];
    return otherExtensionsInput(this.last.members, this.last.places, {
      takenAt: this.last.takenAt,
      skip: this.deps.self.id,
      nameOf: (id) => this.nameOf(id),
    });
  }

  /** How an extension (or `vscode`, `other`) is named to the user. */
  nameOf(id: string): string {
    if (id === VSCODE_ID) return 'VS Code';
    const ext = vscode.extensions.getExtension(id);
    const name = (ext?.packageJSON as { displayName?: unknown } | undefined)?.displayName;
    if (typeof name === 'string' && name && !name.startsWith('%')) return name;
    return ext ? id : vscode.l10n.t('Other processes');
  }

  /** Whether the record names processes that would be ended when this host goes ("end", and not all kept). */
  endsSomething(): boolean {
    const recorded = this.recorded();
    if (!recorded) return false;
    const kept = new Set(recorded.keep.map((k) => k.extensionId));
    return recorded.seen.some((s) => !kept.has(s.extensionId));
  }

  /** What the record names now (for tests and tooling). */
  recorded(): HostProcessesRecord | undefined {
    return this.deps.owner.hostProcesses;
  }

  private fireIfShownChanged(): void {
    const shown = (this.viewInput() ?? []).map((e) => `${e.id}:${e.members.length}:${e.left.length}`).join('|');
    if (shown === this.shownSignature) return;
    this.shownSignature = shown;
    this.changed.fire();
  }

  /**
   * The record: in "end", the mark, the long-lived processes seen and the kept extensions, so that the watchdog
   * ends the rest once this host is gone; otherwise nothing (nothing of theirs is ended).
   */
  private record(): void {
    const { owner, self } = this.deps;
    if (this.mode !== 'end' || !this.mark || this.handedOver) {
      owner.setHostProcesses(undefined);
      return;
    }
    const seen = this.last ? recordedHostProcesses(this.last.members, this.last.places, { takenAt: this.last.takenAt, skip: self.id }) : [];
    owner.setHostProcesses({ mark: this.mark, seen, keep: this.keptFolders() });
  }

  /** Agent Trees itself and the kept extensions (`agentTrees.otherExtensions.keep`), with their folders. */
  private keptFolders(): HostProcessesRecord['keep'] {
    const { self } = this.deps;
    const keep = [{ extensionId: self.id, folder: self.folder }];
    for (const id of new Set(this.deps.settings().otherExtensionsKeep)) {
      if (id === self.id) continue;
      const folder = id === VSCODE_ID ? vscode.env.appRoot : vscode.extensions.getExtension(id)?.extensionPath;
      if (folder?.startsWith('/')) keep.push({ extensionId: id, folder });
    }
    return keep;
  }

  /** Ends processes of the host's and their descendants, each if still the process seen and the host's (the user asked). */
  async endProcesses(roots: ProcessIdentity[], id: string): Promise<KillReport> {
    const query = this.query();
    const core = processCore();
    if (!query)
      return { treeId: id, signalled: 0, survivors: 0, survivorPids: [], escalated: false, refused: ['other extensions are not tracked'] };
    return endHostSubtrees(core.table.snapshot(), { query, roots, id }, core, {
      killer: core.killer,
      graceMs: this.deps.settings().killGraceSeconds * 1000,
      log: this.deps.log,
    });
  }

  /** The processes of one extension shown now, as roots: its host children and what their exits left. */
  rootsOf(extensionId: string, which: 'all' | 'left'): ProcessIdentity[] {
    const entry = this.viewInput()?.find((e) => e.id === extensionId);
    if (!entry) return [];
    const list = which === 'left' ? entry.left : [...entry.members, ...entry.left];
    const pids = new Set(list.map((p) => p.pid));
    return list.filter((p) => !pids.has(p.ppid)).map((p) => ({ pid: p.pid, startKey: p.startKey }));
  }

  /**
   * This host's window is gone and a newer host serves it (the takeover): its other extensions' processes end as
   * they would once it is gone, but the kept extensions', and its record names them no more (it goes with its
   * trees), as it hands its trees over. Nothing is ended in "keep" or "off".
   */
  async endAll(graceMs: number): Promise<number> {
    const query = this.query();
    const recorded = this.recorded();
    this.handedOver = true;
    this.record();
    if (this.mode !== 'end' || !query || !recorded) return 0;
    const core = processCore();
    const target = liveHostTarget(query, recorded, Object.fromEntries(this.remembered));
    const ending = await endHostProcesses(core.table.snapshot(), target, core, { killer: core.killer, graceMs, log: this.deps.log });
    return ending.report.signalled;
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
