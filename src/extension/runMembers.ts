/**
 * The members of this host's runs when a caller needs them (the API's `list()`, a pick that counts processes),
 * read through the view's member source with a tracker of their own: the view's rules, at a cost that follows the
 * members. Nothing is read until asked.
 */
import { AgentRuns } from '../agents/runs';
import { MemberInfo, TreeMembersSource } from '../proc';

export class RunMembers {
  constructor(
    private readonly runs: AgentRuns,
    private readonly source: TreeMembersSource,
  ) {}

  /** The members of every live run now, by tree id (read on this thread: the API's `list()` cannot wait). */
  now(): Map<string, MemberInfo[]> {
    const owner = this.runs.owner;
    const queries = this.runs.running().flatMap((r) => owner.queryOf(r.id) ?? []);
    const members = new Map<string, MemberInfo[]>();
    if (queries.length === 0) return members;
    for (const t of this.source.queryNow(queries, 'api').trees) members.set(t.id, t.members);
    return members;
  }
}
