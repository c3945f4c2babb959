/**
 * VS Code's own MCP client and Agent Trees. VS Code starts stdio MCP servers as plain children of the extension
 * host and, when it stops one, closes stdin and waits 10 s before a SIGTERM to that one pid: grandchildren live
 * on. Here every server starts through `agent-trees run --mcp` (the bundled CLI, run by the extension host's own
 * Node, recording in this window's records folder), so it is an owned tree, and the end of its stdin ends the
 * whole tree at once.
 *
 * - On VS Code 1.101+ (detected at run time; 1.100 has the API only as a proposal) every `agentTrees.agents`
 *   entry of kind "mcp" is provided to the MCP client, and the provider says when the setting changes.
 * - "Copy MCP Wrapper Command" gives the command/args pair that wraps any server of an `mcp.json` the same way.
 * - The servers VS Code runs through the wrapper (trees whose owner is a child of this extension host) are
 *   listed for the view with their state; killing one ends its tree, its wrapper exits, and VS Code sees the
 *   server stop.
 */
import * as crypto from 'crypto';
import * as vscode from 'vscode';
import { limitsOfDefinition } from '../agents/definition';
import { resolveDefinition } from '../agents/resolveDefinition';
import { GivenLimits, OwnerInfo, ownerIsChildOf, processCore, RecordFile, RecordStore, TreeRecord } from '../proc';
import { Settings } from './settings';
import { launchContext } from './workspace';

// ---------------------------------------------------------------------------------------------- VS Code 1.101 API
// The MCP provider API is stable since VS Code 1.101 but absent from @types/vscode 1.100, which engines.vscode
// pins: the few types used here, as 1.101 declares them.

interface McpStdioServerDefinition {
  readonly label: string;
  cwd?: vscode.Uri;
  command: string;
  args: string[];
  env: Record<string, string | number | null>;
  version?: string;
}

type McpStdioServerDefinitionClass = new (
  label: string,
  command: string,
  args?: string[],
  env?: Record<string, string | number | null>,
  version?: string,
) => McpStdioServerDefinition;

interface McpServerDefinitionProvider {
  readonly onDidChangeMcpServerDefinitions?: vscode.Event<void>;
  provideMcpServerDefinitions(token: vscode.CancellationToken): vscode.ProviderResult<McpStdioServerDefinition[]>;
}

interface McpProviderApi {
  definitionClass: McpStdioServerDefinitionClass;
  register(id: string, provider: McpServerDefinitionProvider): vscode.Disposable;
}

/** The provider's id, as declared in package.json (`contributes.mcpServerDefinitionProviders`). */
const MCP_PROVIDER_ID = 'agentTrees.mcpServers';

/** The first VS Code whose extensions may provide MCP servers. */
const MCP_PROVIDER_SINCE = [1, 101];

/** The MCP provider API of this VS Code, or undefined before 1.101. */
function mcpProviderApi(): McpProviderApi | undefined {
  const [major, minor] = vscode.version.split('.').map(Number);
  if (major < MCP_PROVIDER_SINCE[0] || (major === MCP_PROVIDER_SINCE[0] && minor < MCP_PROVIDER_SINCE[1])) return undefined;
  const definitionClass = (vscode as unknown as { McpStdioServerDefinition?: McpStdioServerDefinitionClass }).McpStdioServerDefinition;
  const lm = vscode.lm as unknown as {
    registerMcpServerDefinitionProvider?: (id: string, provider: McpServerDefinitionProvider) => vscode.Disposable;
  };
  if (typeof definitionClass !== 'function' || typeof lm.registerMcpServerDefinitionProvider !== 'function') return undefined;
  return { definitionClass, register: (id, provider) => lm.registerMcpServerDefinitionProvider!(id, provider) };
}

// ---------------------------------------------------------------------------------------------- the wrapper

/** A command line that runs a stdio server as an owned tree: append the server's command and arguments to `args`. */
export interface McpWrapper {
  command: string;
  args: string[];
  /** Needed when `command` is the Electron binary of desktop VS Code; empty in a plain Node extension host. */
  env: Record<string, string>;
}

export interface McpServerState {
  /** The tree id. */
  id: string;
  name: string;
  state: 'running' | 'stopped' | 'killed';
  /** The `agent-trees run` wrapper VS Code started (the tree's owner). */
  owner: OwnerInfo;
  tree: TreeRecord;
  endedAt?: number;
}

export interface McpServersOptions {
  /** This window's records folder: the wrapper records there. */
  store: RecordStore;
  /** The bundled CLI (`dist/cli.js`). */
  cliPath: string;
  settings: () => Settings;
  /** The records of the other live owners in this window's records folder (read when it changes). */
  liveRecords: () => RecordFile[];
  log: vscode.LogOutputChannel;
}

/** How many ended servers stay listed. */
const KEEP_ENDED = 10;

