// Which program is which agent CLI (src/agents/attentionHooks.ts), proven on the real npm packages that
// scripts/test-tools.sh installs into .tools/agents (scripts/host/agentPackages.js) before this suite runs.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { cliOfExecutable } from '../../../src/agents/attentionHooks';
import { REPO } from '../../support/repo';
import { requireEnvironment } from '../../support/environment';

describe("which CLI an executable is, on the real agents' packages", () => {
  const agents = path.join(REPO, '.tools', 'agents', 'node_modules');
  const have = (rel: string) => fs.existsSync(path.join(agents, rel));

  it('proves Claude Code and Codex from their npm packages (bin links followed), and nothing else', function () {
    requireEnvironment(
      this,
      have('.bin/claude') && have('.bin/codex'),
      'the real claude and codex packages in .tools/agents (node scripts/host/agentPackages.js)',
    );
    assert.strictEqual(cliOfExecutable(path.join(agents, '.bin', 'claude')).cli, 'claude');
    assert.strictEqual(cliOfExecutable(path.join(agents, '@anthropic-ai', 'claude-code-linux-x64', 'claude')).cli, 'claude');
    assert.strictEqual(cliOfExecutable(path.join(agents, '.bin', 'codex')).cli, 'codex');
    assert.strictEqual(cliOfExecutable(path.join(agents, '.bin', 'mcp-server-filesystem')).cli, undefined);
    assert.match(cliOfExecutable(path.join(agents, '@anthropic-ai', 'claude-code', 'install.cjs')).why, /not its binary/);
  });
});
