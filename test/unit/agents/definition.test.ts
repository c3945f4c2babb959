/**
 * Agent definitions (src/agents/definition.ts, definitionSource.ts): what a definition must hold and what is wrong
 * when it does not, the variables it may use, and which settings level it is read from under workspace trust.
 */
import * as assert from 'assert';
import { expandVariables, validateDefinition, validateDefinitions } from '../../../src/agents/definition';
import { chooseDefinitions } from '../../../src/agents/definitionSource';

describe('agent definitions', () => {
  it('names the entry and the field that is wrong, and keeps the good entries', () => {
    const { agents, errors } = validateDefinitions([
      { name: 'good', command: 'claude', args: ['--print'], timeoutSeconds: 60, kind: 'agent' },
      { name: 'bad-timeout', command: 'x', timeoutSeconds: -1 },
      { command: 'no-name' },
      { name: 'bad-args', command: 'x', args: 'not an array' },
      { name: 'bad-kind', command: 'x', kind: 'daemon' },
      { name: 'typo', command: 'x', timeout: 5 },
      { name: 'good', command: 'duplicate' },
      'not an object',
    ]);
    assert.deepStrictEqual(
      agents.map((a) => a.name),
      ['good'],
    );
    assert.deepStrictEqual(
      errors.map((e) => e.message),
      [
        'agentTrees.agents[1] ("bad-timeout"): "timeoutSeconds" must be a number of seconds, 0 or more (0 = no timeout)',
        'agentTrees.agents[2]: "name" must be a non-empty string',
        'agentTrees.agents[3] ("bad-args"): "args" must be an array of strings',
        'agentTrees.agents[4] ("bad-kind"): "kind" must be "agent" or "mcp"',
        'agentTrees.agents[5] ("typo"): "timeout" is not a known field (known: name, command, args, cwd, env, timeoutSeconds, kind, terminal, showTerminal, attention, maxMemoryMB, maxProcesses, idleTimeoutSeconds)',
        'agentTrees.agents[6] ("good"): "name" is used by an earlier entry',
        'agentTrees.agents[7]: "(entry)" must be an object with at least "name" and "command"',
      ],
    );
    assert.throws(() => validateDefinition({ name: 'e', command: 'x', env: { A: 1 } }, 'arg'), /"env.A" must be a string/);
    assert.throws(
      () => validateDefinition({ name: 'w', command: 'x', attention: 'gemini' }, 'arg'),
      /"attention" must be "claude", "codex"/,
    );
    assert.strictEqual(validateDefinition({ name: 'c', command: 'my-claude-wrapper', attention: 'claude' }, 'arg').attention, 'claude');
    assert.match(validateDefinitions({}).errors[0].message, /must be an array/);
  });
});

describe('variables in agent definitions', () => {
  it('expands ${workspaceFolder}, ${userHome} and ${env:NAME}, and leaves unknown ones', () => {
    const def = expandVariables(
      {
        name: 'a',
        command: '${userHome}/bin/agent',
        args: ['${workspaceFolder}/x', '${env:TOKEN}', '${unknown}'],
        cwd: '${workspaceFolder}',
        env: { P: '${env:TOKEN}-1' },
      },
      { workspaceFolder: '/ws', userHome: '/home/me', env: { TOKEN: 't' } },
    );
    assert.deepStrictEqual(def, {
      name: 'a',
      command: '/home/me/bin/agent',
      args: ['/ws/x', 't', '${unknown}'],
      cwd: '/ws',
      env: { P: 't-1' },
    });
    assert.strictEqual(
      expandVariables({ name: 'b', command: '${workspaceFolder}/a' }, { userHome: '/h', env: {} }).command,
      '${workspaceFolder}/a',
    );
  });
});

describe('where agent definitions come from (workspace trust)', () => {
  const user = [{ name: 'u', command: 'user-cli' }];
  const workspace = [{ name: 'w', command: 'repo-cli' }];
  const folder = [{ name: 'f', command: 'folder-cli' }];
  const cases: {
    title: string;
    inspected: Parameters<typeof chooseDefinitions>[0];
    trusted: boolean;
    value: unknown;
    source: string;
    ignored: boolean;
  }[] = [
    {
      title: 'trusted: the workspace wins over the user',
      inspected: { defaultValue: [], globalValue: user, workspaceValue: workspace },
      trusted: true,
      value: workspace,
      source: 'workspace',
      ignored: false,
    },
    {
      title: 'trusted: a folder wins over the workspace',
      inspected: { globalValue: user, workspaceValue: workspace, workspaceFolderValue: folder },
      trusted: true,
      value: folder,
      source: 'workspace',
      ignored: false,
    },
    {
      title: 'untrusted: the user value, the workspace one left out',
      inspected: { defaultValue: [], globalValue: user, workspaceValue: workspace },
      trusted: false,
      value: user,
      source: 'user',
      ignored: true,
    },
    {
      title: 'untrusted: a folder value left out too',
      inspected: { globalValue: user, workspaceFolderValue: folder },
      trusted: false,
      value: user,
      source: 'user',
      ignored: true,
    },
    {
      title: 'untrusted, no user value: the default, never the workspace',
      inspected: { defaultValue: [], workspaceValue: workspace },
      trusted: false,
      value: [],
      source: 'default',
      ignored: true,
    },
    {
      title: 'untrusted, nothing from the workspace',
      inspected: { defaultValue: [], globalValue: user },
      trusted: false,
      value: user,
      source: 'user',
      ignored: false,
    },
    { title: 'nothing set at all', inspected: undefined, trusted: true, value: undefined, source: 'default', ignored: false },
  ];
  for (const c of cases) {
    it(c.title, () => {
      assert.deepStrictEqual(chooseDefinitions(c.inspected, c.trusted), {
        value: c.value,
        source: c.source,
        ignoredWorkspaceValue: c.ignored,
      });
    });
  }
});
