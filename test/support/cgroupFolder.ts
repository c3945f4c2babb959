/** A synthetic cgroup v2 folder, for the kernel lines of a budget where the hierarchy offers no such controller. */
import * as fs from 'fs';
import * as path from 'path';
import { tmpDir } from './repo';

/** A folder shaped like a cgroup v2 base offering memory and pids, with one tree cgroup in it. */
export function syntheticCgroup(): { base: string; tree: string } {
  const base = tmpDir('agent-trees-cgroup2-');
  fs.writeFileSync(path.join(base, 'cgroup.controllers'), 'cpuset cpu io memory hugetlb pids rdma misc\n');
  fs.writeFileSync(path.join(base, 'cgroup.subtree_control'), 'cpu\n');
  const tree = path.join(base, 'tree-abc123');
  fs.mkdirSync(tree);
  const files: Record<string, string> = {
    'cgroup.procs': '',
    'memory.max': 'max\n',
    'memory.oom.group': '0\n',
    'memory.swap.max': 'max\n',
    'memory.events': 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n',
    'memory.peak': '0\n',
    'pids.max': 'max\n',
  };
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(tree, name), text);
  return { base, tree };
}