export class McpServers implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly disposables: vscode.Disposable[] = [this.changed];
  private readonly api = mcpProviderApi();
  private lastDefinitions = '';
  private readonly known = new Map<string, McpServerState>();
  private seenRecords: RecordFile[] | undefined;

  private readonly store: RecordStore;
  private readonly cliPath: string;
  private readonly settings: () => Settings;
  private readonly liveRecords: () => RecordFile[];
  private readonly log: vscode.LogOutputChannel;

  constructor(options: McpServersOptions) {
    this.store = options.store;
    this.cliPath = options.cliPath;
    this.settings = options.settings;
    this.liveRecords = options.liveRecords;
    this.log = options.log;
    if (this.api) {
      this.lastDefinitions = JSON.stringify(this.definitions());
      this.disposables.push(
        this.api.register(MCP_PROVIDER_ID, {
          onDidChangeMcpServerDefinitions: this.changed.event,
          provideMcpServerDefinitions: () => this.definitions(),
        }),
      );
      this.log.info(`MCP: providing the servers of agentTrees.agents to VS Code ${vscode.version}, each through agent-trees run`);
    } else {
      this.log.info(`MCP: VS Code ${vscode.version} lets no extension provide MCP servers (1.101+); the wrapper command still works`);
    }
  }

  /** Whether the servers of `agentTrees.agents` are provided to VS Code's MCP client (VS Code 1.101+). */
  get providing(): boolean {
    return this.api !== undefined;
  }

  /**
   * The wrapper command: this extension host's Node (desktop VS Code's Electron runs as Node with
   * ELECTRON_RUN_AS_NODE=1) running the bundled CLI, recording in this window's records folder.
   */
  wrapper(options: { label?: string; timeoutSeconds?: number; limits?: GivenLimits } = {}): McpWrapper {
    const s = this.settings();
    const args = [this.cliPath, 'run', '--mcp', '--records', this.store.dir, '--grace', String(s.killGraceSeconds)];
    if (options.label) args.push('--label', options.label);
    if (options.timeoutSeconds) args.push('--timeout', String(options.timeoutSeconds));
    // The server's own limits, else agentTrees.limits.*: the wrapper holds them (`--max-memory` ...).
    const limits = limitsOfDefinition(options.limits ?? {}, s.limits) ?? {};
    for (const [option, value] of [
      ['--max-memory', limits.maxMemoryMB],
      ['--max-processes', limits.maxProcesses],
      ['--idle-timeout', limits.idleTimeoutSeconds],
    ] as const) {
      if (value) args.push(option, String(value));
    }
    if (s.cgroups === 'off') args.push('--no-cgroup');
    args.push('--');
    return { command: process.execPath, args, env: process.versions.electron ? { ELECTRON_RUN_AS_NODE: '1' } : {} };
  }

  /** The text "Copy MCP Wrapper Command" puts on the clipboard: the members of an `mcp.json` server entry. */
  wrapperText(): string {
    const w = this.wrapper();
    const members = [`"command": ${JSON.stringify(w.command)}`, `"args": ${JSON.stringify(w.args)}`];
    if (Object.keys(w.env).length) members.push(`"env": ${JSON.stringify(w.env)}`);
    return members.join(',\n');
  }

  /** The MCP server definitions of `agentTrees.agents` (kind "mcp"), each wrapped in `agent-trees run`. */
  private definitions(): McpStdioServerDefinition[] {
    if (!this.api) return [];
    const s = this.settings();
    const context = launchContext();
    return s.agents
      .filter((a) => a.kind === 'mcp')
      .map((raw) => {
        const { definition: def, defaultCwd } = resolveDefinition(raw, context);
        // Servers VS Code runs live as long as it wants them: only a timeout of their own applies.
        const w = this.wrapper({ label: def.name, timeoutSeconds: def.timeoutSeconds, limits: def });
        const env: Record<string, string> = { ...w.env, ...(def.env ?? {}) };
        const args = [...w.args, def.command, ...(def.args ?? [])];
        // A changed definition is a new version: VS Code refreshes the server's tools.
        const version = crypto
          .createHash('sha256')
          .update(JSON.stringify([args, env, def.cwd ?? null]))
          .digest('hex')
          .slice(0, 16);
        const server = new this.api!.definitionClass(def.name, w.command, args, env, version);
        const cwd = def.cwd ?? defaultCwd;
        if (cwd) server.cwd = vscode.Uri.file(cwd);
        return server;
      });
  }

  /** Tells VS Code when the definitions changed (settings, workspace folders). */
  definitionsMayHaveChanged(): void {
    if (!this.api) return;
    const now = JSON.stringify(this.definitions());
    if (now === this.lastDefinitions) return;
    this.lastDefinitions = now;
    this.log.info('MCP: the servers of agentTrees.agents changed; VS Code is told');
    this.changed.fire();
  }

  // -------------------------------------------------------------------------------------------- servers running

  /**
   * The servers VS Code runs through the wrapper in this window: trees recorded by a live `agent-trees run` that is a
   * child of this extension host (VS Code starts stdio servers from it). Looked at again when the live records
   * change; a server whose wrapper is no longer among them has stopped. Ended servers stay listed a while.
   */
  servers(): McpServerState[] {
    const live = this.liveRecords();
    if (live !== this.seenRecords) {
      this.seenRecords = live;
      const running = new Set<string>();
      for (const { record } of live) {
        if (!ownerIsChildOf(record.owner, process.pid, processCore().table)) continue;
        for (const tree of record.trees) {
          running.add(tree.id);
          if (!this.known.has(tree.id))
            this.known.set(tree.id, { id: tree.id, name: tree.label, state: 'running', owner: record.owner, tree });
        }
      }
      for (const server of this.known.values())
        if (server.state === 'running' && !running.has(server.id)) this.markEnded(server, 'stopped');
    }
    const ended = [...this.known.values()].filter((s) => s.state !== 'running').sort((a, b) => (b.endedAt ?? 0) - (a.endedAt ?? 0));
    for (const s of ended.slice(KEEP_ENDED)) this.known.delete(s.id);
    return [...this.known.values()];
  }

  /** Whether a tree is one of these servers. */
  has(treeId: string): boolean {
    return this.known.has(treeId);
  }

  /** Kill from the view ended a server's tree: its wrapper exits next, and VS Code sees the server stop. */
  noteKilled(treeId: string): void {
    const server = this.known.get(treeId);
    if (server) this.markEnded(server, 'killed');
  }

  private markEnded(server: McpServerState, state: 'stopped' | 'killed'): void {
    if (server.state !== 'running') return;
    server.state = state;
    server.endedAt = Date.now();
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
