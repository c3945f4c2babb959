/**
 * The parts the controller builds, as one shape: the commands, the API and the test hooks each take the few they
 * use (`Pick<ExtensionParts, ...>`), so what each depends on is written where it is used, once.
 */
import type * as vscode from 'vscode';
import type { AgentRuns } from '../agents/runs';
import type { WaitingAgents } from './attention';
import type { TreeMembersSource, TreeOwner } from '../proc';
import type { Launcher } from './launcher';
import type { McpServers } from './mcp';
import type { OtherExtensions } from './otherExtensions';
import type { OwnerRecordsReader } from './ownerRecords';
import type { Picks } from './picks';
import type { RunMembers } from './runMembers';
import type { Settings } from './settings';
import type { DeadlineStatusBar } from './statusBar';
import type { Sweeper } from './sweeper';
import type { AgentTerminals } from './terminal';
import type { WindowTerminals } from './terminalTrees';
import type { ProcessTreeProvider, Row } from './treeView';
import type { ViewRefresh } from './viewRefresh';

export interface ExtensionParts {
  log: vscode.LogOutputChannel;
  /** The `agentTrees.*` settings as last read. */
  settings: () => Settings;
  /** This extension host's tree owner: spawns, records and kills its trees. */
  owner: TreeOwner;
  runs: AgentRuns;
  /** The agent terminals (one per run that shows one). */
  terminals: AgentTerminals;
  /** The window's own terminals and what their shells leave. */
  windowTerminals: WindowTerminals;
  /** The records folder as the view and the terminals read it. */
  records: OwnerRecordsReader;
  /** The members of every tree shown, read once per refresh. */
  source: TreeMembersSource;
  runMembers: RunMembers;
  mcp: McpServers;
  /** Other extensions' processes of this extension host: found, shown, recorded, ended when asked. */
  otherExtensions: OtherExtensions;
  provider: ProcessTreeProvider;
  view: vscode.TreeView<Row>;
  viewRefresh: ViewRefresh;
  statusBar: DeadlineStatusBar;
  sweeper: Sweeper;
  launcher: Launcher;
  picks: Picks;
  /** Agents waiting for you: the status bar count, the notifications, the hook channel. */
  waiting: WaitingAgents;
}
