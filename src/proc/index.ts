/**
 * The process-tree core, as the front ends (src/extension, src/cli) and the agent runs (src/agents) see it: they
 * import it from here only, and this exports by name exactly what they use (lint checks both). Pure Node: nothing
 * in src/proc imports `vscode`. docs/architecture.md explains the layers below.
 */
export { localSweepParts, processCore } from './core';
export { asWritten, counted, formatBytes, Localizer, Logger, processCount, silentLogger, stderrLogger } from './platform/log';
export { HOST_MARK_VARIABLE, SIGHUP_IGNORED_VARIABLE, WINDOW_TAG_VARIABLE } from './platform/processTable';
export { guardedPidOf } from './identity/guard';
export { OwnerInfo, OwnerState, ownerIsChildOf, selfIdentity } from './identity/ownerIdentity';
export { parseOwnerSpec, ProcessIdentity, processKey } from './identity/processIdentity';
export { CgroupMode } from './cgroup/probe';
export { RecordStore } from './records/claims';
export { classifyRecords, OwnerRecords } from './records/judge';
export { HostProcessesRecord, LIMIT_FIELDS, RecordFile, TreeLimits, TreeRecord } from './records/schema';
export { euid, makeFolders, readTrusted, UntrustedFileError } from './records/trustedFiles';
export { KillReport } from './kill/killTarget';
export { SpawnError } from './spawn/spawnError';
export { resolveExecutable } from './spawn/executable';
export { checkSpawn } from './spawn/spawnTree';
export { EscapeScanner, TerminalSignal } from './pty/escapeScanner';
export { FlowStats, TerminalFlow } from './pty/ptyFlow';
export { clampSize, PtyRoot } from './pty/ptyRoot';
export { ptyProblem } from './pty/spawnPtyTree';
export { inputEffect } from './pty/terminalInput';
export { DEFAULT_TERM, RESTORE_TERMINAL_MODES } from './pty/terminalModes';
export { endLeftovers, endTerminalTree } from './terminals/ending';
export { deferredLeftoversNow, liveOwnership, settleLeftovers, terminalLeftovers } from './terminals/leftovers';
export { readShell, TerminalQuery, TerminalShell } from './terminals/membership';
export { attribute, InstallFolder, OTHER_ID, VSCODE_ID } from './hostChildren/attribution';
export { endHostProcesses, endHostSubtrees, liveHostTarget } from './hostChildren/ending';
export { HostProcessPlace, LONG_LIVED_MS, placeHostProcesses, recordedHostProcesses } from './hostChildren/grouping';
export { hostMark, HostQuery } from './hostChildren/membership';
export { MemberInfo, recordedTreeQuery, TerminalMembers } from './tracking/listing';
export {
  Breach,
  breachText,
  BudgetUse,
  GivenLimits,
  LimitField,
  limitProblem,
  limitsOf,
  NEAR_LIMIT,
  nearestLimit,
  useOfMembers,
  usePart,
} from './budget/limits';
export { SNAPSHOT_WORKER, SourceStats, TreeMembersSource } from './tracking/treeMembersSource';
export { serveSnapshots } from './tracking/snapshotWorker';
export { killTreeById, listOwnedTrees } from './sweep/recordedTrees';
export { sweepOrphans, SweepResult } from './sweep/sweepOrphans';
export { OwnedTree, TreeOwner } from './owner/treeOwner';
export { awaitOwnerExit, ownerInfoOf, WATCHDOG_GRACE_MS } from './owner/watchdog';
export { WindowLease, windowKey } from './owner/windowLease';
