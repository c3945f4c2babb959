/**
 * The process-tree core: spawning, finding, killing, recording and sweeping owned trees.
 * Pure Node: nothing here imports `vscode`, so the CLI, the extension and plain mocha all use it as it is.
 */
export * from './processTable';
export * from './bootClock';
export * from './identity';
export * from './records';
export * from './members';
export * from './kill';
export * from './spawn';
export * from './owner';
export * from './sweep';
export * from './log';
export { CgroupMode, CgroupTier, cgroupTier, probeCgroupTier } from './cgroup';
export * from './treeMembers';
export * from './treeMembersSource';
export * from './terminalTrees';
export * from './recordOwners';
