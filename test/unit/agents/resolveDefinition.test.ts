import * as assert from 'assert';
import { AgentDefinition, DefinitionError, timeoutSecondsOf, validateDefinitions } from '../../../src/agents/definition';
import {
  commandLineDefinition,
  ConfiguredAgents,
  findAgent,
  launchableAgents,
  LaunchContext,
  resolveDefinition,
} from '../../../src/agents/resolveDefinition';

describe('what a launch runs: agent names', () => {
  const { agents, errors } = validateDefinitions([
    { name: 'claude', command: 'claude' },
    { name: 'broken', command: 'x', timeoutSeconds: -1 },
    { name: 'a', command: 'x', kind: 'daemon' },
  ]);
  const configured = (workspaceTrusted: boolean): ConfiguredAgents => ({
    agents,
    agentErrors: errors,
    agentsFrom: 'user',
    workspaceTrusted,
  });
  const cases: { title: string; name: string; trusted: boolean; expect: 'found' | 'invalid' | 'missing'; detail?: unknown }[] = [
    { title: 'a good entry is found', name: 'claude', trusted: true, expect: 'found', detail: 'claude' },
    {
      title: 'a bad entry of that name: its error, naming the field',
      name: 'broken',
      trusted: true,
      expect: 'invalid',
      detail: 'timeoutSeconds',
    },
    { title: 'each bad entry has its own error', name: 'a', trusted: true, expect: 'invalid', detail: 'kind' },
    {
      title: 'a name that is part of a bad one is not that one',
      name: 'broke',
      trusted: true,
      expect: 'missing',
      detail: { restricted: false },
    },
    { title: 'no such entry, trusted workspace', name: 'codex', trusted: true, expect: 'missing', detail: { restricted: false } },
    {
      title: 'no such entry, Restricted Mode: says only the user settings counted',
      name: 'codex',
      trusted: false,
      expect: 'missing',
      detail: { restricted: true },
    },
    {
      title: 'names are exact (no trimming, no case folding)',
      name: 'Claude',
      trusted: true,
      expect: 'missing',
      detail: { restricted: false },
    },
  ];
  for (const c of cases) {
    it(c.title, () => {
      const r = findAgent(c.name, configured(c.trusted));
      if (c.expect === 'found') assert.strictEqual('found' in r && r.found.command, c.detail);
      if (c.expect === 'invalid') assert.strictEqual('invalid' in r && r.invalid instanceof DefinitionError && r.invalid.field, c.detail);
      if (c.expect === 'missing') assert.deepStrictEqual('missing' in r && r.missing, c.detail);
    });
  }

  it('launchable agents say which settings level defines them (the default counts as the user)', () => {
    const levels: [ConfiguredAgents['agentsFrom'], string][] = [
      ['user', 'user'],
      ['workspace', 'workspace'],
      ['default', 'user'],
    ];
    for (const [agentsFrom, from] of levels) {
      assert.deepStrictEqual(
        launchableAgents({ agents, agentsFrom }).map((a) => [a.definition.name, a.from]),
        [['claude', from]],
        agentsFrom,
      );
    }
  });

  it("a bad entry of a name is that name's error even when a later good one has it; quotes match no name by accident", () => {
    const { agents, errors } = validateDefinitions([
      { name: 'dup', command: 'x', kind: 'bad' },
      { name: 'dup', command: 'y' },
      { name: 'z', command: 'z' },
      { name: 'z', command: 'w' },
    ]);
    const configured = { agents, agentErrors: errors, agentsFrom: 'user' as const, workspaceTrusted: true };
    const dup = findAgent('dup', configured);
    assert.strictEqual('found' in dup && dup.found.command, 'y', 'the good one of two with that name');
    const z = findAgent('z', configured);
    assert.strictEqual('found' in z && z.found.command, 'z', 'the first of two good ones');
    const quote = findAgent('") ("z', configured);
    assert.ok('missing' in quote, 'quotes in a name match no entry by accident');
  });
});

