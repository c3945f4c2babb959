/**
 * The process-tree core: spawning, finding, killing, recording and sweeping owned trees.
 * Pure Node: nothing here imports `vscode`, so the CLI, the extension and plain mocha all use it as it is.
 */
export * from './platform/processTable';
export * from './platform/createProcessTable';
export * from './platform/linuxProcessTable';
export * from './platform/macProcessTable';
export * from './platform/windowsProcessTable';
export * from './platform/procParsers';
export * from './platform/execAsync';
export * from './platform/bootClock';
export * from './identity/ownerIdentity';
export * from './identity/startTimes';
export * from './identity/processIdentity';
export * from './platform/pidPresence';
export * from './records/schema';
export * from './records/fileNames';
export * from './records/trustedFiles';
export * from './records/store';
export * from './records/claims';
export * from './records/previousRecord';
export * from './members/membership';
export * from './members/treeMembers';
export * from './members/subtreeMembers';
export * from './kill/killTarget';
export * from './platform/signaller';
export * from './identity/guard';
export * from './kill/posixKill';
export * from './kill/windowsKill';
export * from './kill/treeKiller';
export * from './core';
export * from './spawn';
export * from './pty';
export * from './ptyFlow';
export * from './owner';
export * from './sweep';
export * from './recordedTrees';
export * from './platform/log';
export { CgroupLocation, CgroupMode, CgroupProbeDeps, CgroupProbeResult, CgroupProber, CgroupTier, cgroup2Mount, probeCgroupTier } from './cgroup/probe';
export { CgroupControl, cgroupVerified } from './cgroup/treeCgroup';
export * from './treeMembers';
export * from './treeMembersSource';
export * from './terminalTrees';
export * from './records/judge';
export * from './watchdog';
export * from './takeover';
export * from './memberTracker';
