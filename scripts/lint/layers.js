// The layers of src, checked on every `npm run lint` (docs/architecture.md explains them):
//   - the core (src/proc) is in folders, one concern each, in the order of CORE_LAYERS: a file may import its own
//     folder and the folders before it, never one after; core.ts and index.ts (the top) may import any folder, and no
//     folder imports them;
//   - the front ends (src/extension, src/cli) and the agents (src/agents) import the core through src/proc/index.ts
//     only, and the core imports none of them, nor `vscode`;
//   - no file of src imports itself back through any chain of imports (a circle), types included.
// Prints `file:line: problem` for each wrong import and exits 1 if there was any.
const { counted } = require('../counted');
const { importsOf, loadProgram, projectFiles, ts } = require('./program');

/** The core's folders, lowest first. */
const CORE_LAYERS = [
  'platform',
  'identity',
  'cgroup',
  'records',
  'members',
  'kill',
  'spawn',
  'pty',
  'terminals',
  'hostChildren',
  'tracking',
  'budget',
  'sweep',
  'owner',
];
/** The core's top: the composition root and the one entry of the front ends. */
const CORE_TOP = ['src/proc/core.ts', 'src/proc/index.ts'];
const CORE_ENTRY = 'src/proc/index.ts';
/** What each part of src may import besides itself: the core nothing, the agents the core, the front ends both. */
const SRC_PARTS = { proc: [], agents: ['proc'], cli: ['proc', 'agents'], extension: ['proc', 'agents'] };

/** Where a file of src/proc sits: its layer's index in CORE_LAYERS, 'top', or undefined for a file in no layer. */
function coreLevel(file) {
  if (CORE_TOP.includes(file)) return 'top';
  const m = /^src\/proc\/([^/]+)\//.exec(file);
  const at = m ? CORE_LAYERS.indexOf(m[1]) : -1;
  return at >= 0 ? at : undefined;
}

function srcPart(file) {
  return /^src\/([^/]+)\//.exec(file)?.[1];
}

/** What is wrong with `from` importing `imp`, or undefined. */
function importProblem(from, imp) {
  const fromPart = srcPart(from);
  if (fromPart === 'proc' && (imp.specifier === 'vscode' || imp.specifier.startsWith('vscode/'))) return 'the core never imports vscode';
  if (!imp.file || !imp.file.startsWith('src/')) return undefined;
  const toPart = srcPart(imp.file);
  if (toPart !== fromPart && !(SRC_PARTS[fromPart] ?? []).includes(toPart))
    return `src/${fromPart} may not import src/${toPart} (${imp.file})`;
  if (toPart !== 'proc') return undefined;
  if (fromPart !== 'proc') return imp.file === CORE_ENTRY ? undefined : `the core is imported through ${CORE_ENTRY} only, not ${imp.file}`;
  const [a, b] = [coreLevel(from), coreLevel(imp.file)];
  if (a === 'top' || b === undefined) return undefined; // a file in no layer is reported once, as itself
  if (b === 'top') return `a layer may not import the core's top (${imp.file})`;
  if (b > a) return `${CORE_LAYERS[a]}/ may not import ${CORE_LAYERS[b]}/ (${imp.file}): the layers are ${CORE_LAYERS.join(' < ')}`;
  return undefined;
}

/** Strongly connected components of more than one file (or a file importing itself): Tarjan's algorithm. */
function circles(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const connect = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? new Set()).has(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  return found;
}

function main() {
  const program = loadProgram();
  const problems = [];
  const graph = new Map();
  for (const [file, sf] of projectFiles(program)) {
    if (!file.startsWith('src/')) continue;
    if (srcPart(file) === 'proc' && coreLevel(file) === undefined) {
      problems.push(
        `${file}:1: a core file belongs in one of the layer folders (${CORE_LAYERS.join(', ')}) or is one of ${CORE_TOP.join(', ')}`,
      );
    }
    const edges = new Set();
    for (const imp of importsOf(program, sf)) {
      const problem = importProblem(file, imp);
      if (problem) problems.push(`${file}:${imp.line}: ${problem}`);
      if (imp.file?.startsWith('src/')) edges.add(imp.file);
    }
    graph.set(file, edges);
    if (file === CORE_ENTRY) {
      sf.forEachChild((node) => {
        if (ts.isExportDeclaration(node) && !node.exportClause) {
          const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
          problems.push(`${file}:${line}: the core's entry exports by name, not with export *`);
        }
      });
    }
  }
  for (const circle of circles(graph)) problems.push(`${circle[0]}:1: an import circle through ${circle.join(', ')}`);
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error(`layers: ${counted(problems.length, 'problem')}`);
    process.exit(1);
  }
}

main();