describe('what a launch runs: variables and folders', () => {
  const base: AgentDefinition = { name: 'a', command: 'agent' };
  const context = (workspaceFolders: string[]): LaunchContext => ({ workspaceFolders, userHome: '/home/me', env: { TOKEN: 't' } });
  const cases: {
    title: string;
    def: Partial<AgentDefinition>;
    folders: string[];
    expect: Partial<AgentDefinition>;
    defaultCwd: string | undefined;
  }[] = [
    {
      title: 'no cwd: runs in the first workspace folder',
      def: {},
      folders: ['/ws', '/other'],
      expect: { cwd: undefined },
      defaultCwd: '/ws',
    },
    {
      title: 'a relative cwd is relative to the first folder',
      def: { cwd: 'sub/dir' },
      folders: ['/ws', '/other'],
      expect: { cwd: '/ws/sub/dir' },
      defaultCwd: '/ws',
    },
    { title: 'an absolute cwd stays', def: { cwd: '/tmp/x' }, folders: ['/ws'], expect: { cwd: '/tmp/x' }, defaultCwd: '/ws' },
    {
      title: 'variables in cwd, then made absolute',
      def: { cwd: '${env:TOKEN}/d' },
      folders: ['/ws'],
      expect: { cwd: '/ws/t/d' },
      defaultCwd: '/ws',
    },
    {
      title: '${workspaceFolder} in cwd',
      def: { cwd: '${workspaceFolder}/d' },
      folders: ['/ws'],
      expect: { cwd: '/ws/d' },
      defaultCwd: '/ws',
    },
    {
      title: 'no folder open: a relative cwd stays relative',
      def: { cwd: 'sub' },
      folders: [],
      expect: { cwd: 'sub' },
      defaultCwd: undefined,
    },
    {
      title: 'no folder open: ${workspaceFolder} stays as written',
      def: { command: '${workspaceFolder}/bin/a' },
      folders: [],
      expect: { command: '${workspaceFolder}/bin/a' },
      defaultCwd: undefined,
    },
    {
      title: 'command, args and env values are expanded; unknown variables stay; a missing env variable is empty',
      def: {
        command: '${userHome}/bin/a',
        args: ['${workspaceFolder}', '${env:TOKEN}', '${env:NOPE}', '${unknown}'],
        env: { P: '${env:TOKEN}-1' },
      },
      folders: ['/ws'],
      expect: { command: '/home/me/bin/a', args: ['/ws', 't', '', '${unknown}'], env: { P: 't-1' } },
      defaultCwd: '/ws',
    },
    {
      title: 'the other fields pass through',
      def: { timeoutSeconds: 0, kind: 'mcp', terminal: 'pipe', showTerminal: true },
      folders: [],
      expect: { timeoutSeconds: 0, kind: 'mcp', terminal: 'pipe', showTerminal: true },
      defaultCwd: undefined,
    },
  ];
  for (const c of cases) {
    it(c.title, () => {
      const r = resolveDefinition({ ...base, ...c.def }, context(c.folders));
      for (const [key, value] of Object.entries(c.expect)) assert.deepStrictEqual(r.definition[key as keyof AgentDefinition], value, key);
      assert.strictEqual(r.defaultCwd, c.defaultCwd);
    });
  }

  it('leaves the definition it was given as it was', () => {
    const def: AgentDefinition = { name: 'a', command: '${userHome}/a', cwd: 'rel', args: ['${userHome}'] };
    const copy = structuredClone(def);
    resolveDefinition(def, context(['/ws']));
    assert.deepStrictEqual(def, copy);
  });

  // Values that hold variables or shell syntax: expanded once, never run. Each case gives the whole definition
  // the launch runs (undefined fields left out) and the folder it runs in when the definition names none.
  const holdsVar = '${workspaceFolder}/${userHome}/${env:HOME}';
  const holdsShell = '$(touch /tmp/agent-trees-pwn)`touch /tmp/agent-trees-pwn`';
  const env = { HOLDS_VAR: holdsVar, HOLDS_SHELL: holdsShell, EMPTY: '' };
  const twoFolders: LaunchContext = { workspaceFolders: ['/ws/one', '/ws/two'], userHome: '/home/u', env };
  const literalCases: { title: string; def: AgentDefinition; context?: LaunchContext; definition: AgentDefinition; defaultCwd?: string }[] =
    [
      {
        title: '${env:X} holding ${workspaceFolder}: expanded once, the value stays as written',
        def: {
          name: 'a',
          command: '${env:HOLDS_VAR}',
          args: ['${env:HOLDS_VAR}'],
          cwd: '${env:HOLDS_VAR}',
          env: { V: '${env:HOLDS_VAR}' },
        },
        definition: { name: 'a', command: holdsVar, args: [holdsVar], cwd: `/ws/one/${holdsVar}`, env: { V: holdsVar } },
        defaultCwd: '/ws/one',
      },
      {
        title: '${env:X} holding $(...) and backquotes: a literal, no shell',
        def: { name: 'a', command: 'echo', args: ['${env:HOLDS_SHELL}'] },
        definition: { name: 'a', command: 'echo', args: [holdsShell] },
        defaultCwd: '/ws/one',
      },
      {
        title: 'unknown variables stay as written',
        def: { name: 'a', command: 'x', args: ['${workspaceFolderBasename}', '${env:}', '${env:1X}', '${config:a.b}', '${ env:HOME }'] },
        definition: {
          name: 'a',
          command: 'x',
          args: ['${workspaceFolderBasename}', '${env:}', '${env:1X}', '${config:a.b}', '${ env:HOME }'],
        },
        defaultCwd: '/ws/one',
      },
      {
        title: 'a relative cwd with .. may leave the first workspace folder',
        def: { name: 'a', command: 'x', cwd: '../../etc' },
        definition: { name: 'a', command: 'x', cwd: '/etc' },
        defaultCwd: '/ws/one',
      },
      {
        title: 'without a workspace folder ${workspaceFolder} and a relative cwd stay as written',
        def: { name: 'a', command: 'x', cwd: 'sub', args: ['${workspaceFolder}'] },
        context: { workspaceFolders: [], userHome: '/home/u', env },
        definition: { name: 'a', command: 'x', cwd: 'sub', args: ['${workspaceFolder}'] },
        defaultCwd: undefined,
      },
      {
        title: 'an unset variable expands to nothing',
        def: { name: 'a', command: 'x', args: ['${env:NOT_SET_ANYWHERE}', '${env:EMPTY}'] },
        definition: { name: 'a', command: 'x', args: ['', ''] },
        defaultCwd: '/ws/one',
      },
    ];
  /** The definition without its undefined fields. */
  const defined = (d: AgentDefinition) => Object.fromEntries(Object.entries(d).filter(([, v]) => v !== undefined));
  for (const c of literalCases) {
    it(c.title, () => {
      const r = resolveDefinition(c.def, c.context ?? twoFolders);
      assert.deepStrictEqual(defined(r.definition), c.definition);
      assert.strictEqual(r.defaultCwd, c.defaultCwd);
    });
  }
});

describe('what a launch runs: a typed command line', () => {
  const cases: { title: string; line: string; platform: NodeJS.Platform; env: NodeJS.ProcessEnv; expect: AgentDefinition }[] = [
    {
      title: 'POSIX: /bin/sh -c, named by its first word',
      line: 'claude --print "fix the tests"',
      platform: 'linux',
      env: {},
      expect: { name: 'claude', command: '/bin/sh', args: ['-c', 'claude --print "fix the tests"'] },
    },
    {
      title: 'a path: named by its file name',
      line: '/usr/local/bin/codex exec',
      platform: 'darwin',
      env: {},
      expect: { name: 'codex', command: '/bin/sh', args: ['-c', '/usr/local/bin/codex exec'] },
    },
    {
      title: 'surrounding blanks are not part of it',
      line: '  aider --yes \t',
      platform: 'linux',
      env: {},
      expect: { name: 'aider', command: '/bin/sh', args: ['-c', 'aider --yes'] },
    },
    {
      title: 'Windows: %ComSpec% /d /s /c, a backslash path named by its file name',
      line: 'C:\\tools\\agent.exe run',
      platform: 'win32',
      env: { ComSpec: 'C:\\Windows\\system32\\cmd.exe' },
      expect: { name: 'agent.exe', command: 'C:\\Windows\\system32\\cmd.exe', args: ['/d', '/s', '/c', 'C:\\tools\\agent.exe run'] },
    },
    {
      title: 'Windows without ComSpec: cmd.exe',
      line: 'npx @anthropic-ai/claude-code',
      platform: 'win32',
      env: {},
      expect: { name: 'npx', command: 'cmd.exe', args: ['/d', '/s', '/c', 'npx @anthropic-ai/claude-code'] },
    },
    {
      title: 'a first word that ends in a separator: the whole line names it',
      line: './',
      platform: 'linux',
      env: {},
      expect: { name: './', command: '/bin/sh', args: ['-c', './'] },
    },
  ];
  for (const c of cases) {
    it(c.title, () => assert.deepStrictEqual(commandLineDefinition(c.line, c.platform, c.env), c.expect));
  }

  it('a quoted first word is one word, named by its file name', () => {
    const names: [string, NodeJS.Platform, string][] = [
      [`'/opt/my tool/bin/agent' --x`, 'linux', 'agent'],
      [`"/opt/my tool/bin/agent" --x`, 'darwin', 'agent'],
      [`"C:\\Program Files\\Agent\\agent.exe" run`, 'win32', 'agent.exe'],
      [`'C:\\x y\\a.exe' run`, 'win32', 'x'], // cmd.exe does not quote with '
      [`"unterminated --x`, 'linux', '"unterminated'],
    ];
    for (const [line, platform, name] of names) assert.strictEqual(commandLineDefinition(line, platform, {}).name, name, line);
  });

  it('Windows: the line for cmd /d /s /c, %ComSpec% when set', () => {
    const line = '"C:\\Program Files\\tool.exe" --say "a b"';
    assert.deepStrictEqual(commandLineDefinition(line, 'win32', { ComSpec: 'C:\\Windows\\system32\\cmd.exe' }), {
      name: 'tool.exe',
      command: 'C:\\Windows\\system32\\cmd.exe',
      args: ['/d', '/s', '/c', line],
    });
    assert.strictEqual(commandLineDefinition(line, 'win32', {}).command, 'cmd.exe');
  });
});

describe('what a launch runs: the timeout', () => {
  const cases: [Partial<AgentDefinition>, number, number][] = [
    [{}, 1800, 1800],
    [{ timeoutSeconds: 60 }, 1800, 60],
    [{ timeoutSeconds: 0 }, 1800, 0],
  ];
  for (const [def, fallback, expect] of cases) {
    it(`${JSON.stringify(def)} with a default of ${fallback} s: ${expect} s`, () =>
      assert.strictEqual(timeoutSecondsOf(def, fallback), expect));
  }
});
